// Package fingerprint turns a failure record into a defect identity: one
// defect, one fingerprint. It is pure (no I/O) and fast enough to run on
// every record of a busy log.
//
// Compute gives the current (v4) fingerprint, "v4:" + 16 hex digits of
// sha1("v4\n" + event + "\n" + template), the event "" when the template is
// specific (identityEvent); the template, the error text with what varies
// between occurrences of one defect masked (Mask); and, as aliases, what
// the older versions give the same record (v1: Legacy, the-loop's own; v3;
// v2), so state written by an older release keeps matching after an
// upgrade. One file per version (v1.go, v2.go frozen, v3*.go, v4.go);
// testdata/golden-*.jsonl pin each, record by record, and
// testdata/tokens.tsv lists what each keeps and masks, known limits
// included. Stack traces reduce to their exception and top in-app frame
// (stack.go); a record without error text is its event and allow-listed
// enum fields.
package fingerprint

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Version prefixes every current fingerprint.
const Version = "v4"

// versionV3 and versionV2 are the previous versions, still computed as
// aliases exactly as their releases computed them.
const (
	versionV3 = "v3"
	versionV2 = "v2"
)

// Input is one failure record.
type Input struct {
	Event  string // the record's "event" field, e.g. "dispatch.failed"
	Error  string // the record's "error" text ("" when absent); may be multi-line
	Fields Fields // the whole decoded record (enum fields for the no-error fallback); may be nil
	// Identity are byte ranges [start, end) of Error, sorted and not
	// overlapping, that repeat the record's own identity (its work item,
	// branch, actor, host...): volatile across occurrences of one defect, so
	// v3 masks them before normalizing. Ranges out of bounds are ignored.
	Identity [][2]int
	// Values are the raw values of the record's identity fields (its work
	// item, branch, tmux target, host...): v4 masks a token of the error
	// text that holds one, glued to other parts ("issue-1921-x" on work
	// item #1921). v3 (an alias) ignores them.
	Values []string
}

// Fields are a decoded record's fields by key: nil for an absent key. The
// pipeline's records satisfy it without fingerprint depending on them.
type Fields interface{ Get(key string) any }

// MapFields are Fields held in a map.
type MapFields map[string]any

// Get returns the value of key, or nil when absent.
func (m MapFields) Get(key string) any { return m[key] }

// field returns the record's value of key, or nil when absent.
func (in Input) field(key string) any {
	if in.Fields == nil {
		return nil
	}
	return in.Fields.Get(key)
}

// Result is a record's defect identity.
type Result struct {
	Fingerprint string   // current version, e.g. "v4:0123456789abcdef"
	Template    string   // masked text a human can read
	Aliases     []string // older versions' fingerprints for the same input: Legacy, then v3, then v2
}

// enumFields name a record without error text. They are allow-listed
// because other fields (ts, ids, counters) vary per occurrence.
var enumFields = []string{"source", "gh_event", "harness", "via", "exit_code", "will_retry"}

// Compute fingerprints a record with no operator rules.
func Compute(in Input) Result { return defaultFingerprinter.Compute(in) }

var defaultFingerprinter = &Fingerprinter{}

// fieldsTemplate renders the allow-listed enum fields as "k=v k=v", sorted
// by key so the order of the decoded fields cannot matter.
func fieldsTemplate(in Input) string {
	var parts []string
	for _, k := range enumFields {
		v := in.field(k)
		if v == nil {
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

// versionedFingerprint hashes the event and template under a version. The
// event is part of the identity (the same text under two events is two
// defects) in v2 and v3; v4 passes "" for a specific text (identityEvent).
func versionedFingerprint(version, event, template string) string {
	return version + ":" + sha16(version+"\n"+event+"\n"+template)
}
