package fingerprint

import (
	"strings"
	"testing"
)

func TestNoErrorFallsBackToEnumFields(t *testing.T) {
	base := map[string]any{"ts": "2026-01-01T00:00:00Z", "event": "loop.give_up", "source": "github",
		"gh_event": "issues", "harness": "claude", "exit_code": float64(137), "will_retry": false, "run_id": "r-1"}
	fpOf := func(change func(map[string]any)) string {
		f := map[string]any{}
		for k, v := range base {
			f[k] = v
		}
		change(f)
		return Compute(Input{Event: "loop.give_up", Fields: MapFields(f)}).Fingerprint
	}
	same := fpOf(func(map[string]any) {})
	if fpOf(func(f map[string]any) { f["ts"] = "2026-02-02T00:00:00Z"; f["run_id"] = "r-2" }) != same {
		t.Error("fields outside the allow-list must not split a defect")
	}
	for _, k := range []string{"source", "gh_event", "harness", "via", "exit_code", "will_retry"} {
		k := k
		if fpOf(func(f map[string]any) { f[k] = "other" }) == same {
			t.Errorf("changing %s must give another fingerprint", k)
		}
	}
	r := Compute(Input{Event: "loop.give_up", Fields: MapFields(base)})
	if want := "exit_code=137 gh_event=issues harness=claude source=github will_retry=false"; r.Template != want {
		t.Errorf("template %q, want %q", r.Template, want)
	}
	if Compute(Input{Event: "loop.give_up"}).Fingerprint == same {
		t.Error("a bare give-up and one with fields must differ")
	}
}

func TestComputeIsDeterministicAcrossMapOrder(t *testing.T) {
	f := map[string]any{"via": "cron", "source": "x", "harness": "h", "gh_event": "push"}
	first := Compute(Input{Event: "e", Fields: MapFields(f)}).Fingerprint
	for i := 0; i < 50; i++ {
		if got := Compute(Input{Event: "e", Fields: MapFields(f)}).Fingerprint; got != first {
			t.Fatal("fingerprint changed between calls")
		}
	}
}

func TestNewValidatesRulesAndNamesThem(t *testing.T) {
	cases := []struct {
		rules []Rule
		want  string
	}{
		{[]Rule{{Name: "ok", Event: "a", Fingerprint: "x"}, {Name: "db", ErrorRegex: "(", Fingerprint: "x"}}, `fingerprint rule 2 ("db"): error regex: `},
		{[]Rule{{Name: "empty", Fingerprint: "x"}}, `fingerprint rule 1 ("empty"): needs an event or an error regex`},
		{[]Rule{{Name: "both", Event: "a", Fingerprint: "x", Group: []string{"{{ event }}"}}}, `fingerprint rule 1 ("both"): set either fingerprint or group`},
		{[]Rule{{Name: "none", Event: "a"}}, `fingerprint rule 1 ("none"): needs a fingerprint or a group`},
		{[]Rule{{Name: "glob", Event: "dispatch.[", Fingerprint: "x"}}, `fingerprint rule 1 ("glob"): event glob "dispatch.["`},
		{[]Rule{{Name: "var", Event: "a", Group: []string{"{{ nope }}"}}}, `fingerprint rule 1 ("var"): group component "{{ nope }}": unknown variable "nope"`},
		{[]Rule{{Name: "cap", ErrorRegex: "(a)", Group: []string{"$2"}}}, `fingerprint rule 1 ("cap"): group component "$2": the error regex has 1 capture groups`},
		{[]Rule{{Name: "noregex", Event: "a", Group: []string{"$1"}}}, `fingerprint rule 1 ("noregex"): group component "$1": a capture group needs an error regex`},
	}
	for _, c := range cases {
		_, err := New(c.rules)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) error = %v, want it to contain %q", c.rules, err, c.want)
		}
	}
}

func TestFixedFingerprintRuleGroupsAllMatches(t *testing.T) {
	f, err := New([]Rule{{Name: "db", Event: "store.*", ErrorRegex: `(?i)timeout`, Fingerprint: "db-timeouts"}})
	if err != nil {
		t.Fatal(err)
	}
	a := f.Compute(Input{Event: "store.read", Error: "read users: Timeout after 5s"})
	b := f.Compute(Input{Event: "store.write", Error: "pq: canceling statement due to statement timeout"})
	if a.Fingerprint != b.Fingerprint {
		t.Error("a fixed-fingerprint rule must group every match")
	}
	if a.Template != Normalize("read users: Timeout after 5s") {
		t.Errorf("the template stays readable, got %q", a.Template)
	}
	if len(a.Aliases) == 0 || a.Aliases[0] != Legacy("store.read", "read users: Timeout after 5s") {
		t.Error("rules must keep the legacy alias")
	}
	other := f.Compute(Input{Event: "dispatch.failed", Error: "timeout"})
	if other.Fingerprint != Compute(Input{Event: "dispatch.failed", Error: "timeout"}).Fingerprint {
		t.Error("records no rule matches get the default fingerprint")
	}
}

func TestGroupRuleComponents(t *testing.T) {
	f, err := New([]Rule{{Name: "by-table", ErrorRegex: `relation "(?P<table>\w+)"`, Group: []string{"{{ event }}", "${table}"}}})
	if err != nil {
		t.Fatal(err)
	}
	users1 := f.Compute(Input{Event: "store.read", Error: `query 17: relation "users" does not exist`})
	users2 := f.Compute(Input{Event: "store.read", Error: `migrate: relation "users" is locked`})
	repos := f.Compute(Input{Event: "store.read", Error: `query 17: relation "repos" does not exist`})
	if users1.Fingerprint != users2.Fingerprint {
		t.Error("same capture and event must group")
	}
	if users1.Fingerprint == repos.Fingerprint {
		t.Error("a different capture must split")
	}

	g, err := New([]Rule{{Name: "by-type", Event: "run.*", Group: []string{"{{ error.type }}", "{{ field.harness }}"}}})
	if err != nil {
		t.Fatal(err)
	}
	x := g.Compute(Input{Event: "run.a", Error: "ValueError: bad 1", Fields: MapFields{"harness": "claude"}})
	y := g.Compute(Input{Event: "run.b", Error: "ValueError: other text", Fields: MapFields{"harness": "claude"}})
	z := g.Compute(Input{Event: "run.b", Error: "ValueError: other text", Fields: MapFields{"harness": "cursor"}})
	if x.Fingerprint != y.Fingerprint || x.Fingerprint == z.Fingerprint {
		t.Errorf("error.type/field grouping wrong: %s %s %s", x.Fingerprint, y.Fingerprint, z.Fingerprint)
	}
}

func TestFirstMatchingRuleWins(t *testing.T) {
	f, err := New([]Rule{
		{Name: "specific", Event: "dispatch.failed", Fingerprint: "a"},
		{Name: "general", Event: "dispatch.*", Fingerprint: "b"},
	})
	if err != nil {
		t.Fatal(err)
	}
	a := f.Compute(Input{Event: "dispatch.failed", Error: "x"}).Fingerprint
	b := f.Compute(Input{Event: "dispatch.timeout", Error: "x"}).Fingerprint
	if a == b {
		t.Error("the first matching rule must decide")
	}
}
