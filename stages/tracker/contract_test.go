package tracker

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	fakegh "github.com/the-loop/the-loop-diagnose/fakes/github"
)

// Memory stands in for GitHub in the post stage's protocol tests, so it must
// answer as GitHub does where the protocol cares: the same scenario runs
// against GitHub (on fakes/github) and Memory, with the same answers.
func TestMemoryAnswersAsGitHubDoes(t *testing.T) {
	const label = "the-loop: self-diagnosed"
	impls := map[string]func(t *testing.T) (Tracker, func(author string) int){
		"github": func(t *testing.T) (Tracker, func(string) int) {
			srv := fakegh.New(fakegh.Options{})
			t.Cleanup(srv.Close)
			c, err := NewGitHubClient(srv.APIURL(), func(k string) string {
				return map[string]string{"GH_ENTERPRISE_TOKEN": "test-token"}[k]
			})
			if err != nil {
				t.Fatal(err)
			}
			g, err := NewGitHub(c, GitHubConfig{Repo: srv.Repo(), Now: time.Now})
			if err != nil {
				t.Fatal(err)
			}
			return g, func(author string) int { return srv.AddIssue(fakegh.Issue{Title: "theirs", Body: "x", Login: author}) }
		},
		"memory": func(t *testing.T) (Tracker, func(string) int) {
			m := NewMemory("acme/widgets", "loop-bot")
			return m, func(author string) int { return m.Add(Issue{Title: "theirs", Body: "x", Author: author}) }
		},
	}
	for name, open := range impls {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			tr, add := open(t)
			stranger := add("stranger")
			if login, err := tr.Login(ctx); err != nil || login != "loop-bot" {
				t.Fatalf("Login: %q, %v", login, err)
			}
			if err := tr.EnsureLabel(ctx, Label{Name: label, Color: "d93f0b"}); err != nil {
				t.Fatalf("EnsureLabel: %v", err)
			}
			is, err := tr.Create(ctx, NewIssue{Title: "ours", Body: "body", Labels: []string{label}}, nil)
			if err != nil || is.Number != stranger+1 || is.Author != "loop-bot" || !is.HasLabel(label) || is.State != "open" || is.URL == "" {
				t.Fatalf("Create: %+v, %v", is, err)
			}
			numbers := func(q Query) []int {
				var ns []int
				if err := tr.ListIssues(ctx, q, func(is Issue) bool { ns = append(ns, is.Number); return true }); err != nil {
					t.Fatalf("ListIssues %+v: %v", q, err)
				}
				return ns
			}
			for _, tc := range []struct {
				q    Query
				want []int
			}{
				{Query{Label: label, State: "all"}, []int{is.Number}},
				{Query{Creator: "loop-bot", State: "all"}, []int{is.Number}},
				{Query{State: "all"}, []int{is.Number, stranger}},
				{Query{State: "open", Oldest: true, Pages: 1}, []int{stranger, is.Number}},
			} {
				if got := numbers(tc.q); !slices.Equal(got, tc.want) {
					t.Errorf("ListIssues %+v: %v, want %v", tc.q, got, tc.want)
				}
			}
			if gone, err := tr.Issue(ctx, 99); gone != nil || err != nil {
				t.Fatalf("a missing issue: %+v, %v", gone, err)
			}
			closed, reason := "closed", "not_planned"
			if e, err := tr.Edit(ctx, is.Number, Edit{State: &closed, StateReason: &reason}); err != nil || e.State != "closed" || e.StateReason != "not_planned" {
				t.Fatalf("close: %+v, %v", e, err)
			}
			if got := numbers(Query{State: "open"}); !slices.Equal(got, []int{stranger}) {
				t.Fatalf("open issues after the close: %v", got)
			}
			openState := "open"
			if e, err := tr.Edit(ctx, is.Number, Edit{State: &openState}); err != nil || e.State != "open" {
				t.Fatalf("reopen: %+v, %v", e, err)
			}
			c, err := tr.Comment(ctx, is.Number, "hello", nil)
			if err != nil || c.ID == 0 || c.Author != "loop-bot" {
				t.Fatalf("Comment: %+v, %v", c, err)
			}
			if err := tr.EditComment(ctx, c.ID, "bye"); err != nil {
				t.Fatalf("EditComment: %v", err)
			}
			var bodies []string
			if err := tr.ListComments(ctx, is.Number, func(c Comment) bool { bodies = append(bodies, c.Body); return true }); err != nil || !slices.Equal(bodies, []string{"bye"}) {
				t.Fatalf("ListComments: %v, %v", bodies, err)
			}
			if err := tr.EditComment(ctx, c.ID+1000, "x"); StatusOf(err) != http.StatusNotFound {
				t.Fatalf("editing a deleted comment: %v, want a 404 refusal", err)
			}
		})
	}
}
