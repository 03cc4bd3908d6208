package stages

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/the-loop/the-loop-diagnose/logread"
	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/stages/budget"
	"github.com/the-loop/the-loop-diagnose/store"
)

// ReasonSuccess marks a record that is not a failure but a success event
// the healing check needs (dispatch.succeeded after dispatch.failed).
const ReasonSuccess = logread.ReasonSuccess

// TriageConfig is what the mechanical checks need. The zero value is not
// usable: the config's DefaultConfig holds the defaults, and its
// validation the bounds (selfDiagnosis.flakyThreshold, settleDays,
// verdictConfidence).
type TriageConfig struct {
	// Policy is the candidate and healing policy (correlation keys,
	// success suffixes, pending bound), declared in logread.
	logread.Policy
	FlakyThreshold int           // heals in 24 h that make a transient a flaky defect
	SettleFor      time.Duration // how long a settlement holds before re-examination
	EnvRules       []EnvRule     // operator rules, checked before the built-in ones
	Confidence     float64       // agent verdicts settle only at or above this
}

// EnvRule says a failure is the operator's environment, not the project's bug.
type EnvRule struct {
	Name   string `yaml:"name"`
	Event  string `yaml:"event"` // exact event, or a prefix ending in '*'
	Error  string `yaml:"error"` // RE2 over the error text
	Reason string `yaml:"reason"`
	re     *regexp.Regexp
}

// CompileEnvRules validates operator rules; errors name the rule.
func CompileEnvRules(rules []EnvRule) ([]EnvRule, error) {
	out := make([]EnvRule, len(rules))
	for i, r := range rules {
		name := r.Name
		if name == "" {
			name = fmt.Sprint(i + 1)
		}
		if r.Event == "" && r.Error == "" {
			return nil, fmt.Errorf("environment rule %s: needs event or error", name)
		}
		if r.Error != "" {
			re, err := regexp.Compile(r.Error)
			if err != nil {
				return nil, fmt.Errorf("environment rule %s: error regex: %v", name, err)
			}
			r.re = re
		}
		if r.Reason == "" {
			r.Reason = "operator rule " + name
		}
		out[i] = r
	}
	return out, nil
}

func (r EnvRule) matches(event, errText string) bool {
	if r.Event != "" {
		if p, ok := strings.CutSuffix(r.Event, "*"); ok {
			if !strings.HasPrefix(event, p) {
				return false
			}
		} else if event != r.Event {
			return false
		}
	}
	return r.re == nil || r.re.MatchString(errText)
}

// environmentSigns are failures of the operator's setup, not the project's
// code. Each is specific enough not to catch a real defect by accident.
// hints are lower-case words one of which every match of re contains: an
// error text holding none is not run through the (backtracking) regexp. A
// hint can only rule a sign out, so at worst a failure goes to a human.
var environmentSigns = []struct {
	re     *regexp.Regexp
	hints  []string
	reason string
}{
	{regexp.MustCompile(`(?i)executable file not found|command not found|no such file or directory.*\b(exec|spawn)\b|\b(exec|spawn)\b.*(ENOENT|no such file or directory)`),
		[]string{"not found", "no such file or directory", "enoent"}, "an executable is missing from PATH"},
	{regexp.MustCompile(`(?i)\b401\b.*(unauthori[sz]ed|bad credentials)|bad credentials|invalid api key|authentication failed|invalid_grant`),
		[]string{"unauthori", "bad credentials", "invalid api key", "authentication failed", "invalid_grant"}, "credentials are missing or invalid (401)"},
	{regexp.MustCompile(`(?i)permission denied|\bEACCES\b|\bEPERM\b|operation not permitted`),
		[]string{"permission denied", "eacces", "eperm", "operation not permitted"}, "permission denied on the host"},
	{regexp.MustCompile(`(?i)no space left on device|\bENOSPC\b|disk quota exceeded|\bEDQUOT\b`),
		[]string{"no space left on device", "enospc", "disk quota exceeded", "edquot"}, "the disk is full"},
	{regexp.MustCompile(`(?i)no such host|name or service not known|temporary failure in name resolution|getaddrinfo (ENOTFOUND|EAI_AGAIN)|could not resolve host|\blookup \S+ on \S+: (server misbehaving|i/o timeout)`),
		[]string{"no such host", "name or service not known", "temporary failure in name resolution", "getaddrinfo", "could not resolve host", "lookup "}, "DNS resolution failed"},
	{regexp.MustCompile(`(?i)host key verification failed|REMOTE HOST IDENTIFICATION HAS CHANGED`),
		[]string{"host key verification failed", "remote host identification has changed"}, "this host does not trust the SSH host key"},
	{regexp.MustCompile(`(?i)x509: certificate signed by unknown authority|unable to get local issuer certificate|self[- ]signed certificate in certificate chain`),
		[]string{"x509: certificate signed by unknown authority", "unable to get local issuer certificate", "signed certificate in certificate chain"}, "this host does not trust the TLS certificate (a proxy or a missing CA)"},
}

// classifyEnvironment returns why every sample of g is an environment
// failure, or "" when any is not (fail-safe: one real error keeps it for a human).
func classifyEnvironment(g *pipeline.Group, rules []EnvRule) (reason string, lines []int64) {
	if len(g.Samples) == 0 {
		return "", nil
	}
	for _, s := range g.Samples {
		r := environmentReason(s.Str("event"), s.Str("error"), rules)
		if r == "" || (reason != "" && r != reason) {
			return "", nil
		}
		reason = r
		lines = append(lines, s.Line)
	}
	return reason, lines
}

func environmentReason(event, errText string, rules []EnvRule) string {
	for _, r := range rules {
		if r.matches(event, errText) {
			return r.Reason
		}
	}
	if errText == "" {
		return ""
	}
	lower := strings.ToLower(errText)
	for _, s := range environmentSigns {
		if slices.ContainsFunc(s.hints, func(h string) bool { return strings.Contains(lower, h) }) && s.re.MatchString(errText) {
			return s.reason
		}
	}
	return ""
}

// Triage runs the mechanical checks on a group not yet reported: healed
// (unless flaky) and environment. It returns nil when the group must go on
// to a human; otherwise the settlement. It may set g.Reason to say why a
// group that looked settled goes on (flaky; environment persisting).
func Triage(g *pipeline.Group, st *store.State, now time.Time, cfg TriageConfig) *pipeline.Settlement {
	lines := sampleLines(g)
	if g.Healed > 0 && g.Healed == g.Count {
		heals := store.CountSince(st.Heals[g.Fingerprint], now.Add(-budget.Window)) + g.Healed
		if heals >= cfg.FlakyThreshold {
			g.Reason = fmt.Sprintf("flaky: it failed and then healed %d times in 24 h", heals)
			return nil
		}
		return &pipeline.Settlement{Verdict: pipeline.SettledHealed,
			Reason:   fmt.Sprintf("every retried failure later succeeded (%d of %d)", g.Healed, g.Count),
			Evidence: map[string]any{"lines": lines, "heals_24h": heals}}
	}
	if reason, envLines := classifyEnvironment(g, cfg.EnvRules); reason != "" {
		if prev, ok := st.Settled[g.Fingerprint]; ok && prev.Verdict == string(pipeline.SettledEnvironment) && !now.Before(prev.Until) {
			g.Reason = fmt.Sprintf("environment failure (%s) persisted past its settlement of %s", reason, prev.At.Format(time.RFC3339))
			return nil
		}
		return &pipeline.Settlement{Verdict: pipeline.SettledEnvironment, Reason: reason,
			Evidence: map[string]any{"lines": envLines}}
	}
	return nil
}

func sampleLines(g *pipeline.Group) []int64 {
	lines := make([]int64, 0, len(g.Samples))
	for _, s := range g.Samples {
		lines = append(lines, s.Line)
	}
	return lines
}
