// Package tracker is the issue tracker the post stage files on, behind one
// interface: Tracker. GitHub implements it on go-github with everything the
// wire needs — the token and host guard (NewClient), pacing of writes,
// retries with backoff, rate-limit waits, and the classification of a
// failure into pipeline's failure classes (outage, setup, in doubt,
// deferral). Memory implements it in memory for the post stage's protocol
// tests. The exactly-once protocol itself (markers, intents, twins) is the
// post stage's, in package stages; nothing here knows a fingerprint.
package tracker

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// GitHub's size limits, in characters (runes).
const (
	MaxBody  = 65536
	MaxTitle = 256
)

// Tracker is what the post stage asks of an issue tracker. Every method
// returns pipeline's failure classes for what is not this request's own
// failure (*pipeline.SetupError, *pipeline.OutageError,
// *pipeline.DeferralError, *pipeline.InDoubtError) and a *Refused for a
// request the tracker answered and refused.
type Tracker interface {
	// Login is the token's own login; "" when the tracker may not say (a
	// GitHub App's installation token may not read /user).
	Login(ctx context.Context) (string, error)
	// Issue is issue n; nil when it is gone (deleted, transferred).
	Issue(ctx context.Context, n int) (*Issue, error)
	// ListIssues calls each for the issues q selects, newest first (oldest
	// first with q.Oldest), until each returns false or q.Pages pages of
	// 100 are read.
	ListIssues(ctx context.Context, q Query, each func(Issue) bool) error
	// Create files an issue. It is sent once: a failure that leaves its
	// outcome unknown is a *pipeline.InDoubtError at once; before a create
	// refused by a rate limit is sent again, recheck (when given) is asked
	// whether it exists after all — done ends Create with (nil, nil).
	Create(ctx context.Context, req NewIssue, recheck Recheck) (*Issue, error)
	// Edit changes issue n's body and/or state (close as a duplicate, reopen).
	Edit(ctx context.Context, n int, e Edit) (*Issue, error)
	// Comment adds a comment to issue n; before it is sent again after a
	// failure, recheck (when given) is asked whether it landed — done ends
	// Comment with (nil, nil).
	Comment(ctx context.Context, n int, body string, recheck Recheck) (*Comment, error)
	// EditComment replaces comment id's body; a *Refused with status 404
	// when it was deleted.
	EditComment(ctx context.Context, id int64, body string) error
	// ListComments calls each for issue n's comments, oldest first, until
	// each returns false.
	ListComments(ctx context.Context, n int, each func(Comment) bool) error
	// EnsureLabel creates the label when it is missing. An error wraps
	// ErrLabelMissing when the label is known to be missing (and
	// ErrLabelForbidden when the token may not create it).
	EnsureLabel(ctx context.Context, l Label) error
}

// Recheck looks, before a write is sent again, whether it landed after
// all; done ends the write as a success (the caller keeps what it found).
type Recheck func(ctx context.Context) (done bool, err error)

// Issue is an issue as the post protocol reads it.
type Issue struct {
	Number      int
	URL         string // the issue's page
	Title, Body string
	State       string // "open" or "closed"
	StateReason string // "completed", "not_planned", "duplicate", "reopened" or ""
	Labels      []string
	Author      string // the login that filed it
}

// HasLabel reports whether the issue carries label (case-insensitive, as
// GitHub compares label names).
func (is *Issue) HasLabel(label string) bool {
	for _, l := range is.Labels {
		if strings.EqualFold(l, label) {
			return true
		}
	}
	return false
}

// Comment is an issue comment.
type Comment struct {
	ID     int64
	Body   string
	Author string
}

// Query selects issues for ListIssues. State is "open" or "all".
type Query struct {
	Label   string
	Creator string
	State   string
	Oldest  bool // oldest first; newest first otherwise
	Pages   int  // at most this many pages of 100; 0: all
}

// NewIssue is an issue to create.
type NewIssue struct {
	Title, Body string
	Labels      []string
}

// Edit is a change to an issue; nil fields stay as they are.
type Edit struct {
	Body        *string
	State       *string
	StateReason *string
}

// Label is a label to ensure.
type Label struct {
	Name, Color, Description string
}

// ErrLabelMissing and ErrLabelForbidden are what EnsureLabel learned.
var (
	ErrLabelMissing   = errors.New("the label does not exist")
	ErrLabelForbidden = fmt.Errorf("%w and the token may not create it", ErrLabelMissing)
)

// Refused is a request the tracker answered and refused (a 4xx about this
// request): no retry will change the answer.
type Refused struct {
	Op      string // what was asked, e.g. "create issue"
	Status  int    // the HTTP status
	Message string // the tracker's own message
	Err     error
}

func (e *Refused) Error() string { return e.Op + ": " + e.Err.Error() }
func (e *Refused) Unwrap() error { return e.Err }

// StatusOf is the HTTP status of a refused request; 0 for any other error.
func StatusOf(err error) int {
	var r *Refused
	if errors.As(err, &r) {
		return r.Status
	}
	return 0
}
