//go:build !linux

package sandbox

// Available reports that only Linux has Landlock.
func Available() (ok bool, detail string) {
	return false, "Landlock is Linux's: the agent is confined by its CLI's own rules only"
}

// Harden does nothing outside Linux.
func Harden() error { return nil }

// Main is never started outside Linux (the supervisor is Linux's).
func Main(string) int { return 126 }
