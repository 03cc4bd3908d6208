package github

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Fault is one scripted misbehaviour, consumed by the next request to its
// route. Build them with the constructors below.
type Fault struct {
	// Delay holds the response back (a slow GitHub); honours the client
	// going away. With Status 0 the request is then served normally.
	Delay time.Duration
	// Status, when non-zero, replaces the real answer.
	Status  int
	Message string
	DocURL  string
	Header  http.Header
	// AfterEffect serves the request for real first, then answers with
	// Status: the ambiguous case where the write happened but the caller
	// saw an error.
	AfterEffect bool
	// LateEffect does the work once Delay has passed, whether or not the
	// caller is still waiting: GitHub applied a create after the client's
	// timeout, and listings show it only from then on.
	LateEffect bool
	// Before runs when the fault fires, before the request is served: a
	// test's way to make something happen on GitHub at that exact moment
	// (another deployment filing the same issue).
	Before func()
	// resetIn is resolved against the server clock when the fault fires, so
	// a queued rate limit does not go stale.
	resetIn    time.Duration
	hasResetIn bool
}

func (f Fault) response(now time.Time) response {
	resp := jsonResponse(f.Status, errorBody(f.Message, f.DocURL))
	if f.Status == http.StatusUnprocessableEntity {
		resp = validationFailed(fieldError("Issue", "body", "invalid", f.Message))
	}
	for k, vs := range f.Header {
		resp.header[http.CanonicalHeaderKey(k)] = slices.Clone(vs)
	}
	if f.hasResetIn {
		resp.header.Set("X-RateLimit-Reset", strconv.FormatInt(now.Add(f.resetIn).Unix(), 10))
	}
	return resp
}

// ServerError answers status (500, 502, 503) without doing the work.
func ServerError(status int) Fault {
	return Fault{Status: status, Message: http.StatusText(status), DocURL: "https://docs.github.com/rest"}
}

// ServerErrorAfter does the work, then answers status: for a create, the
// issue exists but the caller sees a 5xx.
func ServerErrorAfter(status int) Fault {
	f := ServerError(status)
	f.AfterEffect = true
	return f
}

// Unauthorized is GitHub's answer to a revoked or wrong token.
func Unauthorized() Fault {
	return Fault{Status: http.StatusUnauthorized, Message: "Bad credentials", DocURL: "https://docs.github.com/rest"}
}

// RepoNotFound is GitHub's answer for a repository that does not exist or
// that the token cannot see.
func RepoNotFound() Fault {
	return Fault{Status: http.StatusNotFound, Message: "Not Found", DocURL: "https://docs.github.com/rest/issues/issues#create-an-issue"}
}

// IssuesDisabled is GitHub's 410 for a repository with issues turned off.
func IssuesDisabled() Fault {
	return Fault{Status: http.StatusGone, Message: "Issues are disabled for this repo", DocURL: "https://docs.github.com/rest/issues/issues#create-an-issue"}
}

// NoPermission is GitHub's 403 for a token that may not write here.
func NoPermission() Fault {
	return Fault{Status: http.StatusForbidden, Message: "Resource not accessible by personal access token", DocURL: "https://docs.github.com/rest/issues/issues#create-an-issue"}
}

// Unprocessable is a 422 Validation Failed with message as the field error.
func Unprocessable(message string) Fault {
	return Fault{Status: http.StatusUnprocessableEntity, Message: message}
}

// PrimaryRateLimit is the exhausted-quota 403 go-github turns into a
// *github.RateLimitError; the quota resets resetIn after the fault fires
// (x-ratelimit-reset has one-second resolution, like GitHub's).
func PrimaryRateLimit(resetIn time.Duration) Fault {
	return Fault{
		Status:  http.StatusForbidden,
		Message: "API rate limit exceeded for user ID 4242. If you reach out to GitHub Support for help, please include the request ID.",
		DocURL:  "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
		Header: http.Header{
			"X-Ratelimit-Limit":     {"5000"},
			"X-Ratelimit-Remaining": {"0"},
			"X-Ratelimit-Used":      {"5000"},
			"X-Ratelimit-Resource":  {"core"},
		},
		resetIn:    resetIn,
		hasResetIn: true,
	}
}

// SecondaryRateLimit is the 403 go-github turns into a
// *github.AbuseRateLimitError. retryAfter < 0 sends no Retry-After header
// (GitHub does that too; the client must then wait a minute on its own).
func SecondaryRateLimit(retryAfter time.Duration) Fault {
	return SecondaryRateLimitAs(http.StatusForbidden, retryAfter, -1)
}

// SecondaryRateLimitAs is a secondary rate limit in any of the shapes
// GitHub sends one: status 403 or 429, the documented message and
// documentation URL, Retry-After when retryAfter >= 0, and when resetIn >= 0
// x-ratelimit-remaining: 0 with x-ratelimit-reset that far from when the
// fault fires (GitHub's other way of saying when to resume). Either way
// GitHub did not act on the request.
func SecondaryRateLimitAs(status int, retryAfter, resetIn time.Duration) Fault {
	f := Fault{
		Status:  status,
		Message: "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID.",
		DocURL:  "https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
		// No x-ratelimit-reset unless asked: go-github would read it as
		// the retry time, and the wait-a-minute path needs neither header.
		Header: http.Header{
			"X-Ratelimit-Limit":     {"5000"},
			"X-Ratelimit-Remaining": {"4000"},
			"X-Ratelimit-Resource":  {"core"},
		},
	}
	if retryAfter >= 0 {
		f.Header.Set("Retry-After", strconv.Itoa(int(retryAfter/time.Second)))
	}
	if resetIn >= 0 {
		f.Header.Set("X-Ratelimit-Remaining", "0")
		f.resetIn, f.hasResetIn = resetIn, true
	}
	return f
}

// Slow delays the response by d, then serves it normally; a client that
// gives up first leaves nothing done.
func Slow(d time.Duration) Fault { return Fault{Delay: d} }

// SlowAfter does the work, then holds the response back by d: a client that
// times out has created the issue without learning so.
func SlowAfter(d time.Duration) Fault { return Fault{Delay: d, AfterEffect: true} }

// AppliedLate does the work d after the request arrived, even when the
// client gave up before: a create slower than the client's timeout.
func AppliedLate(d time.Duration) Fault { return Fault{Delay: d, LateEffect: true} }

// AppliedWhen does the work once release is closed, whether or not the
// client is still waiting: AppliedLate with the moment chosen by the test
// rather than by a clock. Close release before the server (Close waits for
// the requests it holds).
func AppliedWhen(release <-chan struct{}) Fault {
	return Fault{LateEffect: true, Before: func() { <-release }}
}

// Inject queues faults for route; each fires once, in order, on the next
// matching requests. RouteAny faults fire on whichever route comes next,
// after that route's own queue is empty.
func (s *Server) Inject(route Route, faults ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[route] = append(s.faults[route], faults...)
}

// PendingFaults is how many queued faults have not fired yet.
func (s *Server) PendingFaults() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, q := range s.faults {
		n += len(q)
	}
	return n
}

func (s *Server) nextFault(route Route) (Fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range []Route{route, RouteAny} {
		if q := s.faults[r]; len(q) > 0 {
			s.faults[r] = q[1:]
			return q[0], true
		}
	}
	return Fault{}, false
}

// Issues returns copies of every issue, in number order.
func (s *Server) Issues() []Issue {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Issue, len(s.issues))
	for i, is := range s.issues {
		out[i] = *is
		out[i].Labels = slices.Clone(is.Labels)
	}
	return out
}

// Issue returns a copy of issue n.
func (s *Server) Issue(n int) (Issue, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n < 1 || n > len(s.issues) {
		return Issue{}, false
	}
	is := *s.issues[n-1]
	is.Labels = slices.Clone(is.Labels)
	return is, true
}

// Comments returns copies of issue n's comments, oldest first.
func (s *Server) Comments(n int) []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Comment
	for _, c := range s.comments {
		if c.Issue == n {
			out = append(out, *c)
		}
	}
	return out
}

// Labels returns the repository's labels.
func (s *Server) Labels() []Label {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Label
	for _, l := range s.labels {
		out = append(out, *l)
	}
	slices.SortFunc(out, func(a, b Label) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// AddLabel creates a repository label directly.
func (s *Server) AddLabel(l Label) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l.Color == "" {
		l.Color = "ededed"
	}
	s.labels[strings.ToLower(l.Name)] = &l
}

// InFlight is how many requests have arrived and are not recorded yet
// (held by a Slow or AppliedLate fault, say). A request is recorded only
// when its handling ends, so a test that must know every request a finished
// client sent waits for InFlight to reach 0, instead of sleeping.
func (s *Server) InFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight
}

// Requests returns every request served so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// RequestsTo returns the recorded requests for one route.
func (s *Server) RequestsTo(route Route) []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Route == route {
			out = append(out, r)
		}
	}
	return out
}

// CountCreates is how many issues were created through the API, including
// ones whose response was replaced by a fault.
func (s *Server) CountCreates() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.created
}

// SetIssueState changes an issue as a maintainer would: state "closed" with
// reason "completed" or "not_planned", or "open".
func (s *Server) SetIssueState(n int, state, reason string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n < 1 || n > len(s.issues) {
		return false
	}
	is := s.issues[n-1]
	now := s.opts.Now()
	is.State, is.StateReason, is.UpdatedAt = state, reason, now
	if state == "closed" {
		is.ClosedAt, is.ClosedBy = now, "maintainer"
	} else {
		is.ClosedAt, is.ClosedBy = time.Time{}, ""
	}
	return true
}

// SetIssueLabels replaces an issue's labels as a maintainer would.
func (s *Server) SetIssueLabels(n int, labels ...string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n < 1 || n > len(s.issues) {
		return false
	}
	s.applyLabels(s.issues[n-1], labels, Token{Triage: true})
	return true
}

// AddIssue records an issue directly, as if filed by someone else (another
// deployment, a human). Zero fields get defaults: open, author "someone-else",
// created now. It returns the issue's number.
func (s *Server) AddIssue(is Issue) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	is.Number = len(s.issues) + 1
	if is.State == "" {
		is.State = "open"
	}
	if is.Login == "" {
		is.Login = "someone-else"
	}
	if is.CreatedAt.IsZero() {
		is.CreatedAt = now
	}
	if is.UpdatedAt.IsZero() {
		is.UpdatedAt = is.CreatedAt
	}
	if is.State == "closed" && is.ClosedAt.IsZero() {
		is.ClosedAt, is.ClosedBy = now, "maintainer"
	}
	labels := is.Labels
	is.Labels = nil
	p := &is
	s.applyLabels(p, labels, Token{Triage: true})
	s.issues = append(s.issues, p)
	return p.Number
}

// AddComment records a comment directly, as if written by login.
func (s *Server) AddComment(issue int, login, body string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	s.nextID++
	s.comments = append(s.comments, &Comment{ID: s.nextID, Issue: issue, Body: body, Login: login, CreatedAt: now, UpdatedAt: now})
	return s.nextID
}
