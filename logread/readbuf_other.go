//go:build !linux

package logread

// NewReadBuffer is a reader's buffer (ReadConfig.Buffer) for a long-lived
// owner; outside Linux, an ordinary slice.
func NewReadBuffer[T any](owner *T) []byte { return make([]byte, ReadBufferSize(0)) }
