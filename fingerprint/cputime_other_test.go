//go:build !unix

package fingerprint

import "time"

func processCPUTime() (time.Duration, bool) { return 0, false }
