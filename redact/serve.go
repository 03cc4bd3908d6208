package redact

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// ServeJSONLines is the `redact` subcommand: every input line is one JSON
// string; each is scrubbed and written as one JSON string line, in order.
// A line that is not a JSON string is an error naming its line number.
// Output is flushed whenever the input has nothing more buffered, so the
// command works both in a pipeline and line by line over a pipe.
func ServeJSONLines(in io.Reader, out io.Writer, r *Redactor) error {
	br := bufio.NewReaderSize(in, 64*1024)
	bw := bufio.NewWriterSize(out, 64*1024)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false) // keep <redacted:...> readable
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadBytes('\n')
		if len(line) == 0 && errors.Is(err, io.EOF) {
			return bw.Flush()
		}
		if err != nil && !errors.Is(err, io.EOF) {
			_ = bw.Flush()
			return fmt.Errorf("redact: reading line %d: %w", lineNo, err)
		}
		text, perr := decodeJSONStringLine(line)
		if perr != nil {
			_ = bw.Flush()
			return fmt.Errorf("redact: line %d: %w", lineNo, perr)
		}
		if werr := enc.Encode(r.Scrub(text)); werr != nil {
			return fmt.Errorf("redact: writing line %d: %w", lineNo, werr)
		}
		if br.Buffered() == 0 || errors.Is(err, io.EOF) {
			if ferr := bw.Flush(); ferr != nil {
				return fmt.Errorf("redact: writing line %d: %w", lineNo, ferr)
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
	}
}

func decodeJSONStringLine(line []byte) (string, error) {
	line = bytes.TrimRight(line, "\r\n")
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 || trimmed[0] != '"' {
		return "", errors.New("not a JSON string")
	}
	var s string
	if err := json.Unmarshal(trimmed, &s); err != nil {
		return "", fmt.Errorf("not a JSON string: %w", err)
	}
	return s, nil
}
