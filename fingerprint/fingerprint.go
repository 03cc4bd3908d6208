// Package fingerprint turns a failure record into a defect identity: one
// defect, one fingerprint. It is pure (no I/O) and fast enough to run on
// every record of a busy log.
//
// A fingerprint is versioned ("v2:" + 16 hex digits). Older versions of
// the same input are returned as aliases, so state written by an older
// release — including the-loop's own self-diagnosis.json, whose
// fingerprints are Legacy's — keeps matching after an upgrade.
package fingerprint

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Version prefixes every current fingerprint.
const Version = "v2"

// Input is one failure record.
type Input struct {
	Event  string         // the record's "event" field, e.g. "dispatch.failed"
	Error  string         // the record's "error" text ("" when absent); may be multi-line
	Fields map[string]any // the whole decoded record (enum fields for the no-error fallback)
}

// Result is a record's defect identity.
type Result struct {
	Fingerprint string   // current version, e.g. "v2:0123456789abcdef"
	Template    string   // masked text a human can read
	Aliases     []string // older versions' fingerprints for the same input, incl. Legacy
}

// enumFields name a record without error text. They are allow-listed
// because other fields (ts, ids, counters) vary per occurrence.
var enumFields = []string{"source", "gh_event", "harness", "via", "exit_code", "will_retry"}

// Compute fingerprints a record with no operator rules.
func Compute(in Input) Result { return defaultFingerprinter.Compute(in) }

var defaultFingerprinter = &Fingerprinter{}

// Template returns the human-readable masked text for a record: the
// normalized error, or, when there is none, the allow-listed enum fields.
func Template(in Input) string {
	if strings.TrimSpace(in.Error) != "" {
		return Normalize(in.Error)
	}
	return fieldsTemplate(in.Fields)
}

// fieldsTemplate renders the allow-listed enum fields as "k=v k=v", sorted
// by key so the order of the decoded map cannot matter.
func fieldsTemplate(fields map[string]any) string {
	var parts []string
	for _, k := range enumFields {
		v, ok := fields[k]
		if !ok || v == nil {
			continue
		}
		parts = append(parts, k+"="+enumValue(v))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// enumValue formats a decoded JSON scalar; JSON numbers decode as float64,
// and 137 must print as "137", not "1.37e+02". Long free text is masked
// like an error would be, so a misused enum field cannot split a defect.
func enumValue(v any) string {
	switch x := v.(type) {
	case string:
		if len(x) > 64 || strings.ContainsAny(x, " \t\n") {
			return Normalize(x)
		}
		return x
	case bool:
		return strconv.FormatBool(x)
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return strconv.FormatInt(int64(x), 10)
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	default:
		return fmt.Sprintf("%T", v) // structured values are not enums
	}
}

// v2Fingerprint hashes the event and template. The event is part of the
// identity: the same text under two events is two defects.
func v2Fingerprint(event, template string) string {
	return Version + ":" + sha16(Version+"\n"+event+"\n"+template)
}
