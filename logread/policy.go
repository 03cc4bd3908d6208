package logread

import (
	"slices"
	"strings"

	"github.com/the-loop/the-loop-diagnose/pipeline"
)

// The canonical record: a Format maps each log's own fields onto these
// keys, so the filter, the fingerprint, the dossier's allow-list and the
// issue read every log alike. They are the-loop's own names.
const (
	KeyTime    = "ts"         // RFC 3339 text
	KeyLevel   = "level"      // a canonical level name: debug, info, warning, error, fatal
	KeyEvent   = "event"      // what happened: the-loop's event, else the message
	KeyMessage = "message"    // the human message, when the log has one apart from the event
	KeyError   = "error"      // the error text (message, type, stack)
	KeyRetry   = "will_retry" // whether the writer will try again
	KeyLogger  = "logger"     // the logger or service name
)

// Candidate reasons.
const (
	ReasonError  = "level:error"
	ReasonGiveUp = "give-up" // will_retry: false — the writer stopped retrying
)

// Policy is the candidate and healing policy, declared once: which
// canonical records are failures, which are successes that heal a retried
// failure, and how the two are correlated. The reader's prefilter derives
// the bytes it searches for from it (Prefilter), the filter applies it to
// decoded records (Select), and the healing correlation (Healing) follows
// its keys and suffixes. A Format says where a log keeps these fields.
type Policy struct {
	// FailureLevels are the canonical levels that make a record a failure.
	FailureLevels []string
	// QuietLevels are the levels below warning: a give-up logged at one
	// of them without error text is an outcome chosen, not a failure.
	QuietLevels []string
	// GiveUpValue is the value of the retry flag (KeyRetry) that makes a
	// record a give-up: the writer will not try again.
	GiveUpValue bool
	// ExcludeEventPrefixes are events never selected: this tool's own
	// diagnosis.* events, appended to the log it reads.
	ExcludeEventPrefixes []string
	// CorrelationKeys tie a retried failure to its later success.
	CorrelationKeys []string
	// SuccessSuffixes end a success event of a family: dispatch.succeeded
	// heals dispatch.failed.
	SuccessSuffixes []string
	// MaxPending bounds the retried failures awaiting their success.
	MaxPending int
}

// DefaultPolicy is the-loop's is_candidate and healing check.
func DefaultPolicy() Policy {
	return Policy{
		FailureLevels:        []string{"error", "fatal"},
		QuietLevels:          []string{"trace", "debug", "info"},
		GiveUpValue:          false,
		ExcludeEventPrefixes: []string{"diagnosis."},
		CorrelationKeys:      []string{"work_item", "delivery_id"},
		SuccessSuffixes:      []string{"succeeded", "completed", "success"},
		MaxPending:           20_000,
	}
}

// Select is the candidate policy, the-loop's is_candidate
// (selfdiagnosis.py) with one refinement:
//
//	if event.startswith("diagnosis."): return False
//	if record.get("level") == "error": return True
//	return record.get("will_retry") is False
//
// Never an excluded event (the tool's own diagnosis.*). A failure level
// always. A terminal give-up when it reports a failure: the-loop also writes
// will_retry false on a decision it made, not a failure —
// poll.comment_settled, "resolved because the dispatcher is FINISHED with
// its delivery" (eventlog.py; poller.py: "A settlement is a decision"). Its
// give-ups say they failed (poll.spawn_failed at error, session.spawn_failed
// at warning) and its settlements do not: logged at info, with no error
// text. So a give-up counts unless it is at a quiet level and carries no
// error. A record with no level at all is kept (nothing says it is benign).
func (p Policy) Select(r pipeline.Record) (reason string, ok bool) {
	event := r.Str(KeyEvent)
	for _, x := range p.ExcludeEventPrefixes {
		if strings.HasPrefix(event, x) {
			return "", false
		}
	}
	level, _ := foldCase(r.Str(KeyLevel))
	if p.isFailureLevel(level) {
		return ReasonError, true
	}
	if retry, present := r.Bool(KeyRetry); present && retry == p.GiveUpValue && !p.benign(level, r) {
		return ReasonGiveUp, true
	}
	return "", false
}

func (p Policy) isFailureLevel(level string) bool {
	return slices.Contains(p.FailureLevels, level)
}

// benign: logged at a quiet level and without error text.
func (p Policy) benign(level string, r pipeline.Record) bool {
	if !slices.Contains(p.QuietLevels, level) {
		return false
	}
	v, has := r.Fields.Lookup(KeyError)
	if !has || v == nil {
		return true
	}
	s, isText := v.(string)
	return isText && strings.TrimSpace(s) == ""
}

var defaultPolicy = DefaultPolicy()

// foldCase is s in lower case when it is written in one of the cases
// loggers write level names in — lower, UPPER or Title — and s unchanged
// (false) otherwise. The prefilter searches for exactly these spellings,
// so a level matches in any of them and in no other.
func foldCase(s string) (string, bool) {
	lower := strings.ToLower(s)
	if s == lower || s == strings.ToUpper(s) || s == title(lower) {
		return lower, true
	}
	return s, false
}

func title(lower string) string {
	if lower == "" {
		return lower
	}
	return strings.ToUpper(lower[:1]) + lower[1:]
}

// spellings are the cases of a level name foldCase accepts.
func spellings(name string) []string {
	lower := strings.ToLower(name)
	return slices.Compact([]string{lower, title(lower), strings.ToUpper(lower)})
}
