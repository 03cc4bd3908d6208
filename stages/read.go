// Package stages holds one file per pipeline concern. Each stage is built by
// NewX(config) and is a pipeline.Stage or pipeline.Source; clocks, loggers,
// clients and state are fields, never globals.
package stages

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"unicode/utf8"

	"github.com/the-loop/the-loop-diagnose/pipeline"
)

// DefaultMaxLine is the longest line decoded; longer lines are corrupt.
const DefaultMaxLine = 1 << 20

// ReadConfig says what to read and how.
type ReadConfig struct {
	Source    io.Reader // positioned at StartOffset
	Name      string    // file name for messages
	StartLine int64     // lines already consumed before StartOffset
	Start     int64     // byte offset Source starts at
	MaxLine   int       // default DefaultMaxLine
	// Prefilter skips decoding lines that cannot be candidates (see
	// MayBeCandidate). Replay of the read stage turns it off to show every record.
	Prefilter bool
	// AlsoDecode lists byte patterns that make the prefilter decode a line
	// that is not a candidate: the success events the healing check needs.
	AlsoDecode [][]byte
	// FinalPartialLine treats a last line without a newline as complete
	// (fixtures). Otherwise it is left unread: a writer may be mid-line.
	FinalPartialLine bool
	// Stop, when closed, ends the read at the next line boundary (soft stop).
	Stop <-chan struct{}
}

// ReadStats counts what the reader saw. Fields are updated atomically while
// the reader runs and are final once the pipeline has returned.
type ReadStats struct {
	Lines    atomic.Int64 // complete lines consumed
	Corrupt  atomic.Int64 // lines skipped as corrupt
	Skipped  atomic.Int64 // lines the prefilter proved are not candidates
	Bytes    atomic.Int64 // bytes consumed
	End      atomic.Int64 // offset just after the last consumed line: the safe cursor
	EndLine  atomic.Int64 // line number of the last consumed line
	Pending  atomic.Int64 // bytes of an unfinished last line left for next time
	Examples [4]string    // first few corrupt-line reasons, for the summary
}

// CorruptError describes why a line was skipped.
type CorruptError struct {
	Line   int64
	Reason string
}

func (e CorruptError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Reason) }

// NewRead returns a source that streams records from cfg.Source, never
// holding more than one line. Corrupt lines are counted and skipped.
func NewRead(cfg ReadConfig, stats *ReadStats) pipeline.Source[pipeline.Record] {
	if cfg.MaxLine <= 0 {
		cfg.MaxLine = DefaultMaxLine
	}
	return func(ctx context.Context, out chan<- pipeline.Record) error {
		br := bufio.NewReaderSize(cfg.Source, 256<<10)
		offset, line := cfg.Start, cfg.StartLine
		stats.End.Store(offset)
		stats.EndLine.Store(line)
		var corrupt int
		for {
			if cfg.Stop != nil {
				select {
				case <-cfg.Stop:
					return nil
				default:
				}
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			raw, size, complete, err := readLine(br, cfg.MaxLine)
			if size == 0 && err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return fmt.Errorf("read %s at byte %d: %w", cfg.Name, offset, err)
			}
			if !complete && !cfg.FinalPartialLine && size <= int64(cfg.MaxLine) {
				// An unfinished last line: leave it for the next scan.
				stats.Pending.Store(size)
				return nil
			}
			line++
			start := offset
			offset += size
			stats.Lines.Add(1)
			stats.Bytes.Add(size)
			rec, reason := decodeLine(raw, size, cfg.MaxLine, cfg.Prefilter && !containsAny(raw, cfg.AlsoDecode))
			stats.End.Store(offset)
			stats.EndLine.Store(line)
			switch {
			case reason != "":
				if corrupt < len(stats.Examples) {
					stats.Examples[corrupt] = CorruptError{line, reason}.Error()
				}
				corrupt++
				stats.Corrupt.Add(1)
				continue
			case rec == nil:
				stats.Skipped.Add(1)
				continue
			}
			rec.Line, rec.Offset, rec.End = line, start, offset
			if err := pipeline.Send(ctx, out, *rec); err != nil {
				return err
			}
		}
	}
}

// readLine returns the next line without its newline, its size in bytes
// including the newline, and whether a newline ended it. Lines longer than
// max are consumed but not returned (raw is nil), so memory stays bounded.
func readLine(br *bufio.Reader, max int) (raw []byte, size int64, complete bool, err error) {
	var long []byte
	for {
		chunk, err := br.ReadSlice('\n')
		size += int64(len(chunk))
		if size <= int64(max)+1 {
			if long == nil && !errors.Is(err, bufio.ErrBufferFull) {
				raw = chunk // the common case: no copy
			} else {
				long = append(long, chunk...)
				raw = long
			}
		} else {
			raw, long = nil, nil
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err == nil {
			return trimNewline(raw), size, true, nil
		}
		return trimNewline(raw), size, false, err
	}
}

func trimNewline(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}

// decodeLine parses one line. It returns a corrupt reason, or a nil record
// when the prefilter proved the line cannot be a candidate.
func decodeLine(raw []byte, size int64, max int, prefilter bool) (*pipeline.Record, string) {
	if size > int64(max)+1 {
		return nil, fmt.Sprintf("longer than the %d-byte line cap", max)
	}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		return nil, "blank line"
	}
	if trimmed[0] != '{' {
		return nil, "not a JSON object"
	}
	if prefilter && !MayBeCandidate(raw) {
		// Not decoded, but a cut-off object is still caught cheaply.
		if trimmed[len(trimmed)-1] != '}' {
			return nil, "truncated JSON object"
		}
		return nil, ""
	}
	if !utf8.Valid(raw) {
		return nil, "invalid UTF-8"
	}
	var fields map[string]any
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, "bad JSON: " + err.Error()
	}
	return &pipeline.Record{Fields: fields}, ""
}

// MayBeCandidate is the byte-level prefilter. A candidate has level "error"
// or will_retry false, so its bytes hold `error` or `will_retry` — unless a
// JSON escape spells them, which a `\u` reveals. It never rejects a
// candidate; it may accept lines that are not.
func MayBeCandidate(line []byte) bool {
	return bytes.Contains(line, []byte("error")) ||
		bytes.Contains(line, []byte("will_retry")) ||
		bytes.Contains(line, []byte(`\u`))
}

func containsAny(line []byte, patterns [][]byte) bool {
	for _, p := range patterns {
		if bytes.Contains(line, p) {
			return true
		}
	}
	return false
}
