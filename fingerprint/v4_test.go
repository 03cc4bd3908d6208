package fingerprint

import (
	"strings"
	"testing"
)

// sameDefect asserts that the inputs share one fingerprint, and differ
// asserts that no two of them do.
func sameDefect(t *testing.T, ins ...Input) {
	t.Helper()
	first := Compute(ins[0])
	for _, in := range ins[1:] {
		if r := Compute(in); r.Fingerprint != first.Fingerprint {
			t.Errorf("one defect, two fingerprints:\n  %q\n  %q", first.Template, r.Template)
		}
	}
}

func differ(t *testing.T, ins ...Input) {
	t.Helper()
	seen := map[string]string{}
	for _, in := range ins {
		r := Compute(in)
		if other, ok := seen[r.Fingerprint]; ok {
			t.Errorf("two defects merged: %q and %q give %q", other, in.Error, r.Template)
		}
		seen[r.Fingerprint] = in.Error
	}
}

// Principle 2: the record's own field values found inside larger tokens,
// across glue, make the whole token data; a value masked in one place is
// masked wherever it recurs.
func TestARecordsValueGluedIntoATokenMakesItData(t *testing.T) {
	rec := func(text string, values ...string) Input {
		return Input{Event: "workspace.prepare.failed", Error: text, Values: values}
	}
	sameDefect(t,
		rec("restore quarry.lantern-ui.3307.state: checksum mismatch", "github:quarry/lantern-ui#3307"),
		rec("restore brisk.gate-api.880.state: checksum mismatch", "github:brisk/gate-api#880"),
	)
	sameDefect(t,
		rec("lock wt_3307_lantern-ui held; remove /var/tmp/wt_3307_lantern-ui/LOCK first", "github:quarry/lantern-ui#3307"),
		rec("lock wt_880_gate-api held; remove /var/tmp/wt_880_gate-api/LOCK first", "github:brisk/gate-api#880"),
	)
	// A small number glued between words, or two plain parts of one value
	// meeting in a token; not a version that happens to hold the number.
	sameDefect(t,
		rec("checkout fix_7_cache: worktree busy", "github:quarry/lantern-ui#7"),
		rec("checkout fix_52_cache: worktree busy", "github:brisk/gate-api#52"),
	)
	sameDefect(t,
		rec("import ledger quarry--kiln--9.tgz: truncated", "github:quarry/kiln#9"),
		rec("import ledger brisk--mesa--64.tgz: truncated", "github:brisk/mesa#64"),
	)
	if got, want := Compute(rec("tox needs python3.12 and pip", "github:quarry/kiln#12")).Template, Compute(rec("tox needs python3.12 and pip")).Template; got != want {
		t.Errorf("a version holding the issue number: %q, want %q", got, want)
	}
	// A socket named after the value's first part, without its pane.
	sameDefect(t,
		rec("no server running on agent-lantern-ui-12_1.sock (socket gone)", "agent-lantern-ui-12:1.0"),
		rec("no server running on agent-billing-407_1.sock (socket gone)", "agent-billing-407:1.0"),
	)
	// Inside a URL only the segment is data: the route stays.
	differ(t,
		rec("GET https://git.example.org/quarry/lantern-ui.wiki/pages: 404 Not Found", "github:quarry/lantern-ui#3307"),
		rec("GET https://git.example.org/quarry/lantern-ui.wiki/hooks: 404 Not Found", "github:quarry/lantern-ui#3307"),
	)
	// A plain word of a value is not looked for inside tokens.
	if got := Compute(rec("open main.go: no such file", "main")).Template; !strings.Contains(got, "main.go") {
		t.Errorf("branch main masked main.go: %q", got)
	}
}

// Principle 3: an enumerated field's value echoed in the message is this
// occurrence's data; the event is not.
func TestAnEnumeratedFieldEchoedInTheMessageIsData(t *testing.T) {
	rec := func(event, text string, fields MapFields) Input {
		return Input{Event: event, Error: text, Fields: fields}
	}
	sameDefect(t,
		rec("runner.spawn.failed", "spawn aider: fork/exec: resource temporarily unavailable", MapFields{"harness": "aider"}),
		rec("runner.spawn.failed", "spawn gemini: fork/exec: resource temporarily unavailable", MapFields{"harness": "gemini"}),
	)
	sameDefect(t,
		rec("schedule.failed", "refusing to dispatch via cron while the drain flag is set", MapFields{"via": "cron"}),
		rec("schedule.failed", "refusing to dispatch via direct while the drain flag is set", MapFields{"via": "direct"}),
	)
	// Not the record's value, or glued into a tool's name: kept.
	differ(t,
		rec("runner.spawn.failed", "spawn aider: fork/exec: resource temporarily unavailable", MapFields{"harness": "claude"}),
		rec("runner.spawn.failed", "spawn gemini: fork/exec: resource temporarily unavailable", MapFields{"harness": "claude"}),
	)
	if got := Compute(rec("login.failed", "cursor-agent: not logged in (run its login command)", MapFields{"harness": "cursor"})).Template; !strings.Contains(got, "cursor-agent") {
		t.Errorf("a tool's name lost its harness word: %q", got)
	}
	// An identity field's value, a common word too, wherever it stands as
	// a word; a repository's owner and name; not a path's directories.
	sameDefect(t,
		Input{Event: "merge.blocked", Error: "approval withdrawn by build for mesa", Values: []string{"build", "github:quarry/mesa#12"}},
		Input{Event: "merge.blocked", Error: "approval withdrawn by ci for kiln", Values: []string{"ci", "github:brisk/kiln#7"}},
	)
	if got := Compute(Input{Event: "git.push.failed", Error: "src refspec topic does not match any", Values: []string{"/srv/src/app"}}).Template; !strings.Contains(got, "src refspec") {
		t.Errorf("a path's directory masked in prose: %q", got)
	}
}

// Principle 4: a specific normalised text decides the defect whatever the
// event; a generic one keeps its event.
func TestASpecificTextIsOneDefectUnderAnyEvent(t *testing.T) {
	text := "docker binary 'docker' not found in PATH (searched /usr/local/bin:/usr/bin)"
	sameDefect(t,
		Input{Event: "build.prepare_failed", Error: text},
		Input{Event: "image.push_failed", Error: text},
		Input{Event: "cleanup.prune_failed", Error: text},
	)
	for _, generic := range []string{"context canceled", "exit status 1", "i/o timeout", "signal: killed", "EOF"} {
		differ(t, Input{Event: "build.prepare_failed", Error: generic}, Input{Event: "image.push_failed", Error: generic})
	}
}

// Principle 5: a quoted value that cannot be a code name is data, digits
// or not.
func TestAQuotedValueThatCannotBeACodeNameIsData(t *testing.T) {
	rec := func(text string) Input { return Input{Event: "git.failed", Error: text} }
	sameDefect(t, rec("unknown revision 'topic/cache-warmup' for rebase"), rec("unknown revision 'wip/flaky_ci' for rebase"))
	sameDefect(t, rec("git clean: invalid flag '-xdf'"), rec("git clean: invalid flag '-n'"))
	sameDefect(t, rec("directory '~scratch' is not writable"), rec("directory '~notes' is not writable"))
	sameDefect(t, rec("label 'Q3\treport' is not allowed"), rec("label 'old data' is not allowed"))
	// Recurring unquoted, it is masked there too.
	sameDefect(t,
		rec("stash '~tmpspace' lost: restore ~tmpspace by hand"),
		rec("stash '~quickfix' lost: restore ~quickfix by hand"),
	)
	// Code names stay: modules, scoped packages, MIME types, fields.
	differ(t,
		rec("Cannot find module 'lodash/fp'"), rec("Cannot find module 'ramda/src'"),
		rec("Cannot find module '@babel/core'"), rec("Cannot find module '@vue/compiler'"),
		rec("unsupported content type 'application/json'"), rec("unsupported content type 'text/plain'"),
		rec("KeyError: 'user_id'"), rec("KeyError: 'order_id'"),
	)
}

// Principle 6: user@host is a user and a host by position, whatever the
// words are; other things with an '@' are not logins.
func TestUserAtHostIsDataByPosition(t *testing.T) {
	rec := func(text string) Input { return Input{Event: "ssh.failed", Error: text} }
	sameDefect(t,
		rec("Permission denied (publickey) for ops@bastion"),
		rec("Permission denied (publickey) for dev@build-07.(none)"),
		rec("Permission denied (publickey) for root@ci"),
		rec("Permission denied (publickey) for git@(none)"),
		rec("Permission denied (publickey) for svc_sync@edge-3.corp.internal"),
	)
	differ(t,
		rec("lock held by com.acme.Worker@1b6d3586"), rec("lock held by com.acme.Reaper@77aa0f1c"),
	)
	differ(t,
		rec("npm ERR! missing: lodash@4.17.21, required by app"), rec("npm ERR! missing: express@4.18.2, required by app"),
	)
}

// The data pass never panics whatever the text, values and ranges, and it
// only masks: what it keeps between placeholders is the text's own.
func FuzzMaskData(f *testing.F) {
	f.Add("restore acme__relay__7.json: 'feat/x-y' by root@ci", "github:acme/relay#7", "claude", 0, 5)
	f.Add("spawn cursor: exit status 127", "loop-x-7:0.0", "cursor", 3, 1)
	f.Fuzz(func(t *testing.T, text, value, harness string, s, e int) {
		in := Input{Event: "e", Error: text, Values: []string{value}, Fields: MapFields{"harness": harness}, Identity: [][2]int{{s, e}}}
		masked := maskData(in)
		if strings.Contains(text, identityPlaceholder) {
			return
		}
		for _, kept := range strings.Split(masked, identityPlaceholder) {
			if !strings.Contains(text, kept) {
				t.Fatalf("maskData(%q) = %q: %q is not the text's", text, masked, kept)
			}
		}
		_ = Template(in)
	})
}
