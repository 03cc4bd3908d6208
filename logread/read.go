// Package logread is the read path: the event log and its rotation and
// cursor (LogSource), the reader and its prefilter, decoding onto the
// canonical record (Format), the candidate policy (Policy) and the healing
// correlation (Healing, HealFilter). The pipeline consumes a Source of
// records and the Policy; stages keeps only stages.
package logread

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
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
	// Prefilter). Replay of the read stage turns it off to show every record.
	Prefilter bool
	// Policy and Format say what a candidate is and how the log writes
	// one (default: DefaultPolicy, TheLoop).
	Policy *Policy
	Format *Format
	// Heal, when set, also decodes the success lines that can heal a retried
	// failure read before them (see HealFilter).
	Heal *HealFilter
	// FinalPartialLine treats a last line without a newline as complete
	// (fixtures). Otherwise it is left unread: a writer may be mid-line.
	FinalPartialLine bool
	// Stop, when closed, ends the read at the next line boundary (soft stop).
	Stop <-chan struct{}
	// Buffer, when big enough (ReadBufferSize), is used instead of a new
	// one: a watcher passes the same to every scan, so a small rescan does
	// not allocate and fault in 2 MiB each time. Nothing read keeps a
	// reference to it.
	Buffer []byte
}

// ReadBufferSize is the buffer a reader with this line cap needs.
func ReadBufferSize(maxLine int) int {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	return maxLine + 1 + readChunk
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
	Examples [4]string    // the earliest corrupt lines' reasons, in line order, for the summary

	exampleMu    sync.Mutex // the reader and the decode stage both report
	exampleLines [4]int64   // 0: empty
}

// AddCorrupt counts a corrupt line and keeps the reasons of the earliest:
// the reader and the decode stage report in no set order.
func (s *ReadStats) AddCorrupt(line int64, reason string) {
	s.Corrupt.Add(1)
	s.exampleMu.Lock()
	defer s.exampleMu.Unlock()
	at := len(s.Examples)
	for at > 0 && (s.exampleLines[at-1] == 0 || s.exampleLines[at-1] > line) {
		at--
	}
	if at == len(s.Examples) {
		return
	}
	copy(s.Examples[at+1:], s.Examples[at:])
	copy(s.exampleLines[at+1:], s.exampleLines[at:])
	s.Examples[at], s.exampleLines[at] = CorruptError{line, reason}.Error(), line
}

// CorruptError describes why a line was skipped.
type CorruptError struct {
	Line   int64
	Reason string
}

func (e CorruptError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Reason) }

// readChunk is how much one read asks for: big reads keep the system-call
// count low, and the buffer stays the same size for the whole log.
const readChunk = 1 << 20

// NewRead returns a source that streams records from cfg.Source in constant
// memory (one buffer of MaxLine + 1 MiB, whatever the log's size). Corrupt
// lines are counted and skipped. Records carry their line undecoded (Raw):
// a NewDecode stage decodes them on a goroutine of its own.
//
// With Prefilter, lines are checked at two depths. A line that could be a
// candidate (Prefilter) is validated and decoded in full: a corrupt one
// is always detected and counted. A line the prefilter proves is not a
// candidate is only checked for shape — it must start with '{', end with '}',
// be valid UTF-8 and fit the line cap — by utf8.Valid over the span between
// the prefilter's hits and a look at each line's ends. The trade-off: such a
// line that is well shaped but bad inside (a trailing comma, single quotes,
// two writes run together) is skipped without being counted as corrupt.
// Counting those would mean decoding every line, several times the cost of
// the whole scan, to report lines that could never be candidates anyway.
// Without Prefilter (replay of the read stage) every line is decoded.
func NewRead(cfg ReadConfig, stats *ReadStats) pipeline.Source[pipeline.Record] {
	if cfg.MaxLine <= 0 {
		cfg.MaxLine = DefaultMaxLine
	}
	if cfg.Policy == nil {
		cfg.Policy = &defaultPolicy
	}
	if cfg.Format == nil {
		cfg.Format = TheLoop()
	}
	pf := NewPrefilter(*cfg.Policy, cfg.Format)
	return func(ctx context.Context, out chan<- pipeline.Record) error {
		buf := cfg.Buffer
		if len(buf) < ReadBufferSize(cfg.MaxLine) {
			buf = make([]byte, ReadBufferSize(cfg.MaxLine))
		}
		r := &reader{cfg: cfg, stats: stats, out: out, ctx: ctx,
			buf: buf, offset: cfg.Start, line: cfg.StartLine, pf: pf,
			publishedLine: cfg.StartLine, publishedOffset: cfg.Start}
		r.publish()
		return r.run()
	}
}

type reader struct {
	cfg   ReadConfig
	stats *ReadStats
	out   chan<- pipeline.Record
	// batch holds the records of the region being scanned until its end
	// (flush): sent one at a time as found, each woke the decode stage and
	// every stage after it, one goroutine hand-off per record per stage.
	batch []pipeline.Record
	ctx   context.Context
	buf   []byte
	// offset and line are the file offset of buf[0] once a region is
	// consumed, and the number of lines before it.
	offset, line int64
	pf           *Prefilter
	// The prefilter's needles in the region being read, and in a line
	// checked on its own (checkLine).
	candidates, lineCheck region
	tuned                 bool
	// What publish has told stats so far: the counters are shared with
	// other goroutines (progress, metrics), so they are updated once per
	// region, not once per line.
	publishedLine, publishedOffset, skipped int64
}

func (r *reader) run() error {
	filled := 0   // buf[:filled] holds bytes read and not yet consumed
	overlong := 0 // > 0: inside a line over the cap, this many bytes dropped so far
	eof := false
	for {
		if stopped(r.cfg.Stop) {
			return nil
		}
		if err := r.ctx.Err(); err != nil {
			return err
		}
		if !eof {
			n, err := r.cfg.Source.Read(r.buf[filled:min(len(r.buf), filled+readChunk)])
			filled += n
			switch {
			case errors.Is(err, io.EOF):
				eof = true
			case err != nil:
				return fmt.Errorf("read %s at byte %d: %w", r.cfg.Name, r.offset+int64(filled), err)
			case n == 0:
				continue
			}
		}
		data := r.buf[:filled]
		if overlong > 0 {
			// Drop the rest of a line over the cap without holding it.
			nl := bytes.IndexByte(data, '\n')
			if nl < 0 && !eof {
				overlong += filled
				filled = 0
				continue
			}
			end := nl + 1
			if nl < 0 {
				end = filled
			}
			r.consumeOverlong(int64(overlong + end))
			overlong = 0
			filled = copy(r.buf, data[end:])
			continue
		}
		complete := bytes.LastIndexByte(data, '\n') + 1
		if err := r.region(data[:complete]); err != nil {
			return err
		}
		tail := data[complete:]
		switch {
		case len(tail) > r.cfg.MaxLine+1:
			// Longer than the cap and still going: count it once it ends.
			overlong, filled = len(tail), 0
		case eof && len(tail) > 0 && r.cfg.FinalPartialLine:
			if err := r.exactLine(tail, int64(len(tail)), r.cfg.Heal.wants(tail)); err != nil {
				return err
			}
			if err := r.flush(); err != nil {
				return err
			}
			r.publish()
			return nil
		case eof:
			r.stats.Pending.Store(int64(len(tail)))
			return nil
		default:
			filled = copy(r.buf, tail)
		}
		if eof && overlong > 0 {
			r.consumeOverlong(int64(overlong))
			return nil
		}
	}
}

func (r *reader) consumeOverlong(size int64) {
	r.line++
	r.offset += size
	r.markCorrupt(fmt.Sprintf("longer than the %d-byte line cap", r.cfg.MaxLine))
	r.publish()
}

// maxBatch bounds the records a region holds back (batch): a log of
// nothing but failures has thousands in a region. A batch fits in the
// channel, so sending one stalls only when the decoder is a batch behind.
const maxBatch = pipeline.Capacity

// flush sends the records held back, in order.
func (r *reader) flush() error {
	for i, rec := range r.batch {
		if err := pipeline.Send(r.ctx, r.out, rec); err != nil {
			return err
		}
		r.batch[i] = pipeline.Record{} // the slice is reused: let the record go
	}
	r.batch = r.batch[:0]
	return nil
}

// publish brings the shared counters up to what has been consumed.
func (r *reader) publish() {
	r.stats.Lines.Add(r.line - r.publishedLine)
	r.stats.Bytes.Add(r.offset - r.publishedOffset)
	r.stats.Skipped.Add(r.skipped)
	r.publishedLine, r.publishedOffset, r.skipped = r.line, r.offset, 0
	r.stats.End.Store(r.offset)
	r.stats.EndLine.Store(r.line)
}

// region consumes b, whole lines each ending in '\n'.
func (r *reader) region(b []byte) error {
	defer r.publish()
	if err := r.lines(b); err != nil {
		return err
	}
	return r.flush()
}

// lines consumes the lines of region b.
func (r *reader) lines(b []byte) error {
	if r.cfg.Prefilter {
		if !r.tuned { // the finders learn which bytes are rare in this log
			sample := b[:min(len(b), tuneSample)]
			r.pf.tune(byteFreq(sample), len(sample))
			r.cfg.Heal.tune(byteFreq(sample), len(sample))
			r.tuned = true
		}
		r.candidates.reset(b, len(r.pf.needles))
	}
	for i := 0; i < len(b); {
		next, heal := i, healUnknown
		if r.cfg.Prefilter {
			if next, heal = r.skip(b, i); next == len(b) {
				break
			}
		}
		e := next + bytes.IndexByte(b[next:], '\n')
		if heal == healUnknown {
			heal = healNo
			if r.cfg.Heal.wants(b[next:e]) {
				heal = healYes
			}
		}
		if err := r.exactLine(b[next:e], int64(e+1-next), heal == healYes); err != nil {
			return err
		}
		i = e + 1
	}
	return nil
}

// Whether the heal filter wants a line decoded, if it has been asked.
const (
	healUnknown = iota
	healNo
	healYes
)

// tuneSample is how much of the log the finders look at to choose the
// bytes they search for.
const tuneSample = 64 << 10

// skip consumes the lines from i on that need no exact check, up to the
// first that does, and returns where it starts (or len(b)) and whether the
// heal filter wants it. That is a line the prefilter may pass (decoded
// anyway: not asked), one not shaped like a JSON object of valid UTF-8
// within the cap (see NewRead; not asked yet), or a success the heal filter
// wants decoded.
func (r *reader) skip(b []byte, i int) (int, int) {
	c := r.pf.candidate(&r.candidates, i)
	span := b[i:c]
	valid := utf8.Valid(span)
	at, lines := 0, int64(0)
	defer func() {
		r.line += lines
		r.skipped += lines
		r.offset += int64(at)
	}()
	for at < len(span) {
		e := bytes.IndexByte(span[at:], '\n')
		line := span[at : at+e]
		if e <= 0 || line[0] != '{' || line[e-1] != '}' || e > r.cfg.MaxLine || (!valid && !utf8.Valid(line)) {
			return i + at, healUnknown
		}
		if r.cfg.Heal.wants(line) {
			return i + at, healYes
		}
		lines++
		at += e + 1
	}
	return c, healNo
}

// exactLine consumes one line (raw without its '\n'; size with it); heal
// says the heal filter wants it decoded.
func (r *reader) exactLine(raw []byte, size int64, heal bool) error {
	r.line++
	start := r.offset
	r.offset += size
	line := trimNewline(raw)
	var pf *Prefilter
	if r.cfg.Prefilter && !heal {
		pf = r.pf
	}
	decode, reason := checkLine(line, size, r.cfg.MaxLine, pf, &r.lineCheck)
	switch {
	case reason != "":
		r.markCorrupt(reason)
		return nil
	case !decode:
		r.skipped++
		return nil
	}
	r.cfg.Heal.noteRaw(line)
	rec := pipeline.Record{Raw: string(line)} // a copy: the buffer is reused
	rec.Line, rec.Offset, rec.End = r.line, start, r.offset
	r.batch = append(r.batch, rec)
	if len(r.batch) >= maxBatch {
		return r.flush()
	}
	return nil
}

func (r *reader) markCorrupt(reason string) { r.stats.AddCorrupt(r.line, reason) }

func trimNewline(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}

// checkLine runs the checks every line gets and says whether it must be
// decoded: not when the prefilter proved it cannot be a candidate (then only
// its shape is checked; see NewRead). A non-empty reason means corrupt.
func checkLine(raw []byte, size int64, max int, prefilter *Prefilter, scratch *region) (decode bool, reason string) {
	if size > int64(max)+1 {
		return false, fmt.Sprintf("longer than the %d-byte line cap", max)
	}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		return false, "blank line"
	}
	if trimmed[0] != '{' {
		return false, "not a JSON object"
	}
	if !utf8.Valid(raw) {
		return false, "invalid UTF-8"
	}
	if prefilter != nil && !prefilter.mayIn(scratch, raw) {
		if trimmed[len(trimmed)-1] != '}' {
			return false, "truncated: no closing brace"
		}
		return false, ""
	}
	return true, ""
}

// DecodeObject decodes one line known to be a UTF-8 object candidate.
func DecodeObject(raw []byte) (pipeline.Fields, string) { return decodeLine(string(raw)) }

// decodeLine is DecodeObject for a line already copied into a string, whose
// bytes the fields then share.
func decodeLine(s string) (pipeline.Fields, string) {
	if fields, ok := decodeFlat(s); ok {
		return fields, ""
	}
	// The rare line the fast path leaves (nested values, odd escapes):
	// encoding/json decides, and its map, sorted, becomes the fields.
	var fields map[string]any
	if err := json.Unmarshal([]byte(s), &fields); err != nil {
		return nil, "bad JSON: " + err.Error()
	}
	return pipeline.FieldsOf(fields), ""
}

// NewDecode decodes the lines the reader passes on undecoded (Raw),
// on a goroutine of its own so JSON decoding does not slow the reader, maps
// them onto the canonical record (f; nil: the-loop's) and counts the ones
// that are not JSON as corrupt.
func NewDecode(f *Format, stats *ReadStats) pipeline.Stage[pipeline.Record, pipeline.Record] {
	return pipeline.Map(func(_ context.Context, r pipeline.Record) (pipeline.Record, bool, error) {
		if r.Raw == "" {
			return r, true, nil
		}
		fields, reason := decodeLine(r.Raw)
		if reason != "" {
			stats.AddCorrupt(r.Line, reason)
			return r, false, nil
		}
		r.Fields, r.Raw = f.Canonical(fields), ""
		return r, true, nil
	})
}
