package stages

import (
	"fmt"
	"hash/fnv"
	"net/http"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	fakegh "github.com/the-loop/the-loop-diagnose/fakes/github"
	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/store"

	"github.com/the-loop/the-loop-diagnose/stages/issue"
	"github.com/the-loop/the-loop-diagnose/stages/tracker"
)

func TestPostTrailingMarkersCountOnlyWhereTheToolWritesThem(t *testing.T) {
	const fp, other = "v2:0123456789abcdef", "v2:fedcba9876543210"
	m, o := issue.FingerprintMarker(fp), issue.FingerprintMarker(other)
	cases := []struct {
		name, body string
		want       []string
	}{
		{"compose's body", postBody(fp, "```\npanic\n```\n"), []string{fp}},
		{"an older body: the marker alone at the end", "dossier\n" + m + "\n", []string{fp}},
		{"no newline at the end", "dossier\n" + m, []string{fp}},
		{"edited on the web (CRLF), blank lines after", strings.ReplaceAll(postBody(fp, "x\n"), "\n", "\r\n") + "\r\n\r\n", []string{fp}},
		{"a fenced block of log text before ours", postBody(fp, "```\nerror: "+o+"\n"+o+"\n```\n"), []string{fp}},
		{"quoted mid-body only", "## Trigger\n\n```\n" + m + "\n```\n\n## Environment\n\nlinux\n", nil},
		{"quoted in prose mid-line", "see " + m + " here\n" + issue.SelfAuthoredMarker + "\n", nil},
		{"inside a fence left open at the end", "## Trigger\n\n```\nlog\n" + m + "\n" + issue.SelfAuthoredMarker + "\n", nil},
		{"inside a tilde fence left open", "~~~~\n" + m + "\n", nil},
		{"a fence closed before the block", "```\nlog\n```\n" + m + "\n", []string{fp}},
		{"backticks in an info string open no fence", "``` not`a fence\n" + m + "\n", []string{fp}},
		{"indented: a code block, not our line", "text\n\n    " + m + "\n", nil},
		{"followed by text", m + "\n" + issue.SelfAuthoredMarker + "\nthanks, mallory\n", nil},
		{"inside a blockquote", "> " + m + "\n", nil},
		{"a twin that stood down", "body\n<!-- the-loop-diagnose duplicate-of:3 -->\n" + issue.SelfAuthoredMarker + "\n", nil},
		{"the marker's words, not the line", "<!-- the-loop-diagnose fingerprint:" + fp + " --> -->\n", nil},
		{"empty", "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := issue.TrailingMarkers(tc.body); !slices.Equal(got, tc.want) {
				t.Fatalf("got %q, want %q in\n%s", got, tc.want, tc.body)
			}
		})
	}
}

// postFuzzFP is a fingerprint, in the tool's own form, that s does not contain.
func postFuzzFP(parts ...string) string {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
	}
	for i := 0; ; i++ {
		fp := fmt.Sprintf("v2:%016x", h.Sum64()+uint64(i))
		if !slices.ContainsFunc(parts, func(p string) bool { return strings.Contains(p, fp) }) {
			return fp
		}
	}
}

// FuzzPostTrailingMarkers: the parser never panics, names only markers
// that are lines of the body, and a marker inside a fenced block — whatever
// text surrounds it — never counts.
func FuzzPostTrailingMarkers(f *testing.F) {
	f.Add("", "")
	f.Add(postBody("fp", "```\nx\n```\n"), "")
	f.Add("```go\n", "\n"+issue.SelfAuthoredMarker+"\n")
	f.Add("~~~\nlog\n", "````\n")
	f.Add("x\r\n", "\r\n<!-- the-loop-diagnose fingerprint:fp -->\r\n")
	f.Fuzz(func(t *testing.T, before, after string) {
		for _, fp := range issue.TrailingMarkers(before) {
			if !slices.ContainsFunc(strings.Split(before, "\n"), func(l string) bool {
				return strings.TrimRight(l, " \t\r") == issue.FingerprintMarker(fp)
			}) {
				t.Fatalf("%q counted, but is no line of the body:\n%q", fp, before)
			}
		}
		fp := postFuzzFP(before, after)
		// A fenced block holding the marker, with arbitrary text around it;
		// the fence is longer than any backtick run in it, as compose's are.
		body := issue.CloseFences(before) + "\n`````\n" + issue.FingerprintMarker(fp) + "\n" + issue.SelfAuthoredMarker + "\n`````\n" + after
		if slices.Contains(issue.TrailingMarkers(body), fp) {
			t.Fatalf("a marker inside a fence counted:\n%q", body)
		}
		// The same block left open at the end of the body.
		open := issue.CloseFences(before) + "\n```\n" + issue.FingerprintMarker(fp) + "\n" + issue.SelfAuthoredMarker + "\n"
		if slices.Contains(issue.TrailingMarkers(open), fp) {
			t.Fatalf("a marker inside an open fence counted:\n%q", open)
		}
		// What the tool files, with that text in its body, counts for the
		// tool's fingerprint alone.
		if utf8.ValidString(before) && utf8.ValidString(after) {
			filed, _ := issue.FitBody(postBody(fp, "```\n"+before+"\n```\n")+after+"\n", []string{fp}, tracker.MaxBody)
			if got := issue.TrailingMarkers(filed); !slices.Equal(got, []string{fp}) {
				t.Fatalf("a filed body counts for %q, want only %q:\n%q", got, fp, filed)
			}
		}
	})
}

func TestValidLogin(t *testing.T) {
	for _, ok := range []string{"loop-bot", "a", "Octo-Cat9", "my-app[bot]", strings.Repeat("a", 39), strings.Repeat("b", 39) + "[bot]"} {
		if !ValidLogin(ok) {
			t.Errorf("%q rejected", ok)
		}
	}
	for _, bad := range []string{"", "-bot", "bot-", "a--b", "a b", "@mallory", "a_b", "[bot]", "app[bot][bot]", "app[BOT]x", strings.Repeat("a", 40), "loop-bot\n"} {
		if ValidLogin(bad) {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestPostTrustsOnlyItsOwnLoginAndTrustedAuthors(t *testing.T) {
	p := &poster{login: "Loop-Bot", cfg: PostConfig{TrustedAuthors: []string{"Fleet-App[bot]", "loop-bot-2"}}}
	for login, want := range map[string]bool{
		"loop-bot": true, "LOOP-BOT": true, "fleet-app[bot]": true, "LOOP-BOT-2": true,
		"": false, "mallory": false, "loop-bot2": false, "fleet-app": false, "loop-bot[bot]": false, "loop-bot ": false,
	} {
		if got := p.trusts(login); got != want {
			t.Errorf("trusts(%q) = %v, want %v", login, got, want)
		}
	}
	if (&poster{}).trusts("anyone") {
		t.Error("with no login known and none configured, someone was trusted")
	}
}

// strangerIssue is an issue mallory opened, its body shaped exactly like
// the tool's, carrying fp's marker where the tool writes it.
func strangerIssue(fp string, closed bool) fakegh.Issue {
	is := fakegh.Issue{Title: "[self-diagnosed] frobnicator panics", Body: postBody(fp, "```\npanic: nil map\n```\n"), Login: "mallory"}
	if closed {
		is.State, is.StateReason = "closed", "not_planned"
	}
	return is
}

// noWritesTo fails when any request but a read touched issue n.
func noWritesTo(t *testing.T, srv *fakegh.Server, n int) {
	t.Helper()
	for _, r := range srv.Requests() {
		if r.Method != http.MethodGet && strings.Contains(r.Path, fmt.Sprintf("/issues/%d", n)) {
			t.Fatalf("wrote to the stranger's issue #%d: %s %s", n, r.Method, r.Path)
		}
	}
}

func TestPostAStrangersIssueWithTheMarkerDoesNotStopTheFiling(t *testing.T) {
	for _, closed := range []bool{false, true} {
		t.Run(fmt.Sprintf("closed as not planned %v", closed), func(t *testing.T) {
			h := newPostHarness(t, fakegh.Options{}, "")
			n := h.srv.AddIssue(strangerIssue("fp-m", closed))
			o := h.runOne(t, postReport("fp-m"))
			if o.Status != pipeline.StatusFiled || o.Number == n {
				t.Fatalf("outcome %+v: want the defect filed as an issue of its own", o)
			}
			if is, _ := h.srv.Issue(o.Number); is.Login != "loop-bot" {
				t.Fatalf("filed by %q", is.Login)
			}
			if _, dismissed := h.state().Dismissed["fp-m"]; dismissed {
				t.Fatal("recorded as dismissed by the stranger's close")
			}
			noWritesTo(t, h.srv, n)
			if len(h.srv.Comments(n)) != 0 {
				t.Fatal("commented on the stranger's issue")
			}
			got := h.state().ForeignMarkers
			if len(got) != 1 || got[0].Number != n || got[0].Login != "mallory" || got[0].Fingerprint != "fp-m" || got[0].URL == "" {
				t.Fatalf("foreign markers in state: %+v", got)
			}
			log := h.log.String()
			if strings.Count(log, "not trusted") != 1 || !strings.Contains(log, `"login":"mallory"`) ||
				!strings.Contains(log, fmt.Sprintf(`"issue":%d`, n)) || !strings.Contains(log, `"fingerprint":"fp-m"`) {
				t.Fatalf("want one warning naming login, issue and fingerprint:\n%s", log)
			}
			// Right after our create, the stranger's earlier open issue is
			// no twin to stand down for.
			if ours, _ := h.srv.Issue(o.Number); ours.State != "open" {
				t.Fatalf("our issue stood down for the stranger's: %+v", ours)
			}
		})
	}
}

func TestPostAStrangersIssueAppearingDuringTheCreateIsNoTwin(t *testing.T) {
	h := newPostHarness(t, fakegh.Options{}, "")
	h.srv.Inject(fakegh.RouteCreateIssue, fakegh.Fault{Before: func() { h.srv.AddIssue(strangerIssue("fp-t", false)) }})
	o := h.runOne(t, postReport("fp-t"))
	ours, _ := h.srv.Issue(o.Number)
	if o.Status != pipeline.StatusFiled || o.Number != 2 || ours.State != "open" || !strings.Contains(ours.Body, issue.FingerprintMarker("fp-t")) {
		t.Fatalf("outcome %+v, our issue %+v: want ours filed and kept", o, ours)
	}
	noWritesTo(t, h.srv, 1)
}

func TestPostAMarkerQuotedInOurOwnIssueIsNotThatIssuesFingerprint(t *testing.T) {
	h := newPostHarness(t, fakegh.Options{}, "")
	// Our issue for fp-a quotes a log line that carries fp-b's marker.
	r := postReport("fp-a")
	r.Body = postBody("fp-a", "```\nerror: boom "+issue.FingerprintMarker("fp-b")+"\n"+issue.FingerprintMarker("fp-b")+"\n```\n")
	a := h.runOne(t, r)
	b := h.withFreshState().runOne(t, postReport("fp-b"))
	if a.Status != pipeline.StatusFiled || b.Status != pipeline.StatusFiled || a.Number == b.Number {
		t.Fatalf("outcomes %+v and %+v: want two issues", a, b)
	}
	if len(h.srv.Comments(a.Number)) != 0 {
		t.Fatal("fp-b's sighting was counted on fp-a's issue")
	}
}

func TestPostAStrangersIssueRecordedInStateIsForgotten(t *testing.T) {
	t.Run("a known defect", func(t *testing.T) {
		h := newPostHarness(t, fakegh.Options{}, "")
		n := h.srv.AddIssue(strangerIssue("fp-s", true))
		// An older version believed the marker and recorded the issue.
		h.st.Mutate(func(st *store.State) {
			st.Reported.Set("fp-s", store.Reported{Number: n, URL: h.srv.URL() + "/acme/widgets/issues/1"})
			st.Issues.Set("fp-s", store.IssueRef{Number: n, State: "closed", StateReason: "not_planned"})
		})
		h.runOne(t, known(postReport("fp-s")))
		noWritesTo(t, h.srv, n)
		if h.state().Reported.Has("fp-s") {
			t.Fatal("the stranger's issue is still recorded as the defect's: it would never be filed")
		}
		if _, ok := h.state().Dismissed["fp-s"]; ok {
			t.Fatal("recorded as dismissed")
		}
	})
	t.Run("a new defect", func(t *testing.T) {
		h := newPostHarness(t, fakegh.Options{}, "")
		n := h.srv.AddIssue(strangerIssue("fp-s", false))
		h.st.Mutate(func(st *store.State) { st.Issues.Set("fp-s", store.IssueRef{Number: n, State: "open"}) })
		if o := h.runOne(t, postReport("fp-s")); o.Status != pipeline.StatusFiled || o.Number == n {
			t.Fatalf("outcome %+v", o)
		}
		noWritesTo(t, h.srv, n)
	})
}

func TestPostWithoutGetUser(t *testing.T) {
	t.Run("trustedAuthors names the app", func(t *testing.T) {
		h := newPostHarness(t, fakegh.Options{}, "")
		h.cfg.TrustedAuthors = []string{"loop-bot"}
		h.srv.Inject(fakegh.RouteUser, fakegh.NoPermission())
		n := h.srv.AddIssue(fakegh.Issue{Title: "t", Body: postBody("fp-u", "x"), Login: "loop-bot"})
		if o := h.runOne(t, postReport("fp-u")); o.Status != pipeline.StatusKnown || o.Number != n {
			t.Fatalf("outcome %+v", o)
		}
	})
	t.Run("nothing configured", func(t *testing.T) {
		h := newPostHarness(t, fakegh.Options{}, "")
		h.srv.Inject(fakegh.RouteUser, fakegh.NoPermission())
		h.srv.AddIssue(strangerIssue("fp-v", false))
		// Another deployment with the same token files fp-w while ours is
		// being created.
		h.srv.Inject(fakegh.RouteCreateIssue, fakegh.Fault{}, fakegh.Fault{Before: func() {
			h.srv.AddIssue(fakegh.Issue{Title: "t", Body: postBody("fp-w", "x"), Login: "loop-bot"})
		}})
		out, err := h.run(t, postReport("fp-v"), postReport("fp-w"))
		if err != nil || out[0].Status != pipeline.StatusFiled || out[0].Number != 2 {
			t.Fatalf("outcomes %+v, %v: want fp-v filed despite mallory's #1", out, err)
		}
		if !strings.Contains(h.log.String(), "trustedAuthors") {
			t.Fatalf("no hint about selfDiagnosis.trustedAuthors:\n%s", h.log.String())
		}
		// The first create told who the token is, so the twin check trusts
		// the same login's earlier issue: ours (#4) stands down for #3.
		if out[1].Status != pipeline.StatusKnown || out[1].Number != 3 {
			t.Fatalf("outcome %+v: want the earlier twin #3 kept", out[1])
		}
		noWritesTo(t, h.srv, 1)
	})
	t.Run("the login a create showed is remembered for later scans", func(t *testing.T) {
		h := newPostHarness(t, fakegh.Options{}, "")
		h.srv.Inject(fakegh.RouteUser, fakegh.NoPermission(), fakegh.NoPermission())
		if o := h.runOne(t, postReport("fp-x")); o.Status != pipeline.StatusFiled {
			t.Fatalf("outcome %+v", o)
		}
		if got := h.state().IssueLogin; got != "loop-bot" {
			t.Fatalf("state keeps issue_login %q, want the author GitHub gave the created issue", got)
		}
		// A later scan, GET /user still forbidden: an issue of the same
		// login (filed by a run that died before recording it) is known.
		n := h.srv.AddIssue(fakegh.Issue{Title: "t", Body: postBody("fp-y", "x"), Login: "loop-bot"})
		if o := h.runOne(t, postReport("fp-y")); o.Status != pipeline.StatusKnown || o.Number != n {
			t.Fatalf("outcome %+v: want #%d known", o, n)
		}
		if c := h.srv.CountCreates(); c != 1 {
			t.Fatalf("%d creates: the second scan filed a twin of its own issue before recognising it", c)
		}
	})
}

func TestPostListsEachTrustedAuthorsIssuesBeforeScanningRecentOnes(t *testing.T) {
	h := newPostHarness(t, fakegh.Options{}, "")
	h.cfg.TrustedAuthors = []string{"loop-bot-2", "LOOP-BOT"} // the token's own is listed once
	is := strangerIssue("fp-l", false)
	is.Login = "loop-bot-2" // filed without the label (a token without triage rights)
	n := h.srv.AddIssue(is)
	if o := h.runOne(t, postReport("fp-l")); o.Status != pipeline.StatusKnown || o.Number != n {
		t.Fatalf("outcome %+v", o)
	}
	var creators []string
	for _, r := range h.srv.RequestsTo(fakegh.RouteListIssues) {
		if r.Query.Get("labels") == "" {
			creators = append(creators, r.Query.Get("creator"))
		}
	}
	if !slices.Equal(creators, []string{"loop-bot", "loop-bot-2"}) {
		t.Fatalf("unlabelled list queries by creator %q, want loop-bot then loop-bot-2 and no unfiltered scan", creators)
	}
}
