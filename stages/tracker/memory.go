package tracker

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// Memory is a Tracker held in memory, for the post stage's protocol tests.
// It behaves as GitHub does where the protocol cares: issues are numbered
// from 1 in the order filed, lists come newest first, a label that does not
// exist is dropped from a create (as GitHub drops one the token may not
// create), comments keep their ids, and a failure can be injected into any
// operation — before it acts, or after (an answer lost on the way back).
// It neither paces nor retries: a failure is returned as injected.
type Memory struct {
	// Repo names the issues' URLs ("owner/name").
	Repo string
	// Me is the login the token files as; HideLogin makes Login say "" (a
	// GitHub App's token that may not read /user).
	Me        string
	HideLogin bool
	// MayCreateLabels lets EnsureLabel create a missing label.
	MayCreateLabels bool

	mu       sync.Mutex
	issues   []*Issue // by number - 1
	comments map[int][]*Comment
	nextID   int64
	labels   []string
	faults   map[string][]fault
	calls    []string
}

type fault struct {
	err   error
	after bool // act, then fail
}

// The operations a failure can be injected into, as Fail names them.
const (
	OpLogin        = "login"
	OpIssue        = "issue"
	OpListIssues   = "list issues"
	OpCreate       = "create"
	OpEdit         = "edit"
	OpComment      = "comment"
	OpEditComment  = "edit comment"
	OpListComments = "list comments"
	OpLabel        = "label"
)

// NewMemory is an empty repository repo whose token files as me.
func NewMemory(repo, me string) *Memory {
	return &Memory{Repo: repo, Me: me, MayCreateLabels: true}
}

// Fail makes the next call of op fail with err before it acts.
func (m *Memory) Fail(op string, err error) { m.inject(op, fault{err: err}) }

// FailAfter makes the next call of op act, then fail with err (its answer
// lost: a create or comment that landed).
func (m *Memory) FailAfter(op string, err error) { m.inject(op, fault{err: err, after: true}) }

func (m *Memory) inject(op string, f fault) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.faults == nil {
		m.faults = map[string][]fault{}
	}
	m.faults[op] = append(m.faults[op], f)
}

// Calls are the operations asked so far, in order.
func (m *Memory) Calls() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.calls)
}

// Count is how often op was asked.
func (m *Memory) Count(op string) int {
	n := 0
	for _, c := range m.Calls() {
		if c == op {
			n++
		}
	}
	return n
}

// Add files an issue as author (another deployment, a stranger) and returns
// its number.
func (m *Memory) Add(is Issue) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.add(is)
}

func (m *Memory) add(is Issue) int {
	is.Number = len(m.issues) + 1
	is.URL = fmt.Sprintf("https://github.com/%s/issues/%d", m.Repo, is.Number)
	if is.State == "" {
		is.State = "open"
	}
	m.issues = append(m.issues, &is)
	return is.Number
}

// Get is issue n as it stands; false when there is none.
func (m *Memory) Get(n int) (Issue, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n < 1 || n > len(m.issues) || m.issues[n-1] == nil {
		return Issue{}, false
	}
	return clone(m.issues[n-1]), true
}

// Issues are all issues, by number.
func (m *Memory) Issues() []Issue {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Issue
	for _, is := range m.issues {
		if is != nil {
			out = append(out, clone(is))
		}
	}
	return out
}

// SetState closes or reopens issue n as a maintainer would.
func (m *Memory) SetState(n int, state, reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.issues[n-1].State, m.issues[n-1].StateReason = state, reason
}

// Delete removes issue n, as an admin's delete does.
func (m *Memory) Delete(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.issues[n-1] = nil
}

// CommentsOn are issue n's comments, oldest first.
func (m *Memory) CommentsOn(n int) []Comment {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Comment
	for _, c := range m.comments[n] {
		out = append(out, *c)
	}
	return out
}

// AddComment writes a comment on issue n as author and returns its id.
func (m *Memory) AddComment(n int, author, body string) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.comment(n, author, body).ID
}

func (m *Memory) comment(n int, author, body string) *Comment {
	if m.comments == nil {
		m.comments = map[int][]*Comment{}
	}
	m.nextID++
	c := &Comment{ID: m.nextID, Body: body, Author: author}
	m.comments[n] = append(m.comments[n], c)
	return c
}

// CreateLabel makes label exist.
func (m *Memory) CreateLabel(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.labels = append(m.labels, name)
}

func clone(is *Issue) Issue {
	c := *is
	c.Labels = slices.Clone(is.Labels)
	return c
}

// begin records op and returns its injected fault, if any; the lock is held.
func (m *Memory) begin(op string) (fault, bool) {
	m.calls = append(m.calls, op)
	fs := m.faults[op]
	if len(fs) == 0 {
		return fault{}, false
	}
	m.faults[op] = fs[1:]
	return fs[0], true
}

func refused(op string, status int, msg string) error {
	return &Refused{Op: op, Status: status, Message: msg, Err: fmt.Errorf("%d %s", status, msg)}
}

func (m *Memory) Login(ctx context.Context) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if f, ok := m.begin(OpLogin); ok {
		return "", f.err
	}
	if m.HideLogin {
		return "", nil
	}
	return m.Me, ctx.Err()
}

func (m *Memory) Issue(ctx context.Context, n int) (*Issue, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if f, ok := m.begin(OpIssue); ok {
		return nil, f.err
	}
	if n < 1 || n > len(m.issues) || m.issues[n-1] == nil {
		return nil, ctx.Err()
	}
	is := clone(m.issues[n-1])
	return &is, ctx.Err()
}

func (m *Memory) ListIssues(ctx context.Context, q Query, each func(Issue) bool) error {
	m.mu.Lock()
	if f, ok := m.begin(OpListIssues); ok {
		m.mu.Unlock()
		return f.err
	}
	var list []Issue
	for _, is := range m.issues {
		if is == nil || (q.State == "open" && is.State != "open") ||
			(q.Label != "" && !is.HasLabel(q.Label)) || (q.Creator != "" && !strings.EqualFold(is.Author, q.Creator)) {
			continue
		}
		list = append(list, clone(is))
	}
	m.mu.Unlock()
	if !q.Oldest {
		slices.Reverse(list)
	}
	if q.Pages > 0 && len(list) > 100*q.Pages {
		list = list[:100*q.Pages]
	}
	for _, is := range list {
		if !each(is) {
			break
		}
	}
	return ctx.Err()
}

func (m *Memory) Create(ctx context.Context, req NewIssue, recheck Recheck) (*Issue, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, failed := m.begin(OpCreate)
	if failed && !f.after {
		return nil, f.err
	}
	is := Issue{Title: req.Title, Body: req.Body, Author: m.Me}
	for _, l := range req.Labels {
		if slices.ContainsFunc(m.labels, func(have string) bool { return strings.EqualFold(have, l) }) {
			is.Labels = append(is.Labels, l)
		}
	}
	n := m.add(is)
	if failed {
		return nil, f.err
	}
	out := clone(m.issues[n-1])
	return &out, ctx.Err()
}

func (m *Memory) Edit(ctx context.Context, n int, e Edit) (*Issue, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, failed := m.begin(OpEdit)
	if failed && !f.after {
		return nil, f.err
	}
	if n < 1 || n > len(m.issues) || m.issues[n-1] == nil {
		return nil, refused("edit issue", http.StatusNotFound, "Not Found")
	}
	is := m.issues[n-1]
	if e.Body != nil {
		is.Body = *e.Body
	}
	if e.State != nil {
		is.State, is.StateReason = *e.State, ""
		if *e.State == "open" {
			is.StateReason = "reopened"
		}
	}
	if e.StateReason != nil {
		is.StateReason = *e.StateReason
	}
	if failed {
		return nil, f.err
	}
	out := clone(is)
	return &out, ctx.Err()
}

func (m *Memory) Comment(ctx context.Context, n int, body string, recheck Recheck) (*Comment, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, failed := m.begin(OpComment)
	if failed && !f.after {
		return nil, f.err
	}
	c := *m.comment(n, m.Me, body)
	if failed {
		return nil, f.err
	}
	return &c, ctx.Err()
}

func (m *Memory) EditComment(ctx context.Context, id int64, body string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, failed := m.begin(OpEditComment)
	if failed && !f.after {
		return f.err
	}
	for _, cs := range m.comments {
		for _, c := range cs {
			if c.ID == id {
				c.Body = body
				if failed {
					return f.err
				}
				return ctx.Err()
			}
		}
	}
	return refused("edit the occurrence comment", http.StatusNotFound, "Not Found")
}

// DeleteComment removes comment id, as its author may.
func (m *Memory) DeleteComment(id int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for n, cs := range m.comments {
		m.comments[n] = slices.DeleteFunc(cs, func(c *Comment) bool { return c.ID == id })
	}
}

func (m *Memory) ListComments(ctx context.Context, n int, each func(Comment) bool) error {
	m.mu.Lock()
	if f, ok := m.begin(OpListComments); ok {
		m.mu.Unlock()
		return f.err
	}
	var list []Comment
	for _, c := range m.comments[n] {
		list = append(list, *c)
	}
	m.mu.Unlock()
	for _, c := range list {
		if !each(c) {
			break
		}
	}
	return ctx.Err()
}

func (m *Memory) EnsureLabel(ctx context.Context, l Label) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if f, ok := m.begin(OpLabel); ok {
		return f.err
	}
	if slices.ContainsFunc(m.labels, func(have string) bool { return strings.EqualFold(have, l.Name) }) {
		return ctx.Err()
	}
	if !m.MayCreateLabels {
		return ErrLabelForbidden
	}
	m.labels = append(m.labels, l.Name)
	return ctx.Err()
}
