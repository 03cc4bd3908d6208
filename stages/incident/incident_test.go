package incident_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/the-loop/the-loop-diagnose/fingerprint"
	"github.com/the-loop/the-loop-diagnose/logread"
	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/stages"
	"github.com/the-loop/the-loop-diagnose/stages/incident"
	"github.com/the-loop/the-loop-diagnose/store"
)

var incidentT0 = time.Date(2026, 3, 9, 14, 0, 0, 0, time.UTC)

// incRec is a record at t0+at with alternating key, value pairs.
func incRec(line int64, at time.Duration, kv ...any) pipeline.Candidate {
	m := map[string]any{"ts": incidentT0.Add(at).Format(time.RFC3339Nano)}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	c := pipeline.Candidate{Record: pipeline.Record{Line: line, Fields: pipeline.FieldsOf(m)}, Reason: logread.ReasonError}
	if m["level"] != "error" {
		c.Reason = logread.ReasonGiveUp
	}
	return c
}

// failing is a retried failure with error text.
func failing(line int64, at time.Duration, event, errText string, kv ...any) pipeline.Candidate {
	return incRec(line, at, append([]any{"event", event, "level", "error", "source", "queue", "will_retry", true,
		"attempts", 1, "error", errText}, kv...)...)
}

// givingUp is a bare give-up: will_retry false, attempts spent, no error.
func givingUp(line int64, at time.Duration, kv ...any) pipeline.Candidate {
	return incRec(line, at, append([]any{"event", "agent.gave_up", "level", "warning", "source", "queue",
		"will_retry", false, "attempts", 3}, kv...)...)
}

// fingerprintAll runs the fingerprint stage with an incident index and
// returns each line's fingerprint, checking the order is the input's.
func fingerprintAll(t *testing.T, idx *incident.Index, in ...pipeline.Candidate) map[int64]pipeline.Occurrence {
	t.Helper()
	fp, err := fingerprint.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pipeline.Collect(context.Background(), stages.NewFingerprint(fp, idx), in...)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("%d items out for %d in", len(out), len(in))
	}
	m := map[int64]pipeline.Occurrence{}
	for i, o := range out {
		if o.Line != in[i].Line {
			t.Fatalf("item %d is line %d, want %d: order not kept", i, o.Line, in[i].Line)
		}
		m[o.Line] = o
	}
	return m
}

func newIndex() *incident.Index {
	return incident.NewIndex(incident.KeysWith([]string{"work_item", "delivery_id"}), 0)
}

const (
	wiHarbor  = "github:quillon/harbor-sync#812"
	delivA    = "5c1e0f7a-93d2-4b6e-8a10-2f4d9e7c3b01"
	delivB    = "e8a4b2c9-0d17-4f35-b6e2-91c7a05d4f88"
	errLease  = "lease 77 on node-b lost: etcd txn aborted (revision 4411)"
	errRender = "render plan: template \"steps\" missing key .Budget"
)

func TestBareGiveUpTakesItsIncidentsIdentity(t *testing.T) {
	got := fingerprintAll(t, newIndex(),
		failing(1, 0, "queue.claim.failed", errLease, "work_item", wiHarbor, "delivery_id", delivA),
		givingUp(2, 4*time.Minute, "work_item", wiHarbor, "delivery_id", delivA),
	)
	f, g := got[1], got[2]
	if g.Fingerprint != f.Fingerprint || g.Template != f.Template || fmt.Sprint(g.Aliases) != fmt.Sprint(f.Aliases) {
		t.Fatalf("give-up %q %q %v, want its failure's %q %q %v", g.Fingerprint, g.Template, g.Aliases, f.Fingerprint, f.Template, f.Aliases)
	}
	if g.Str("event") != "agent.gave_up" || g.Line != 2 {
		t.Fatalf("the give-up's own record must be kept: %+v", g.Record)
	}
}

// Without the index (or with nothing to link to) a give-up keeps its own
// fingerprint, and two unrelated lone give-ups of one event stay one group.
func TestGiveUpWithNothingToLinkToKeepsItsOwnFingerprint(t *testing.T) {
	alone := fingerprintAll(t, nil, givingUp(1, 0, "work_item", wiHarbor))[1].Fingerprint
	got := fingerprintAll(t, newIndex(),
		failing(1, 0, "queue.claim.failed", errLease, "work_item", "github:quillon/harbor-sync#9"),
		givingUp(2, time.Minute, "work_item", wiHarbor),
		givingUp(3, 2*time.Minute, "work_item", "github:brambleworks/ledger#40"),
		givingUp(4, 3*time.Minute), // no correlation values at all
	)
	for _, l := range []int64{2, 3, 4} {
		if got[l].Fingerprint != alone {
			t.Errorf("line %d: %q, want its own %q", l, got[l].Fingerprint, alone)
		}
	}
	if got[1].Fingerprint == alone {
		t.Fatal("the failure took the give-up's fingerprint")
	}
}

// Two incidents on one work item, interleaved: each give-up ends the one of
// its delivery, not the latest failure on the work item.
func TestInterleavedIncidentsOnOneWorkItemAreNotMixedUp(t *testing.T) {
	got := fingerprintAll(t, newIndex(),
		failing(1, 0, "queue.claim.failed", errLease, "work_item", wiHarbor, "delivery_id", delivA),
		failing(2, 30*time.Second, "plan.failed", errRender, "work_item", wiHarbor, "delivery_id", delivB),
		failing(3, time.Minute, "queue.claim.failed", errLease, "work_item", wiHarbor, "delivery_id", delivA),
		failing(4, 90*time.Second, "plan.failed", errRender, "work_item", wiHarbor, "delivery_id", delivB),
		givingUp(5, 2*time.Minute, "work_item", wiHarbor, "delivery_id", delivA),
		givingUp(6, 3*time.Minute, "work_item", wiHarbor, "delivery_id", delivB),
	)
	if got[5].Fingerprint != got[1].Fingerprint || got[6].Fingerprint != got[2].Fingerprint || got[1].Fingerprint == got[2].Fingerprint {
		t.Fatalf("give-ups %q %q, want %q %q", got[5].Fingerprint, got[6].Fingerprint, got[1].Fingerprint, got[2].Fingerprint)
	}
}

// A delivery shared beats a work item shared: the give-up of delivery A
// ends A's failure even when a later failure without a delivery sits on the
// same work item; and with one key each, the delivery (rarer) wins.
func TestDeliveryIDBeatsWorkItem(t *testing.T) {
	got := fingerprintAll(t, newIndex(),
		failing(1, 0, "queue.claim.failed", errLease, "work_item", wiHarbor, "delivery_id", delivA),
		failing(2, time.Minute, "plan.failed", errRender, "work_item", wiHarbor),
		givingUp(3, 2*time.Minute, "work_item", wiHarbor, "delivery_id", delivA),
	)
	if got[3].Fingerprint != got[1].Fingerprint {
		t.Fatalf("more keys shared: linked to %q, want %q", got[3].Fingerprint, got[1].Fingerprint)
	}
	got = fingerprintAll(t, newIndex(),
		failing(1, 0, "queue.claim.failed", errLease, "delivery_id", delivA),
		failing(2, time.Minute, "plan.failed", errRender, "work_item", wiHarbor),
		givingUp(3, 2*time.Minute, "work_item", wiHarbor, "delivery_id", delivA),
	)
	if got[3].Fingerprint != got[1].Fingerprint {
		t.Fatalf("one key each: linked to %q, want the delivery's %q", got[3].Fingerprint, got[1].Fingerprint)
	}
}

// Two deliveries are two incidents, and a disagreeing harness is another
// agent's: no link. A disagreeing source is no veto: the poller reports
// give-ups for dispatches whose failures the webhook logged.
func TestDisagreeingValuesDoNotLink(t *testing.T) {
	alone := fingerprintAll(t, nil, givingUp(1, 0, "work_item", wiHarbor, "delivery_id", delivB))[1].Fingerprint
	got := fingerprintAll(t, newIndex(),
		failing(1, 0, "queue.claim.failed", errLease, "work_item", wiHarbor, "delivery_id", delivA),
		givingUp(2, time.Minute, "work_item", wiHarbor, "delivery_id", delivB),
	)
	if got[2].Fingerprint != alone {
		t.Fatalf("another delivery's give-up linked: %q", got[2].Fingerprint)
	}
	got = fingerprintAll(t, newIndex(),
		failing(1, 0, "agent.failed", errRender, "work_item", wiHarbor, "harness", "codex"),
		givingUp(2, time.Minute, "work_item", wiHarbor, "harness", "cursor"),
	)
	if got[2].Fingerprint == got[1].Fingerprint {
		t.Fatal("a give-up of another harness linked")
	}
	got = fingerprintAll(t, newIndex(),
		failing(1, 0, "agent.failed", errRender, "work_item", wiHarbor, "source", "webhook"),
		givingUp(2, time.Minute, "work_item", wiHarbor, "source", "poll"),
	)
	if got[2].Fingerprint != got[1].Fingerprint {
		t.Fatal("the poller's give-up for the webhook's failure did not link")
	}
}

func TestIncidentWindowExpires(t *testing.T) {
	got := fingerprintAll(t, newIndex(),
		failing(1, 0, "queue.claim.failed", errLease, "work_item", wiHarbor),
		givingUp(2, incident.Window+time.Second, "work_item", wiHarbor),
		failing(3, 2*incident.Window, "plan.failed", errRender, "work_item", "github:brambleworks/ledger#40"),
		givingUp(4, 3*incident.Window-time.Second, "work_item", "github:brambleworks/ledger#40"),
	)
	if got[2].Fingerprint == got[1].Fingerprint {
		t.Fatal("a give-up past the window linked")
	}
	if got[4].Fingerprint != got[3].Fingerprint {
		t.Fatal("a give-up just inside the window did not link")
	}
}

// A give-up is the end of an incident: it never links to a failure after
// it, in the log or in time.
func TestGiveUpBeforeItsFailureDoesNotLinkBackwards(t *testing.T) {
	got := fingerprintAll(t, newIndex(),
		givingUp(1, 0, "work_item", wiHarbor, "delivery_id", delivA),
		failing(2, time.Second, "queue.claim.failed", errLease, "work_item", wiHarbor, "delivery_id", delivA),
		// Written later but stamped earlier than the failure before it.
		failing(3, 10*time.Minute, "plan.failed", errRender, "work_item", "github:brambleworks/ledger#40"),
		givingUp(4, 9*time.Minute, "work_item", "github:brambleworks/ledger#40"),
	)
	if got[1].Fingerprint == got[2].Fingerprint {
		t.Fatal("a give-up linked to a failure written after it")
	}
	if got[4].Fingerprint == got[3].Fingerprint {
		t.Fatal("a give-up linked to a failure stamped after it")
	}
}

// The latest earlier failure wins among equally tight ones.
func TestLatestEqualFailureWins(t *testing.T) {
	got := fingerprintAll(t, newIndex(),
		failing(1, 0, "queue.claim.failed", errLease, "work_item", wiHarbor),
		failing(2, time.Minute, "plan.failed", errRender, "work_item", wiHarbor),
		givingUp(3, 2*time.Minute, "work_item", wiHarbor),
	)
	if got[3].Fingerprint != got[2].Fingerprint {
		t.Fatal("did not link to the latest failure")
	}
}

// The index is bounded by size (the oldest failure leaves first) and keeps
// working across stage runs, as a watcher's scans share it.
func TestIncidentIndexIsBoundedAndOutlivesAScan(t *testing.T) {
	idx := incident.NewIndex(incident.Keys, 16)
	var in []pipeline.Candidate
	for i := range 40 {
		in = append(in, failing(int64(i+1), time.Duration(i)*time.Second, "queue.claim.failed",
			fmt.Sprintf("lease lost: shard %c", 'a'+i%26), "work_item", fmt.Sprintf("github:quillon/harbor-sync#%d", i)))
	}
	first := fingerprintAll(t, idx, in...)
	if idx.Len() != 16 || incident.ValuesLen(idx) != 16 {
		t.Fatalf("index holds %d failures, %d values; want the bound 16", idx.Len(), incident.ValuesLen(idx))
	}
	got := fingerprintAll(t, idx, // the next scan
		givingUp(100, time.Minute, "work_item", "github:quillon/harbor-sync#39"),
		givingUp(101, time.Minute, "work_item", "github:quillon/harbor-sync#2"),
	)
	if got[100].Fingerprint != first[40].Fingerprint {
		t.Fatal("a give-up did not link to the previous scan's failure")
	}
	if got[101].Fingerprint == first[3].Fingerprint {
		t.Fatal("a give-up linked to an evicted failure")
	}
	if incident.IdentitiesLen(idx) > 16 {
		t.Fatalf("%d identities kept for 16 failures", incident.IdentitiesLen(idx))
	}
}

// Two incidents on one work item without a delivery id, on two branches (a
// fix branch and main): each give-up ends the incident of its branch, even
// when the other incident's failure is later.
func TestAGiveUpEndsTheIncidentOfItsBranch(t *testing.T) {
	got := fingerprintAll(t, newIndex(),
		failing(1, 0, "queue.claim.failed", errLease, "work_item", wiHarbor, "branch", "the-loop/812-lease-fix-3a9c1e"),
		failing(2, time.Minute, "plan.failed", errRender, "work_item", wiHarbor, "branch", "main"),
		givingUp(3, 2*time.Minute, "work_item", wiHarbor, "branch", "the-loop/812-lease-fix-3a9c1e"),
		givingUp(4, 3*time.Minute, "work_item", wiHarbor, "branch", "main"),
	)
	if got[3].Fingerprint != got[1].Fingerprint || got[4].Fingerprint != got[2].Fingerprint {
		t.Fatalf("give-ups %q %q, want %q %q", got[3].Fingerprint, got[4].Fingerprint, got[1].Fingerprint, got[2].Fingerprint)
	}
}

// An incident ends once, and a newer failure on the same key supersedes an
// older one: a second give-up on the key finds the incident it could end
// already ended, and keeps its own identity rather than joining an ended
// or superseded incident.
func TestAnIncidentEndsOnce(t *testing.T) {
	alone := fingerprintAll(t, nil, givingUp(1, 0, "work_item", wiHarbor))[1].Fingerprint
	got := fingerprintAll(t, newIndex(),
		failing(1, 0, "queue.claim.failed", errLease, "work_item", wiHarbor),
		failing(2, 20*time.Second, "queue.claim.failed", errLease, "work_item", wiHarbor, "attempts", 2),
		failing(3, time.Minute, "plan.failed", errRender, "work_item", wiHarbor),
		givingUp(4, 2*time.Minute, "work_item", wiHarbor),
		givingUp(5, 3*time.Minute, "work_item", wiHarbor),
	)
	if got[4].Fingerprint != got[3].Fingerprint || got[5].Fingerprint != alone {
		t.Fatalf("give-ups %q %q, want %q and their own %q", got[4].Fingerprint, got[5].Fingerprint, got[3].Fingerprint, alone)
	}
}

// A bare give-up reported by another component, seconds after one
// defect's last failure on a tmux session, joins that defect: not the
// earlier defect whose incident on the same session had already ended
// with its own give-up, though that one shares more of its fields.
func TestAGiveUpJoinsTheLatestFailureOnItsKeyNotAnEndedIncident(t *testing.T) {
	const pane = "relay-ingest-31:2.1"
	idx := incident.NewIndex(incident.KeysWith([]string{"session_key"}), 0)
	got := fingerprintAll(t, idx,
		failing(1, 0, "sandbox.mount.failed", errLease, "tmux_target", pane, "session_key", "s-77", "source", "queue"),
		incRec(2, 6*time.Minute, "event", "sandbox.gave_up", "level", "warning", "will_retry", false, "tmux_target", pane, "source", "queue"),
		failing(3, 48*time.Minute, "plan.failed", errRender, "tmux_target", pane, "source", "webhook"),
		incRec(4, 48*time.Minute+28*time.Second, "event", "poll.reap_failed", "level", "warning", "will_retry", false,
			"tmux_target", pane, "session_key", "s-77", "source", "poll"),
	)
	if got[2].Fingerprint != got[1].Fingerprint {
		t.Fatalf("the first give-up did not end its incident: %q", got[2].Fingerprint)
	}
	if got[4].Fingerprint != got[3].Fingerprint {
		t.Fatalf("the poller's give-up joined %q, want the latest failure's %q (%q)", got[4].Template, got[3].Template, got[3].Fingerprint)
	}
}

// The record's own identity inside its error text (its work item's owner,
// repository and number, its branch, tmux target, working directory and
// user, delivery id, actor) does not split a defect; a component's name
// that reappears in its message does not merge two components' defects.
func TestTheRecordsOwnIdentityDoesNotSplitADefect(t *testing.T) {
	fp := func(line int64, errText string, kv ...any) pipeline.Candidate {
		return failing(line, time.Duration(line)*time.Second, "git.worktree.failed", errText, kv...)
	}
	got := fingerprintAll(t, nil,
		fp(1, "git worktree add /tmp/wt-1 -b feature/cache-fix: fatal: 'feature/cache-fix' is already checked out at '/home/mpriya/work/admin'",
			"branch", "feature/cache-fix", "work_item", "github:nodo-corp/admin#5876", "cwd", "/home/mpriya/code/admin"),
		fp(2, "git worktree add /tmp/wt-2 -b main: fatal: 'main' is already checked out at '/srv/dana/work/mobile-ml'",
			"branch", "main", "work_item", "github:trihael/mobile-ml#12", "cwd", "/srv/dana/work/mobile-ml"),
		fp(3, "git worktree add C:\\tmp\\wt-3 -b the-loop/77-docs-bump-795384: fatal: 'the-loop/77-docs-bump-795384' is already checked out at 'C:\\Users\\nia\\src\\ops_search'",
			"branch", "the-loop/77-docs-bump-795384", "work_item", "github:exel-dev/ops_search#77", "cwd", "C:\\Users\\nia\\src\\ops_search"),
		fp(4, "tmux send-keys -t loop-docs-134:0.0 failed: can't find pane; run by ysven@bob-mbp.local for --repo globex/data-pipeline",
			"tmux_target", "loop-docs-134:0.0", "actor", "ysven", "work_item", "github:globex/data-pipeline#134"),
		fp(5, "tmux send-keys -t loop-auth-474:0.0 failed: can't find pane; run by renovate@ci-7.example.dev for --repo soylent/auth",
			"tmux_target", "loop-auth-474:0.0", "actor", "renovate", "work_item", "github:soylent/auth#474"),
		fp(6, "landlock denied write to /srv/rafael/work/billing.io/.git/index.lock",
			"cwd", "/srv/rafael/work/billing.io", "work_item", "github:sormar/billing.io#9"),
		fp(7, "landlock denied write to /srv/nia/work/web-infra/.git/index.lock",
			"cwd", "/srv/nia/code/web-infra", "work_item", "github:lyzenhq/web-infra#5917"),
		fp(8, "payments: ledger write timed out", "logger", "payments"),
		fp(9, "orders: ledger write timed out", "logger", "orders"),
	)
	same := func(lines ...int64) {
		t.Helper()
		for _, l := range lines[1:] {
			if got[l].Fingerprint != got[lines[0]].Fingerprint {
				t.Errorf("lines %d and %d are one defect:\n %q\n %q", lines[0], l, got[lines[0]].Template, got[l].Template)
			}
		}
	}
	same(1, 2, 3)
	same(4, 5)
	same(6, 7)
	if got[8].Fingerprint == got[9].Fingerprint {
		t.Errorf("two components' defects merged through the logger field: %q", got[8].Template)
	}
	for l, o := range got {
		if strings.Contains(o.Template, "0000000000000") {
			t.Errorf("line %d: the identity placeholder shows in the template %q", l, o.Template)
		}
	}
}

// Other loggers name the identity fields their own way: the last word of
// the key tells (git_branch, userLogin, pod_name, host.name), so the same
// defect on two such records is one; a field whose last word is no
// identity (container_image, node_version) is left alone.
func TestIdentityFieldsAsOtherLoggersNameThem(t *testing.T) {
	for _, k := range []string{"git_branch", "userLogin", "pod_name", "host.name", "repoName", "session-id", "traceId", "work_item"} {
		if !incident.IsIdentityField(k) {
			t.Errorf("%s is not taken as identity", k)
		}
	}
	for _, k := range []string{"container_image", "node_version", "logger", "component", "message", "branches_total"} {
		if incident.IsIdentityField(k) {
			t.Errorf("%s is taken as identity", k)
		}
	}
	got := fingerprintAll(t, nil,
		failing(1, time.Second, "deploy.failed", "checkout of feature/cache-fix failed: ref feature/cache-fix is locked by nkarimi", "git_branch", "feature/cache-fix", "userLogin", "nkarimi"),
		failing(2, 2*time.Second, "deploy.failed", "checkout of release/next failed: ref release/next is locked by svc-deploy", "git_branch", "release/next", "userLogin", "svc-deploy"),
	)
	if got[1].Fingerprint != got[2].Fingerprint {
		t.Errorf("one defect, two fingerprints:\n %q\n %q", got[1].Template, got[2].Template)
	}
}

// One component's newer failure does not supersede another component's
// incident on the same work item: the poller's give-up, tied by the work
// item alone, ends the poller's incident, though the webhook's failure on
// that work item is later.
func TestAGiveUpPrefersItsOwnComponentsIncident(t *testing.T) {
	got := fingerprintAll(t, newIndex(),
		failing(1, 0, "poll.report_failed", errLease, "work_item", wiHarbor, "source", "poll"),
		failing(2, time.Minute, "plan.failed", errRender, "work_item", wiHarbor, "source", "webhook", "delivery_id", delivA),
		givingUp(3, 2*time.Minute, "work_item", wiHarbor, "source", "poll"),
	)
	if got[3].Fingerprint != got[1].Fingerprint {
		t.Fatalf("the poller's give-up joined %q, want its own component's %q", got[3].Template, got[1].Template)
	}
}

// An index a cron run of the previous release saved (its fields
// source, harness, branch after the keys) loads by name: the upgrade's
// first run still links a give-up to the failure the last run read.
func TestAnIndexSavedByThePreviousReleaseLoads(t *testing.T) {
	idx := newIndex()
	first := fingerprintAll(t, idx, failing(1, 0, "queue.claim.failed", errLease, "work_item", wiHarbor, "branch", "main"))
	var st store.State
	idx.SaveTo(&st)
	// Rewrite it in the previous layout: keys, then source, harness, branch.
	n := len(incident.KeysOf(idx))
	old := append(append([]string(nil), incident.KeysOf(idx)...), "source", "harness", "branch")
	for i, f := range st.Incidents {
		v := append([]string(nil), f.Values[:n]...)
		v = append(v, f.Values[n+2], f.Values[n], f.Values[n+1]) // source, harness, branch
		st.Incidents[i].Values = v
	}
	st.IncidentKeys = old
	next := newIndex()
	next.LoadFrom(&st)
	got := fingerprintAll(t, next, givingUp(2, 3*time.Minute, "work_item", wiHarbor, "branch", "main"))
	if got[2].Fingerprint != first[1].Fingerprint {
		t.Fatalf("the give-up did not link across the upgrade: %q, want %q", got[2].Fingerprint, first[1].Fingerprint)
	}
	wrong := newIndex()
	st.IncidentKeys = append([]string{"session_key"}, old...) // another correlation config
	wrong.LoadFrom(&st)
	if wrong.Len() != 0 {
		t.Fatal("an index saved under other keys loaded")
	}
}
