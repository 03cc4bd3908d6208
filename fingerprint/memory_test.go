package fingerprint

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// learnAll feeds each text's v3 template to m, in order, and returns the
// canonical fingerprint of each after all were learned.
func learnAll(m *Memory, event string, texts []string) []string {
	var fps, tmpls []string
	for _, s := range texts {
		r := Compute(Input{Event: event, Error: s})
		m.Learn(event, r.Template, r.Fingerprint)
		fps, tmpls = append(fps, r.Fingerprint), append(tmpls, r.Template)
	}
	out := make([]string, len(texts))
	for i := range texts {
		out[i] = m.Canonical(event, tmpls[i], fps[i]).Canonical
	}
	return out
}

func distinct(xs []string) int {
	seen := map[string]bool{}
	for _, x := range xs {
		seen[x] = true
	}
	return len(seen)
}

// A word that takes MemoryThreshold distinct values around an otherwise
// equal message is data: every variant, earlier ones too, resolves to the
// first-seen fingerprint.
func TestMemoryMergesAWordThatVaries(t *testing.T) {
	users := []string{"root", "oracle", "postgres", "deploy", "nagios", "test"}
	var texts []string
	for i, u := range users {
		texts = append(texts, fmt.Sprintf("Failed password for %s from 10.0.%d.7 port %d ssh2", u, i, 40000+i))
	}
	m := NewMemory(&MemoryState{})
	got := learnAll(m, "sshd.auth", texts[:MemoryThreshold-1])
	if distinct(got) != MemoryThreshold-1 {
		t.Fatalf("below the threshold the variants must stay apart: %v", got)
	}
	got = learnAll(m, "sshd.auth", texts)
	if distinct(got) != 1 {
		t.Fatalf("%d fingerprints for one defect: %v", distinct(got), got)
	}
	first := Compute(Input{Event: "sshd.auth", Error: texts[0]}).Fingerprint
	if got[0] != first {
		t.Errorf("canonical %s, want the first-seen %s", got[0], first)
	}
	// A variant never seen before joins the family at once.
	r := Compute(Input{Event: "sshd.auth", Error: "Failed password for jenkins from 10.9.9.9 port 1 ssh2"})
	f := m.Canonical("sshd.auth", r.Template, r.Fingerprint)
	if f.Canonical != first || f.Pattern == "" || !IsPattern(f.PatternFP) {
		t.Errorf("a new variant: %+v", f)
	}
	// Every variant seen is a member, the ones seen before the family too:
	// each may have been filed.
	for _, s := range texts {
		if fp := Compute(Input{Event: "sshd.auth", Error: s}).Fingerprint; !slices.Contains(f.Members, fp) {
			t.Errorf("%s (%q) is not a member of its family %v", fp, s, f.Members)
		}
	}
	// A specific text is one defect whatever event logged it (identityEvent):
	// its family holds under another event too.
	if c := m.Canonical("other", r.Template, Compute(Input{Event: "other", Error: texts[0]}).Fingerprint).Canonical; c != first {
		t.Errorf("another event's identical specific text: %s, want the family's %s", c, first)
	}
}

// What the normalizer kept as identity never merges, however many values.
func TestMemoryNeverMergesIdentity(t *testing.T) {
	cases := map[string][]string{
		"status codes":      {"upstream answered HTTP 404 for the catalog request", "upstream answered HTTP 500 for the catalog request", "upstream answered HTTP 502 for the catalog request", "upstream answered HTTP 503 for the catalog request", "upstream answered HTTP 401 for the catalog request"},
		"exit statuses":     {"worker exited with exit 1 after the job finished", "worker exited with exit 2 after the job finished", "worker exited with exit 137 after the job finished", "worker exited with exit 139 after the job finished"},
		"failure classes":   {"ValueError: could not parse the order line", "KeyError: could not parse the order line", "TypeError: could not parse the order line", "IndexError: could not parse the order line", "RuntimeError: could not parse the order line"},
		"subcommands":       {"git push failed: exit status 128 while syncing the worktree", "git fetch failed: exit status 128 while syncing the worktree", "git clone failed: exit status 128 while syncing the worktree", "git rebase failed: exit status 128 while syncing the worktree"},
		"objects":           {"kernel registered new driver hub on the bus today", "kernel registered new driver usbfs on the bus today", "kernel registered new driver usbhid on the bus today", "kernel registered new driver hiddev on the bus today"},
		"states":            {"[instance: <*>] VM Resumed (Lifecycle Event) from the hypervisor", "[instance: <*>] VM Paused (Lifecycle Event) from the hypervisor", "[instance: <*>] VM Stopped (Lifecycle Event) from the hypervisor", "[instance: <*>] VM Started (Lifecycle Event) from the hypervisor"},
		"short messages":    {"connection refused", "connection reset", "connection aborted", "connection closed", "connection dropped"},
		"the first word":    {"reading the config file failed", "writing the config file failed", "parsing the config file failed", "loading the config file failed"},
		"routes":            {"GET /users/list returned an error page", "GET /orders/list returned an error page", "GET /invoices/list returned an error page", "GET /carts/list returned an error page"},
		"key=value enums":   {"queue stalled with mode=fast in the scheduler loop", "queue stalled with mode=slow in the scheduler loop", "queue stalled with mode=batch in the scheduler loop", "queue stalled with mode=single in the scheduler loop"},
		"assertion numbers": {"assert 404 == 201 in test_create_user", "assert 500 == 201 in test_create_user", "assert 400 == 201 in test_create_user", "assert 409 == 201 in test_create_user"},
	}
	for name, texts := range cases {
		m := NewMemory(&MemoryState{})
		learnAll(m, "e", texts)
		got := learnAll(m, "e", texts)
		if distinct(got) != distinct(fpsOf("e", texts)) {
			t.Errorf("%s: merged into %d fingerprints, the normalizer gave %d", name, distinct(got), distinct(fpsOf("e", texts)))
		}
	}
}

func fpsOf(event string, texts []string) []string {
	var out []string
	for _, s := range texts {
		out = append(out, Compute(Input{Event: event, Error: s}).Fingerprint)
	}
	return out
}

// Two deployments that see a defect's variants in different orders agree on
// the family's pattern fingerprint, which the issue marker carries.
func TestMemoryPatternIsTheSameWhateverTheOrder(t *testing.T) {
	variants := func(names ...string) []string {
		var out []string
		for _, n := range names {
			out = append(out, fmt.Sprintf("could not acquire the advisory lock held by %s during migration", n))
		}
		return out
	}
	a, b := NewMemory(&MemoryState{}), NewMemory(&MemoryState{})
	learnAll(a, "migrate.failed", variants("scheduler", "janitor", "importer", "exporter"))
	learnAll(b, "migrate.failed", variants("reaper", "indexer", "mailer", "billing"))
	probe := Compute(Input{Event: "migrate.failed", Error: variants("webhooks")[0]})
	fa := a.Canonical("migrate.failed", probe.Template, probe.Fingerprint)
	fb := b.Canonical("migrate.failed", probe.Template, probe.Fingerprint)
	if fa.PatternFP == "" || fa.PatternFP != fb.PatternFP || fa.Pattern != fb.Pattern {
		t.Fatalf("patterns differ: %+v vs %+v", fa, fb)
	}
	if fa.Canonical == fb.Canonical {
		t.Errorf("each deployment's canonical is its own first-seen variant; got the same %s", fa.Canonical)
	}
}

// The memory survives the state file: learned families resolve the same
// after a JSON round trip, and the slot count stays bounded.
func TestMemoryPersistsAndStaysBounded(t *testing.T) {
	st := &MemoryState{}
	m := NewMemory(st)
	texts := []string{}
	for _, u := range []string{"alpha", "bravo", "charlie", "delta", "echo"} {
		texts = append(texts, "cache shard owned by "+u+" refused the write request")
	}
	want := learnAll(m, "cache.write", texts)
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var back MemoryState
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	got := learnAll(NewMemory(&back), "cache.write", texts)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("after a round trip %s, before %s", got[i], want[i])
		}
	}
	for i := 0; i < memoryMaxSlots/4; i++ {
		m.Learn("noise", fmt.Sprintf("distinct message number %c%c%c about things", 'a'+i%26, 'a'+i/26%26, 'a'+i/676%26), versionedFingerprint(Version, "noise", "x"))
		r := Compute(Input{Event: "noise", Error: fmt.Sprintf("unrelated failure kind %c%c%c in the storage layer", 'a'+i%26, 'a'+i/26%26, 'a'+i/676%26)})
		m.Learn("noise", r.Template, r.Fingerprint)
	}
	if len(st.Slots) > memoryMaxSlots {
		t.Fatalf("%d slots kept, more than %d", len(st.Slots), memoryMaxSlots)
	}
	probe := Compute(Input{Event: "cache.write", Error: texts[4]})
	if c := m.Canonical("cache.write", probe.Template, probe.Fingerprint).Canonical; c != want[0] {
		t.Error("forgetting idle slots lost a learned family")
	}
}

// An operator's rule decided its fingerprint: the memory leaves it alone.
func TestMemoryLeavesRuleFingerprintsAlone(t *testing.T) {
	m := NewMemory(&MemoryState{})
	for _, u := range []string{"a1x", "bravo", "charlie", "delta", "echo", "foxtrot"} {
		tmpl := "cache shard owned by " + u + " refused the write request"
		m.Learn("e", tmpl, "v2:0000000000000001")
	}
	if len(m.st.Slots) != 0 {
		t.Errorf("learned from a rule's fingerprint: %d slots", len(m.st.Slots))
	}
}

// A value a message echoes, given as an option's argument ("--delete X:
// unable to delete 'X'"), is one value at both places: branches without a
// digit, which the normalizer keeps, merge once enough of them are seen;
// a variant the normalizer masked counts as one of them.
func TestMemoryMergesAnEchoedOptionArgument(t *testing.T) {
	msg := func(branch string) string {
		return fmt.Sprintf("git push origin --delete %s: exit status 1: error: unable to delete '%s': remote ref does not exist", branch, branch)
	}
	branches := []string{"feature/cache-fix", "release/next", "hotfix-login", "main", "docs/typo"}
	var texts []string
	for _, b := range branches {
		texts = append(texts, msg(b))
	}
	m := NewMemory(&MemoryState{})
	if got := learnAll(m, "git.push.failed", texts); distinct(got) != 1 {
		t.Errorf("%d fingerprints for one defect's branches: %v", distinct(got), got)
	}
	// Two kept words and one the normalizer masked (a per-run branch).
	m = NewMemory(&MemoryState{})
	got := learnAll(m, "git.push.failed", []string{msg("release/next"), msg("the-loop/7443-test-support-e978d3"), msg("main")})
	if distinct(got) != 1 {
		t.Errorf("a masked variant and two words: %d fingerprints", distinct(got))
	}
	// Two words alone are not enough evidence.
	m = NewMemory(&MemoryState{})
	if got := learnAll(m, "git.push.failed", []string{msg("feature/ghes-crash"), msg("main")}); distinct(got) != 2 {
		t.Errorf("two values merged without evidence")
	}
}

// An option's argument that names a file, a quoted name standing alone and
// an option's value that changes the rest of the message stay identity.
func TestMemoryKeepsFilesAndQuotedNamesAfterOptions(t *testing.T) {
	cases := map[string][]string{
		"files": {"lint failed: --config ci/lint.yaml is not valid for this runner", "lint failed: --config ci/eslint.json is not valid for this runner",
			"lint failed: --config ci/ruff.toml is not valid for this runner", "lint failed: --config ci/golangci.yml is not valid for this runner"},
		"quoted names": {"KeyError: 'email' while rendering the invoice template", "KeyError: 'name' while rendering the invoice template",
			"KeyError: 'address' while rendering the invoice template", "KeyError: 'phone' while rendering the invoice template"},
		"columns": {`pq: column "email" does not exist in relation accounts`, `pq: column "handle" does not exist in relation accounts`,
			`pq: column "avatar" does not exist in relation accounts`, `pq: column "locale" does not exist in relation accounts`},
	}
	for name, texts := range cases {
		m := NewMemory(&MemoryState{})
		learnAll(m, "e", texts)
		if got := learnAll(m, "e", texts); distinct(got) != distinct(fpsOf("e", texts)) {
			t.Errorf("%s: merged into %d fingerprints, the normalizer gave %d", name, distinct(got), distinct(fpsOf("e", texts)))
		}
	}
}

// Off an argument position, a word is data where another variant of the
// message had the value masked (the record's identity, a per-run name):
// "<*> is not a collaborator" makes "ci", "build" and "runner" there data.
// Without a masked variant such words stay identity.
func TestMemoryLearnsDataWhereAVariantWasMasked(t *testing.T) {
	msg := func(who string) string {
		return "assign: " + who + " is not a collaborator on this repository, so the issue stays unassigned"
	}
	m := NewMemory(&MemoryState{})
	texts := []string{msg("a81f3c9e02"), msg("ci"), msg("build"), msg("runner")}
	if got := learnAll(m, "github.assign.failed", texts); distinct(got) != 1 {
		t.Errorf("%d fingerprints for one defect: %v", distinct(got), got)
	}
	m = NewMemory(&MemoryState{})
	words := []string{msg("alice"), msg("ci"), msg("build"), msg("runner")}
	if got := learnAll(m, "github.assign.failed", words); distinct(got) != len(words) {
		t.Errorf("words with no masked variant merged: %d fingerprints", distinct(got))
	}
}

// CanonicalOf, which remembers its answers until a slot turns variable,
// always says what Canonical on an unmemoized copy of the memory says, as
// templates of several shapes are learned in a random order and families
// form (a watcher asks it of its whole backlog after every scan's learning).
func TestCanonicalOfAgreesWithCanonicalWhileFamiliesForm(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	shapes := []string{
		"Failed password for %s from 10.0.0.%d port 22 ssh2",
		"open %s/config.yaml: permission denied (attempt %d)",
		"worker %s lost its lease after %d renewals",
		"queue %s is full: %d items waiting",
	}
	words := []string{"root", "oracle", "deploy", "nagios", "alpha", "bravo", "charlie", "delta", "echo", "foxtrot"}
	type seen struct{ event, template, fp string }
	var known []seen
	m := NewMemory(&MemoryState{})
	for step := 0; step < 400; step++ {
		event := []string{"auth.failed", "config.failed"}[rng.IntN(2)]
		text := fmt.Sprintf(shapes[rng.IntN(len(shapes))], words[rng.IntN(len(words))], rng.IntN(9))
		r := Compute(Input{Event: event, Error: text})
		m.Learn(event, r.Template, r.Fingerprint)
		known = append(known, seen{event, r.Template, r.Fingerprint})
		for _, k := range known[max(0, len(known)-30):] {
			want := NewMemory(m.st.Clone()).Canonical(k.event, k.template, k.fp).Canonical
			if got := m.CanonicalOf(k.event, k.template, k.fp); got != want {
				t.Fatalf("step %d: CanonicalOf(%q) = %v, Canonical on a copy says %v", step, k.template, got, want)
			}
		}
	}
	if len(m.st.Families) == 0 {
		t.Fatal("no family formed: the test exercised nothing")
	}
}
