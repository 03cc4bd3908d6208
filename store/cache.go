package store

import (
	"os"
)

// Cache keeps the state a long-running process (a watcher) last read or
// wrote, so its next scan neither reads nor parses the file when nobody has
// written it since: the file's identity (device, inode, size, mtime, ctime),
// checked under the lock, is the one this process last saw. Any other writer
// (a cron `run`, the-loop itself) changes it and forces a reload. One store
// at a time may use a Cache (a watcher's scans are sequential).
type Cache struct {
	path  string
	id    fileIdentity
	state *State
	// ahead: state holds checkpointed changes the file does not (Store.Checkpoint).
	ahead bool
}

// Open is store.Open for a writable store that reuses the cached state when
// the file is unchanged.
func (c *Cache) Open(path string) (*Store, error) {
	return open(path, false, c)
}

// reuse returns the cached state for path if the file on disk is still the
// one it was read from or written as.
func (c *Cache) reuse(path string) (*State, bool) {
	if c == nil || c.state == nil || c.path != path || !c.id.known() {
		return nil, false
	}
	fi, err := os.Stat(path)
	if err != nil || identify(fi) != c.id {
		c.forget()
		return nil, false
	}
	return c.state, true
}

// remember records that st is what the file at path with identity id holds.
func (c *Cache) remember(path string, id fileIdentity, st *State) {
	if c == nil {
		return
	}
	if !id.known() {
		c.forget()
		return
	}
	c.path, c.id, c.state, c.ahead = path, id, st, false
}

func (c *Cache) forget() {
	if c != nil {
		*c = Cache{}
	}
}
