package agent

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/the-loop/the-loop-diagnose/pipeline"
)

// verdicts are the verdicts an answer may carry; others are dropped
// rather than failing an otherwise useful diagnosis.
var verdicts = map[string]bool{"bug": true, "environment": true, "transient": true, "inconclusive": true}

// envelope is the JSON object claude and cursor-agent print with
// --output-format json.
type envelope struct {
	Type    string  `json:"type"`
	Subtype string  `json:"subtype"`
	IsError bool    `json:"is_error"`
	Result  *string `json:"result"`
	// claude reports what the run cost; cursor-agent does not.
	TotalCostUSD *float64 `json:"total_cost_usd"`
	Usage        *struct {
		InputTokens   int64 `json:"input_tokens"`
		CacheCreation int64 `json:"cache_creation_input_tokens"`
		CacheRead     int64 `json:"cache_read_input_tokens"`
		OutputTokens  int64 `json:"output_tokens"`
	} `json:"usage"`
}

// cost is what the envelope says the run cost, or nil when it says nothing.
func (e envelope) cost() *pipeline.Cost {
	if e.TotalCostUSD == nil && e.Usage == nil {
		return nil
	}
	c := &pipeline.Cost{}
	if e.TotalCostUSD != nil {
		c.Add(*e.TotalCostUSD, 0, 0)
	}
	if u := e.Usage; u != nil {
		c.Add(0, max(u.InputTokens, 0)+max(u.CacheCreation, 0)+max(u.CacheRead, 0), u.OutputTokens)
	}
	return c
}

// reportedError is the CLI saying, in its own envelope, that the run
// failed (its API answered 529, its login expired, its turns ran out):
// the agent's failure, not an answer about the dossier.
type reportedError struct{ msg string }

func (e *reportedError) Error() string { return e.msg }

// envelopeAnswer extracts the answer from a harness's stdout, and what the
// run cost when the harness says (even for a failed run: it was spent).
func envelopeAnswer(harness string, stdout []byte) (*pipeline.Answer, *pipeline.Cost, error) {
	result, cost, err := unwrapEnvelope(stdout)
	switch {
	case err == nil:
		a, err := ParseAnswer([]byte(result))
		return a, cost, err
	case harness == HarnessClaude || harness == HarnessCursor || !errors.Is(err, errAgentNoEnvelope):
		return nil, cost, err
	}
	// An operator's command without an envelope: its stdout is the answer.
	// (One that is a claude invocation of its own is unwrapped above.)
	a, err := ParseAnswer(stdout)
	return a, nil, err
}

var errAgentNoEnvelope = errors.New("agent output is not a JSON result envelope")

// unwrapEnvelope returns the envelope's result string and what the
// run cost.
func unwrapEnvelope(stdout []byte) (string, *pipeline.Cost, error) {
	var env envelope
	trimmed := bytes.TrimSpace(stdout)
	if err := json.Unmarshal(trimmed, &env); err != nil || env.Type != "result" {
		return "", nil, fmt.Errorf("%w: %s", errAgentNoEnvelope, quoteExcerpt(trimmed, 200))
	}
	if env.IsError {
		msg := ""
		if env.Result != nil {
			msg = *env.Result
		}
		return "", env.cost(), &reportedError{fmt.Sprintf("agent reported an error (%s): %s", cmp.Or(env.Subtype, "no subtype"), quoteExcerpt([]byte(msg), 200))}
	}
	if env.Result == nil || strings.TrimSpace(*env.Result) == "" {
		return "", env.cost(), fmt.Errorf("agent returned an empty result (%s)", cmp.Or(env.Subtype, "no subtype"))
	}
	return *env.Result, env.cost(), nil
}

// maxRescans bounds how often the object scan backs up after an
// unbalanced or invalid brace region, keeping ParseAnswer linear in practice
// on hostile input.
const maxRescans = 32

// ParseAnswer finds the agent's answer in its output: the first balanced
// top-level JSON object that decodes into the answer shape with a non-empty
// title. Bare, fenced (```json) and
// prose-wrapped objects are accepted. The error says why nothing was found,
// quoting at most a short excerpt of the output.
func ParseAnswer(out []byte) (*pipeline.Answer, error) {
	sawObject := false
	var firstReason string
	for pos, rescans := 0, 0; pos < len(out) && rescans <= maxRescans; {
		open, end := nextObject(out, pos)
		if open < 0 {
			break
		}
		if end < 0 {
			// A stray '{' in prose swallowed the rest: look again after it.
			pos, rescans = open+1, rescans+1
			continue
		}
		a, reason, isJSON := decodeAnswer(out[open:end])
		if a != nil {
			return a, nil
		}
		if !isJSON {
			// Braces around prose, not JSON: an object may sit inside, and
			// only then is the region worth scanning again.
			if bytes.IndexByte(out[open+1:end], '{') >= 0 {
				pos, rescans = open+1, rescans+1
			} else {
				pos = end
			}
			continue
		}
		sawObject = true
		if firstReason == "" {
			firstReason = reason
		}
		pos = end
	}
	excerpt := quoteExcerpt(bytes.TrimSpace(out), 200)
	if !sawObject {
		return nil, fmt.Errorf("agent answer is not JSON: %s", excerpt)
	}
	return nil, fmt.Errorf("agent answer has no usable JSON object (%s): %s", firstReason, excerpt)
}

// nextObject returns the [open,end) span of the next balanced {...}
// region at or after pos, tracking JSON strings inside it so braces in
// strings do not count. open is -1 when there is no '{'; end is -1 when the
// region never closes.
func nextObject(out []byte, pos int) (open, end int) {
	open = bytes.IndexByte(out[pos:], '{')
	if open < 0 {
		return -1, -1
	}
	open += pos
	depth := 0
	inString, escaped := false, false
	for i := open; i < len(out); i++ {
		c := out[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return open, i + 1
			}
		}
	}
	return open, -1
}

// decodeAnswer decodes one candidate object, returning nil and a
// reason when it is not an answer; isJSON tells whether it was JSON at all.
func decodeAnswer(obj []byte) (a *pipeline.Answer, reason string, isJSON bool) {
	// The texts are decoded strictly by type (a title that is a number is no
	// answer); the verdict's fields leniently, each on its own: a malformed
	// verdict must cost the verdict, never the report.
	var s struct {
		Title        string          `json:"title"`
		Summary      string          `json:"summary"`
		RootCause    string          `json:"root_cause"`
		SuggestedFix string          `json:"suggested_fix"`
		Verdict      json.RawMessage `json:"verdict"`
		Confidence   json.RawMessage `json:"confidence"`
		Evidence     json.RawMessage `json:"evidence"`
	}
	if err := json.Unmarshal(obj, &s); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return nil, fmt.Sprintf("field %q has the wrong type", typeErr.Field), true
		}
		return nil, "invalid JSON", false
	}
	a = &pipeline.Answer{
		Title:        strings.TrimSpace(s.Title),
		Summary:      strings.TrimSpace(s.Summary),
		RootCause:    strings.TrimSpace(s.RootCause),
		SuggestedFix: strings.TrimSpace(s.SuggestedFix),
	}
	if a.Title == "" {
		return nil, "no title", true
	}
	// A title alone is an answer, as the-loop takes it (parse_findings):
	// the issue says what was not given. Raw output never is.
	a.Verdict, a.Confidence, a.Evidence = decodeVerdict(s.Verdict, s.Confidence, s.Evidence)
	return a, "", true
}

// decodeVerdict reads the verdict's fields. A verdict that is not one
// of the known words (or not a string) is "inconclusive"; a confidence that
// is not a JSON number from 0 to 1 is none; evidence that is not a list of
// strings is none. Each of these leaves the finding for a human (gate).
func decodeVerdict(verdict, confidence, evidence json.RawMessage) (string, *float64, []string) {
	v := ""
	if len(verdict) > 0 && string(verdict) != "null" {
		var word string
		if json.Unmarshal(verdict, &word) == nil && verdicts[strings.ToLower(strings.TrimSpace(word))] {
			v = strings.ToLower(strings.TrimSpace(word))
		} else {
			v = "inconclusive"
		}
	}
	var conf *float64
	var c float64
	if json.Unmarshal(confidence, &c) == nil && len(confidence) > 0 && confidence[0] != 'n' && c >= 0 && c <= 1 {
		conf = &c
	}
	var list, items []string
	if json.Unmarshal(evidence, &list) == nil {
		for _, e := range list {
			if e = strings.TrimSpace(e); e != "" {
				items = append(items, e)
			}
		}
	}
	return v, conf, items
}

// quoteExcerpt renders at most n runes of b as a quoted Go string, so
// control bytes and invalid UTF-8 from a broken agent stay inert in logs
// and reasons.
func quoteExcerpt(b []byte, n int) string {
	if len(b) == 0 {
		return `""`
	}
	cut, runes := 0, 0
	for cut < len(b) && runes < n {
		_, size := utf8.DecodeRune(b[cut:])
		cut += size
		runes++
	}
	q := fmt.Sprintf("%q", b[:cut])
	if cut < len(b) {
		q += fmt.Sprintf(" (%d more bytes)", len(b)-cut)
	}
	return q
}

// printable makes s one printable line for a failure reason: invalid
// UTF-8 replaced, line breaks and tabs made spaces, other controls dropped.
func printable(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(c rune) rune {
		if c == '\n' || c == '\t' {
			return ' '
		}
		if unicode.IsControl(c) {
			return -1
		}
		return c
	}, s)
}
