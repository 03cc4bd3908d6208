package stages

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/redact"
	"github.com/the-loop/the-loop-diagnose/stages/issue"
)

// ComposeConfig configures the compose stage.
type ComposeConfig struct {
	Scrubber *redact.Redactor
	Keywords []string // extra control keywords to defang, beyond the-loop's own
	Repo     string
	Label    string
	// Version is the deployment's version as its config gives it
	// (selfDiagnosis.version): shown when the records name none.
	Version string
}

// NewCompose turns each successful finding that is to be filed into an
// issue title and body; the others (no usable finding; deferred by the cap,
// settled, already known) pass through with no title or body: nothing
// would read them, and a watcher's recurring deferred defects paid for
// their scrubbing every scan.
func NewCompose(cfg ComposeConfig) pipeline.Stage[pipeline.Finding, pipeline.Report] {
	return pipeline.Map(func(_ context.Context, f pipeline.Finding) (pipeline.Report, bool, error) {
		r := pipeline.Report{Finding: f, Repo: cfg.Repo, Label: cfg.Label}
		if f.Answer == nil || f.Failure != "" || f.Verdict != pipeline.VerdictNew {
			return r, true, nil
		}
		r.Title, r.Body = Compose(f, cfg)
		return r, true, nil
	})
}

// Compose renders the issue as a bug report: Summary, Root cause, Suggested
// fix, Evidence (occurrences, the distinct values of the allow-listed fields,
// a few sample records, the error as text), Environment (the deployment's
// versions), and a footer naming this tool. Every fragment that came from
// the log or the agent passes through redact.Publish (scrubbed again, since
// the agent may echo what it read; defanged) or is scrubbed and defanged as
// a record, and the assembled body passes through redact.Neutralize once
// more, so nothing in it can mention, cross-link, fetch or hide: the only
// live markup is the markers appended last.
func Compose(f pipeline.Finding, cfg ComposeConfig) (title, body string) {
	ids := GroupIdentity(f.Group) // an agent may quote the records' own identity
	public := func(s string) string { return cfg.Scrubber.Publish(strings.TrimSpace(s), ids, cfg.Keywords) }
	a := f.Answer
	title = issue.Title(public(issue.OneLine(issue.CleanTitle(a.Title))))
	var b strings.Builder
	section := func(name, text string) {
		if text = public(text); text == "" {
			text = "_(none given)_"
		}
		fmt.Fprintf(&b, "## %s\n\n%s\n\n", name, text)
	}
	section("Summary", a.Summary)
	section("Root cause", a.RootCause)
	section("Suggested fix", a.SuggestedFix)
	b.WriteString(issue.EvidenceHeading)
	if a.Verdict != "" {
		ev := "- Agent verdict: " + a.Verdict
		if a.Confidence != nil {
			ev += fmt.Sprintf(" (confidence %.2f)", *a.Confidence)
		}
		for _, e := range a.Evidence {
			ev += "\n  - " + issue.OneLine(e)
		}
		b.WriteString("\n" + public(ev) + "\n")
	}
	b.WriteString(redact.Defang(composeEvidence(f), cfg.Keywords))
	b.WriteString("\n## Environment\n\n")
	b.WriteString(redact.Defang(composeEnvironment(f, cfg.Version), cfg.Keywords))
	tool := "the-loop-diagnose"
	if v := composeToolVersion(f.Environment); v != "" {
		tool += " " + v
	}
	fmt.Fprintf(&b, "\n---\n_Filed automatically by %s from the service's event log. Intended label: `%s`._\n\n", redact.Defang(tool, cfg.Keywords), cfg.Label)
	body = redact.Neutralize(b.String())
	body += issue.MarkerBlock(issue.MarkerFingerprints(f.Group))
	return title, body
}

// Environment bounds.
const (
	composeMaxVersions    = 8
	composeVersionMaxChar = 40
)

// composeEvidence is the dossier, whole: the text the agent was given is
// the text the issue shows (the-loop's boundary), the Source section too.
func composeEvidence(f pipeline.Finding) string {
	return "\n" + strings.TrimLeft(f.Markdown, "\n")
}

// composeDistinct lists a field's distinct values with their counts, most
// frequent first: "claude ×33, cursor ×17". Each value is scrubbed (with
// the group's identity) before it is cut to one short line; values that
// scrub to the same text count as one.
func composeDistinct(ft *pipeline.FieldTally, s *redact.Redactor, ids redact.RecordIdentity) string {
	counts := map[string]int{}
	other := ft.Other
	for v, n := range ft.Values {
		text := issue.Truncate(issue.OneLine(fmt.Sprint(s.Value(v, ids))), composeMaxValueChars)
		if text == "" {
			other += n
			continue
		}
		counts[text] += n
	}
	order := composeByCount(counts)
	var parts []string
	for i, v := range order {
		if i == composeMaxValues {
			for _, rest := range order[i:] {
				other += counts[rest]
			}
			break
		}
		parts = append(parts, fmt.Sprintf("%s ×%d", v, counts[v]))
	}
	if other > 0 {
		parts = append(parts, fmt.Sprintf("other values ×%d", other))
	}
	return strings.Join(parts, ", ")
}

// composeByCount orders counted values most frequent first, then by text,
// so a body is the same whatever order the map gives.
func composeByCount(counts map[string]int) []string {
	order := slices.Sorted(maps.Keys(counts))
	slices.SortStableFunc(order, func(a, b string) int { return counts[b] - counts[a] })
	return order
}

// composeTallyScope says which occurrences the counts cover when they are
// not all the group's (a defect that waited in the backlog carries its
// earlier scans' count, not their records).
func composeTallyScope(g pipeline.Group) string {
	if n := g.Tally.Occurrences; n < g.Count {
		return fmt.Sprintf(" (in the %d occurrences this scan read)", n)
	}
	return ""
}

// composeVersionRE is what a deployment's version looks like: 1.4.2,
// v2.0.0-rc.1, 1.4.2+build.7. Anything else in a version field is not shown.
var composeVersionRE = regexp.MustCompile(`^v?[0-9]+(\.[0-9]+){1,3}([-+][0-9A-Za-z][0-9A-Za-z.-]{0,30})?$`)

// DeploymentVersions are the versions the deployment ran when a group's
// records were written, most frequent first, with how many records named
// each: the records' version field, shown only when shaped like a version
// (it is free text, and public once filed).
func DeploymentVersions(g pipeline.Group) (versions []string, counts map[string]int) {
	counts = map[string]int{}
	if ft := g.Tally.Fields["version"]; ft != nil {
		for v, n := range ft.Values {
			if v = strings.TrimSpace(v); len(v) <= composeVersionMaxChar && composeVersionRE.MatchString(v) {
				counts[v] += n
			}
		}
	}
	return composeByCount(counts), counts
}

// composeEnvironment is the deployment's environment as its records give
// it (else its config): the versions they ran and the OS family.
func composeEnvironment(f pipeline.Finding, configured string) string {
	order, counts := DeploymentVersions(f.Group)
	var b strings.Builder
	switch {
	case len(order) == 0 && composeVersionRE.MatchString(configured) && len(configured) <= composeVersionMaxChar:
		b.WriteString("- Version: " + configured + " (as configured: the records name none)\n")
	case len(order) == 0:
		b.WriteString("- Version: not recorded in the log\n")
	default:
		var parts []string
		for i, v := range order {
			if i == composeMaxVersions {
				parts = append(parts, fmt.Sprintf("and %d more", len(order)-i))
				break
			}
			parts = append(parts, fmt.Sprintf("%s ×%d", v, counts[v]))
		}
		label := "Version"
		if len(order) > 1 {
			label = "Versions"
		}
		b.WriteString("- " + label + composeTallyScope(f.Group) + ": " + strings.Join(parts, ", ") + "\n")
	}
	if osName := composeOS(f.Environment); osName != "" {
		b.WriteString("- OS: " + osName + "\n")
	}
	return b.String()
}

// composeOS is the OS family the environment block names ("- OS linux/amd64").
func composeOS(env string) string {
	for _, line := range strings.Split(env, "\n") {
		if rest, ok := strings.CutPrefix(line, "- OS "); ok {
			family, _, _ := strings.Cut(strings.TrimSpace(rest), "/")
			if redact.IsName(family) {
				return family
			}
		}
	}
	return ""
}

// composeToolVersion is this tool's version the environment block names.
func composeToolVersion(env string) string {
	for _, line := range strings.Split(env, "\n") {
		if rest, ok := strings.CutPrefix(line, "- the-loop-diagnose "); ok {
			if v := strings.TrimSpace(rest); redact.IsName(v) || composeVersionRE.MatchString(v) {
				return v
			}
		}
	}
	return ""
}
