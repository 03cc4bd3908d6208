package fingerprint

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/the-loop/the-loop-diagnose/fakes/eventlog"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ from the current code")

// goldenVersions are the fingerprint versions a release computes, each with
// the file that pins it. v1, v2 and v3 are frozen: their file never changes
// (a state written by their release must keep matching). v4 is the current
// version: its file changes only with a deliberate change of the algorithm,
// reviewed record by record in the diff.
var goldenVersions = []struct {
	name    string
	compute func(Input) goldenOutput
}{
	{"v1", func(in Input) goldenOutput { return goldenOutput{Fingerprint: LegacyOf(in)} }},
	{"v2", func(in Input) goldenOutput {
		t := templateV2(in)
		return goldenOutput{Fingerprint: versionedFingerprint(versionV2, in.Event, t), Template: t}
	}},
	{"v3", func(in Input) goldenOutput {
		t := templateV3(in)
		return goldenOutput{Fingerprint: versionedFingerprint(versionV3, in.Event, t), Template: t}
	}},
	// v4 through Compute, with the aliases: the older versions must also be
	// wired into a Result as before.
	{"v4", func(in Input) goldenOutput {
		r := Compute(in)
		return goldenOutput{Fingerprint: r.Fingerprint, Template: r.Template, Aliases: r.Aliases}
	}},
}

// goldenInput is one record as fingerprint.Input sees it.
type goldenInput struct {
	Event    string         `json:"event"`
	Error    string         `json:"error,omitempty"`
	Fields   map[string]any `json:"fields,omitempty"`
	Identity [][2]int       `json:"identity,omitempty"`
	Values   []string       `json:"values,omitempty"`
}

func (g goldenInput) input() Input {
	in := Input{Event: g.Event, Error: g.Error, Identity: g.Identity, Values: g.Values}
	if g.Fields != nil {
		in.Fields = MapFields(g.Fields)
	}
	return in
}

type goldenOutput struct {
	Fingerprint string   `json:"fp"`
	Template    string   `json:"template,omitempty"`
	Aliases     []string `json:"aliases,omitempty"`
}

type goldenRecord struct {
	In  goldenInput  `json:"in"`
	Out goldenOutput `json:"out"`
}

func goldenPath(version string) string {
	return filepath.Join("testdata", "golden-"+version+".jsonl")
}

// TestGoldenFingerprints recomputes every version's fingerprint of every
// input in its golden file and names the first record that differs. Run
// with -update to rewrite the files (inputs regenerated, outputs from the
// current code): for a frozen version the diff must be empty.
func TestGoldenFingerprints(t *testing.T) {
	if *update {
		ins := goldenInputs()
		for _, v := range goldenVersions {
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false)
			for _, g := range ins {
				if err := enc.Encode(goldenRecord{In: g, Out: v.compute(g.input())}); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(goldenPath(v.name), b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, v := range goldenVersions {
		t.Run(v.name, func(t *testing.T) {
			f, err := os.Open(goldenPath(v.name))
			if err != nil {
				t.Fatalf("%v (go test ./fingerprint -run TestGoldenFingerprints -update writes it)", err)
			}
			defer f.Close()
			sc := bufio.NewScanner(f)
			sc.Buffer(nil, 1<<20)
			n := 0
			for line := 1; sc.Scan(); line++ {
				var rec goldenRecord
				if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
					t.Fatalf("%s:%d: %v", goldenPath(v.name), line, err)
				}
				got := v.compute(rec.In.input())
				if got.Fingerprint != rec.Out.Fingerprint || got.Template != rec.Out.Template || !slices.Equal(got.Aliases, rec.Out.Aliases) {
					in, _ := json.Marshal(rec.In)
					t.Fatalf("%s:%d: %s of a record changed\ninput:  %s\ngolden: %s %q aliases %v\nnow:    %s %q aliases %v",
						goldenPath(v.name), line, v.name, in, rec.Out.Fingerprint, rec.Out.Template, rec.Out.Aliases,
						got.Fingerprint, got.Template, got.Aliases)
				}
				n++
			}
			if err := sc.Err(); err != nil {
				t.Fatal(err)
			}
			if n < 1000 {
				t.Fatalf("%s holds %d records; a golden file this small pins little", goldenPath(v.name), n)
			}
		})
	}
}

// goldenInputs are the records the golden files pin, deterministic for a
// given code of this file: the-loop logs from the event-log generator,
// every text of this package's test tables, values of each volatile kind
// in varied sentences, application failures (traces of six languages),
// records without error text and non-string error values. Duplicates are
// dropped.
func goldenInputs() []goldenInput {
	var out []goldenInput
	seen := map[string]bool{}
	add := func(g goldenInput) {
		if !utf8.ValidString(g.Error) || !utf8.ValidString(g.Event) {
			return // JSON would not keep the bytes
		}
		k, _ := json.Marshal(g)
		if !seen[string(k)] {
			seen[string(k)] = true
			out = append(out, g)
		}
	}
	for _, seed := range []int64{1, 2} {
		var log bytes.Buffer
		o := eventlog.Options{Lines: 30_000, Seed: seed, FailureRate: 0.04, Defects: 40, Transients: 4, Environment: 6, CorruptRate: -1}
		if _, err := eventlog.Generate(&log, o); err != nil {
			panic(err)
		}
		goldenFromLog(&log, 300, add)
	}
	var dep bytes.Buffer
	if _, err := eventlog.GenerateDeployment(&dep, nil, eventlog.DeploymentOptions{Lines: 20_000, Seed: 3, FailureRate: 0.05}); err != nil {
		panic(err)
	}
	goldenFromLog(&dep, 200, add)

	r := rand.New(rand.NewSource(33))
	events := []string{"dispatch.failed", "agent.crashed", "git.push.failed", "poll.comment_failed", "store.write_failed"}
	text := func(s string) {
		add(goldenInput{Event: events[r.Intn(len(events))], Error: s})
	}
	for _, s := range benchMix {
		text(s)
	}
	for _, s := range []string{pyTrace, goPanicText, javaTrace} {
		text(s)
	}
	for _, p := range volatilePairs {
		text(p.a)
		text(p.b)
	}
	for _, p := range identityPairs {
		text(p.a)
		text(p.b)
	}
	for _, v := range legacyVectors {
		add(goldenInput{Event: v.event, Error: v.text})
	}
	for i := 0; i < 3; i++ {
		for _, d := range appDefects {
			text(d.render(newAppEnv(r)))
		}
	}
	// Each volatile kind in sentences of several shapes: bare, quoted,
	// key=value, after a path, in a URL, in brackets, in a list.
	shapes := []string{
		"request %s failed", "cannot open %s: no such file or directory", "key=%s rejected", "user %s denied",
		"'%s' is not a valid value", "GET https://api.example.com/v1/items/%s: 502 Bad Gateway",
		"[%s] worker stalled", "retrying %s, %s, %s", "lock held by %s since 10s", "error parsing \"%s\"",
		"exit status 1: %s", "host %s unreachable", "/var/lib/app/%s/state.db: database is locked",
	}
	for _, shape := range shapes {
		for k, kind := range volatileKinds {
			vals := make([]any, strings.Count(shape, "%s"))
			for i := range vals {
				vals[i] = kind(r)
			}
			add(goldenInput{Event: events[k%len(events)], Error: fmt.Sprintf(shape, vals...)})
		}
	}
	// The record's identity, masked by v3 and v4 (ranges) and v4 (values).
	for i := 0; i < 60; i++ {
		branch := fmt.Sprintf("the-loop/%d-fix-%x", 100+r.Intn(9000), r.Intn(1<<20))
		item := fmt.Sprint(100 + r.Intn(5000))
		msg := fmt.Sprintf("git push origin %s: exit status 1 (issue-%s-retry, work item %s)", branch, item, item)
		g := goldenInput{Event: "git.push.failed", Error: msg, Values: []string{branch, item},
			Fields: map[string]any{"branch": branch, "work_item": item, "source": "poll"}}
		g.Identity = identityRanges(msg, g.Values)
		add(g)
	}
	// Records without error text: the event and the allow-listed fields,
	// long free text in an enum field masked by the v2 normalizer.
	for i := 0; i < 40; i++ {
		f := map[string]any{"source": []string{"poll", "webhook", "cron"}[i%3], "will_retry": i%2 == 0,
			"exit_code": float64(i % 5 * 64), "attempts": float64(i), "harness": []any{"claude", "codex", nil}[i%3]}
		if i%4 == 0 {
			f["via"] = fmt.Sprintf("retry loop %d after %dms on node-%d", i, 10*i, i)
		}
		if i%7 == 0 {
			f["gh_event"] = map[string]any{"nested": float64(i)}
		}
		add(goldenInput{Event: events[i%len(events)] + ".gave_up", Fields: f})
	}
	// Non-string error and event values (v1 hashes their Python text).
	for _, v := range []any{nil, 137.0, -1.0, true, false, 1.5, 1e-05, 1.5e+16,
		map[string]any{"code": 137.0}, []any{1.0, "two", nil}, map[string]any{}, []any{}} {
		add(goldenInput{Event: "dispatch.failed", Fields: map[string]any{"event": "dispatch.failed", "error": v}})
		add(goldenInput{Event: "", Error: "non-string event", Fields: map[string]any{"event": v, "error": "non-string event"}})
	}
	return out
}

// goldenIdentityKeys approximate the fingerprint stage's identity fields
// (stages/incident.IdentityFields, which this package cannot import): they only
// decide which ranges the generated inputs carry, and the inputs are
// stored.
var goldenIdentityKeys = []string{"work_item", "repo", "branch", "ref", "actor", "user", "login",
	"tmux_target", "session", "cwd", "host", "pod", "node", "delivery_id", "request_id"}

// goldenFromLog adds up to limit failure records of a generated log with
// their identity, as the fingerprint stage builds them.
func goldenFromLog(log *bytes.Buffer, limit int, add func(goldenInput)) {
	sc := bufio.NewScanner(log)
	sc.Buffer(nil, 4<<20)
	for n := 0; n < limit && sc.Scan(); {
		var fields map[string]any
		if json.Unmarshal(sc.Bytes(), &fields) != nil || !isCandidate(fields) {
			continue
		}
		g := goldenInput{Fields: map[string]any{}}
		g.Event, _ = fields["event"].(string)
		g.Error, _ = fields["error"].(string)
		for k, v := range fields {
			_, str := v.(string)
			// Only the allow-listed enum fields and a non-string error or
			// event are read by a version: the rest would only bulk the files.
			if slices.Contains(enumFields, k) || (k == "error" || k == "event") && !str {
				g.Fields[k] = v
			}
			if s, ok := v.(string); ok && slices.Contains(goldenIdentityKeys, k) {
				g.Values = append(g.Values, s)
			}
		}
		slices.Sort(g.Values)
		g.Identity = identityRanges(g.Error, g.Values)
		add(g)
		n++
	}
}

// identityRanges are the places of values in text, sorted, not
// overlapping, longest value first where two start together.
func identityRanges(text string, values []string) [][2]int {
	var rs [][2]int
	for _, v := range values {
		if len(v) < 2 {
			continue
		}
		for at := 0; ; {
			i := strings.Index(text[at:], v)
			if i < 0 {
				break
			}
			rs = append(rs, [2]int{at + i, at + i + len(v)})
			at += i + len(v)
		}
	}
	slices.SortFunc(rs, func(a, b [2]int) int {
		if a[0] != b[0] {
			return a[0] - b[0]
		}
		return b[1] - a[1]
	})
	var out [][2]int
	for _, r := range rs {
		if len(out) == 0 || r[0] >= out[len(out)-1][1] {
			out = append(out, r)
		}
	}
	return out
}
