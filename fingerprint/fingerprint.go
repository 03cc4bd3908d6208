// Package fingerprint turns a failure record into a defect identity: one
// defect, one fingerprint. It is pure (no I/O) and fast enough to run on
// every record of a busy log.
//
// A fingerprint is versioned ("v4:" + 16 hex digits of
// sha1("v4\n" + event + "\n" + template), the event "" when the text is
// specific: identityEvent). Older versions of the same input are returned
// as aliases — v3 (the record's identity runs masked, NormalizeV3), v2 (the
// v2 normalizer, on the raw error text) and the-loop's own v1 (Legacy) — so
// state written by an older release, or by the-loop's self-diagnosis.json,
// keeps matching after an upgrade and no defect already filed is filed
// again. v4 adds maskData (data.go) before NormalizeV3 and identityEvent.
//
// v3 differs from v2 in two ways: the record's own identity (runs of the
// error text equal to values of its other fields, Input.Identity) is masked
// before normalizing, and the normalizer knows more of what varies across
// environments and library versions (NormalizeV3).
//
// The template is built by a single-pass tokenizer (no regexps), word by
// word, on general principles rather than per-system patterns:
//
//   - Kept (identity): words and code identifiers; error classes, errno and
//     signal names; numbers after status/code/exit/errno/signal/HTTP/error
//     (as a word or a key=), a three-digit status before a reason phrase
//     ("404 Not Found") or right after a URL; vendor codes (ORA-00942,
//     E11000); code names with digits (int64, sha256, utf8, ipv6); device
//     names with one trailing digit (eth0, sda1); enum constants as values
//     (action=ACTION_UP); single-token quoted names (fields, tables,
//     constraints, modules, tools); a path's file name when it is a config,
//     state or source file (config.yaml, state.db, main.go); route
//     templates ("/repos/{owner}/{repo}"); URL schemes; HTTP methods;
//     the number after "exited".
//   - Masked (volatile): any run mixing digits (numbers, counts, line and
//     column numbers, ports, pids, sizes, durations, versions, hex,
//     timestamps, instance names like node128); whole segments holding a
//     long id (6+ digits or 7+ hex digits); UUIDs; IPv4/IPv6/MAC addresses;
//     host names and host:port; URLs past the scheme; directories of paths;
//     quoted prose; key=value values; the word after "user"; booleans;
//     month/day names and units next to a masked number; request paths
//     after an HTTP method; e-mail addresses and user@host endpoints (scp
//     git remotes); a name with a dot, dash or digit after "host"; a quoted
//     value after "parsing", "value", "literal" or "input"; relative slash
//     paths and refs
//     with data in them, such as per-run branches
//     ("the-loop/4521-fix-login-3fa9c1"), as a whole; quoted single values
//     with data and punctuation ('gpt-5.1-codex', 'fix/12-x'); runs with a
//     digit in a file name ("run-abc0.json"); one-case runs of 6+ hex
//     letters ("bcadcab") and hex ids ending in one digit ("fbcef7").
//     Adjacent masks (and like-shaped list items,
//     "blk_<*> blk_<*>") collapse into one, so lists and multi-word
//     timestamps of any length give one template.
//   - In an access-log line (one carrying a quoted "GET /x HTTP/1.1"
//     request), the status is per-request data and masked like its length
//     and timing.
//   - Stack traces (Python, also after a wrapper's message on the same
//     line; Go panics; Java/Kotlin; .NET; Node; Rust backtraces) reduce to
//     the exception lines and the top in-app frame (function and file base
//     name) — without one, the innermost library frame, then the innermost
//     runtime frame; frames below it, line numbers and goroutine dumps are
//     dropped. In other multi-line text, Ruby "from" caller lines are
//     dropped and of numbered frames (PHP, gdb: "#0 ...") only the first is
//     kept.
//   - Records without error text fall back to the event plus the
//     allow-listed enum fields (source, gh_event, harness, via, exit_code,
//     will_retry).
//
// Known limits: plain words cannot be told from data (a user name after
// "for", a job name, an unquoted model name's words, a per-run branch name
// without digits or without a slash stay in the template), a hex id of
// fewer than 6 letters a-f and no digit is kept, and a name whose only
// distinguishing part is a number ("step 3" vs "step 4") is one defect.
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
	Fingerprint string   // current version, e.g. "v3:0123456789abcdef"
	Template    string   // masked text a human can read
	Aliases     []string // older versions' fingerprints for the same input: Legacy, then v2
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
