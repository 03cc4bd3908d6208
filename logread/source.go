package logread

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync/atomic"

	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/store"
)

// LogSource is what one scan reads: the live event log from the persisted
// cursor and, after a rotation, first the rest of the rotated-away file. A
// pipe (--log - or /dev/stdin) is read once from where it stands, with no
// cursor: it cannot be resumed.
type LogSource struct {
	Warning  string // why reading restarts from the beginning, if it does
	segments []segment
	current  atomic.Int32 // index of the segment being (or last) read
	stdin    bool
}

// segment is one file to read from start to its end.
type segment struct {
	file     *os.File
	name     string
	start    int64
	line     int64
	size     int64         // at open time: for progress only
	cursor   *store.Cursor // identity persisted when the scan ends in it; nil for a pipe
	complete bool          // rotated away: no writer will finish a last partial line
}

// LogMissingError says the event log does not exist (yet): the-loop has
// not written one, or a rotation is between its rename and the new file.
// Nothing is wrong with the setup: a cron run has nothing to read, and a
// watcher waits for the file.
type LogMissingError struct{ Path string }

func (e *LogMissingError) Error() string { return "event log " + e.Path + " does not exist yet" }

// OpenLog opens path and decides, from the previous cursor, what to read.
// Close it when the scan is over.
func OpenLog(path string, prev *store.Cursor) (*LogSource, error) {
	var f *os.File
	ls := &LogSource{}
	if path == "-" {
		f, ls.stdin = os.Stdin, true
	} else {
		var err error
		if f, err = os.Open(path); errors.Is(err, fs.ErrNotExist) {
			return nil, &LogMissingError{Path: path}
		} else if err != nil {
			return nil, fmt.Errorf("event log %s: %w", path, err)
		}
	}
	fi, err := f.Stat()
	if err != nil {
		ls.closeFile(f)
		return nil, fmt.Errorf("event log %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		// A pipe or a device: read what comes, remember nothing.
		ls.segments = []segment{{file: f, name: path, complete: true}}
		return ls, nil
	}
	pos, err := store.Resume(f, path, prev)
	if err != nil {
		ls.closeFile(f)
		return nil, err
	}
	ls.Warning = pos.Warning
	if pos.Rotated != nil { // the rest of the file the cursor was in, then those rotated after it
		for _, rot := range append([]store.Rotated{*pos.Rotated}, pos.Between...) {
			old, err := os.Open(rot.Path)
			if err != nil {
				ls.Close()
				ls.closeFile(f)
				return nil, fmt.Errorf("rotated event log %s: %w", rot.Path, err)
			}
			cur := rot.Cursor
			ls.segments = append(ls.segments, segment{file: old, name: rot.Path, start: rot.Offset, line: rot.Line,
				size: rot.Size, cursor: &cur, complete: true})
		}
	}
	cur := pos.Cursor
	ls.segments = append(ls.segments, segment{file: f, name: path, start: pos.Offset, line: pos.Line,
		size: fi.Size(), cursor: &cur})
	return ls, nil
}

// Close closes every file the source opened.
func (ls *LogSource) Close() error {
	var first error
	for _, s := range ls.segments {
		if err := ls.closeFile(s.file); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (ls *LogSource) closeFile(f *os.File) error {
	if ls.stdin && f == os.Stdin {
		return nil
	}
	return f.Close()
}

// Start is where reading begins in the first file (for messages).
func (ls *LogSource) Start() int64 { return ls.segments[0].start }

// Backlog is how many bytes there are to read, as of opening; 0 for a pipe,
// whose length is unknown.
func (ls *LogSource) Backlog() int64 {
	var n int64
	for _, s := range ls.segments {
		if s.cursor != nil && s.size > s.start {
			n += s.size - s.start
		}
	}
	return n
}

// Rotated names the rotated-away file finished first, or "" when none.
func (ls *LogSource) Rotated() string {
	if len(ls.segments) > 1 {
		return ls.segments[0].name
	}
	return ""
}

// Read returns a source streaming every segment's records in order: cfg is
// applied to each (its Source, Name, Start and StartLine are set per file).
// stats.End and stats.EndLine refer to the segment being read; Cursor turns
// them into the cursor to persist.
func (ls *LogSource) Read(cfg ReadConfig, stats *ReadStats) pipeline.Source[pipeline.Record] {
	return func(ctx context.Context, out chan<- pipeline.Record) error {
		for i, s := range ls.segments {
			if i > 0 && stopped(cfg.Stop) {
				return nil // the cursor stays in the rotated file; the next scan resumes there
			}
			if _, err := s.file.Seek(s.start, io.SeekStart); err != nil && s.cursor != nil {
				return fmt.Errorf("event log %s: %w", s.name, err)
			}
			ls.current.Store(int32(i))
			c := cfg
			c.Source, c.Name, c.Start, c.StartLine = s.file, s.name, s.start, s.line
			c.FinalPartialLine = cfg.FinalPartialLine || s.complete
			if err := NewRead(c, stats)(ctx, out); err != nil {
				return err
			}
		}
		return nil
	}
}

// Cursor is where the next scan starts, once the pipeline fed by Read has
// finished without error: the identity of the file reading ended in, at the
// offset just after the last line consumed. Nil for a pipe.
func (ls *LogSource) Cursor(stats *ReadStats) *store.Cursor {
	s := ls.segments[ls.current.Load()]
	if s.cursor == nil {
		return nil
	}
	c := *s.cursor
	c.Offset, c.Line = stats.End.Load(), stats.EndLine.Load()
	return &c
}

// Persistent reports whether the log can be resumed (a regular file): only
// then do diagnosis.* events get appended to it.
func (ls *LogSource) Persistent() bool { return ls.segments[len(ls.segments)-1].cursor != nil }

func stopped(stop <-chan struct{}) bool {
	if stop == nil {
		return false
	}
	select {
	case <-stop:
		return true
	default:
		return false
	}
}
