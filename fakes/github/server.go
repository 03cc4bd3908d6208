// Package github is an in-process fake of the GitHub REST API subset the
// tool uses: repository issues, their comments, labels, the repository (as
// the token sees it: has_issues, permissions) and the
// authenticated user. It serves under GitHub Enterprise's /api/v3/ prefix so
// a client that builds an absolute URL by hand fails loudly, records every
// request, and lets a test script faults per route (5xx, ambiguous 5xx after
// the write happened, 401/403/404/410/422, primary and secondary rate limits,
// slow responses) in the exact shapes go-github classifies.
//
// Import it as fakegh next to go-github.
package github

import (
	"bytes"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Prefix is the path every API route lives under, as on GitHub Enterprise.
const Prefix = "/api/v3"

// GitHub's documented limits, enforced with GitHub's 422 shape.
const (
	MaxTitle = 256
	MaxBody  = 65536
)

// Token is what a configured access token may do.
type Token struct {
	Login string
	// Triage lets the token set labels and manage any issue; without it
	// labels are silently dropped on create and label creation is 403,
	// exactly as GitHub treats a caller without triage or push access.
	Triage bool
	// ReadOnly tokens can read but every write is 403.
	ReadOnly bool
	// Scopes, when not nil, make it a classic token: every answer to it
	// names them in X-OAuth-Scopes, as GitHub's do.
	Scopes []string
}

// Options configures a Server.
type Options struct {
	Repo           string           // "owner/name"; default "acme/widgets"
	Tokens         map[string]Token // token -> rights; default {"test-token": triage as "loop-bot"}
	IssuesDisabled bool             // every issues route answers 410
	Now            func() time.Time // clock for created_at and the like; default time.Now
	// TLS serves HTTPS (httptest's certificate for 127.0.0.1; see
	// CertificatePEM), as a GitHub Enterprise host is reached.
	TLS bool
}

// Issue is the fake's record of one issue.
type Issue struct {
	Number      int
	Title       string
	Body        string
	State       string // "open" or "closed"
	StateReason string // "", "completed", "not_planned", "reopened"
	Labels      []string
	Login       string // author
	ClosedBy    string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	ClosedAt    time.Time
}

// Comment is the fake's record of one issue comment.
type Comment struct {
	ID        int64
	Issue     int
	Body      string
	Login     string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Label is a repository label.
type Label struct {
	Name        string
	Color       string
	Description string
}

// Request is one recorded HTTP request and the status it was answered with.
type Request struct {
	Method string
	Path   string // escaped path, prefix included
	Query  url.Values
	Body   []byte
	Route  Route
	Login  string // the authenticated login, "" when auth failed
	Status int
	At     time.Time
}

// Server is a running fake. All methods are safe for concurrent use.
type Server struct {
	srv   *httptest.Server
	owner string
	name  string
	opts  Options

	mu             sync.Mutex
	issues         []*Issue // index = number-1
	comments       []*Comment
	labels         map[string]*Label // key: lower-cased name (GitHub is case-insensitive)
	faults         map[Route][]Fault
	requests       []Request
	created        int // issues created through the API (AddIssue excluded)
	inFlight       int // requests arrived and not yet recorded (see InFlight)
	issuesDisabled bool
	outage         int // SetOutage: the status every request answers; 0: none
	nextID         int64
}

// New starts a fake. Close it when done (t.Cleanup(s.Close)).
func New(opts Options) *Server {
	if opts.Repo == "" {
		opts.Repo = "acme/widgets"
	}
	if opts.Tokens == nil {
		opts.Tokens = map[string]Token{"test-token": {Login: "loop-bot", Triage: true}}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	owner, name, _ := strings.Cut(opts.Repo, "/")
	s := &Server{
		owner:          owner,
		name:           name,
		opts:           opts,
		labels:         map[string]*Label{},
		faults:         map[Route][]Fault{},
		issuesDisabled: opts.IssuesDisabled,
		nextID:         1000,
	}
	if opts.TLS {
		s.srv = httptest.NewTLSServer(http.HandlerFunc(s.serve))
	} else {
		s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	}
	return s
}

// CertificatePEM is the TLS server's certificate (Options.TLS), for a
// client's trusted roots (SSL_CERT_FILE); nil without TLS.
func (s *Server) CertificatePEM() []byte {
	c := s.srv.Certificate()
	if c == nil {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

// Close shuts the server down.
func (s *Server) Close() { s.srv.Close() }

// URL is the server root, without the API prefix (issue html_url lives here).
func (s *Server) URL() string { return s.srv.URL }

// APIURL is the base URL a client must use: root + "/api/v3/".
func (s *Server) APIURL() string { return s.srv.URL + Prefix + "/" }

// Repo is the repository the fake hosts, "owner/name".
func (s *Server) Repo() string { return s.owner + "/" + s.name }

// SetIssuesDisabled switches the repository's issues feature off or on.
func (s *Server) SetIssuesDisabled(disabled bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.issuesDisabled = disabled
}

// response is what a handler produces before faults and encoding.
type response struct {
	status int
	body   any
	header http.Header
}

func jsonResponse(status int, body any) response {
	return response{status: status, body: body, header: http.Header{}}
}

func errorBody(message, doc string) map[string]any {
	return map[string]any{"message": message, "documentation_url": doc}
}

// call is one request being served.
type call struct {
	r     *http.Request
	body  []byte
	token Token
	route Route
	args  []string // path parameters in route order
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.inFlight++
	s.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	rec := Request{
		Method: r.Method,
		Path:   r.URL.EscapedPath(),
		Query:  r.URL.Query(),
		Body:   body,
		At:     s.opts.Now(),
	}
	resp := s.handle(r, body, &rec)
	if t, ok := s.authenticate(r); ok && t.Scopes != nil {
		if resp.header == nil {
			resp.header = http.Header{}
		}
		resp.header.Set("X-OAuth-Scopes", strings.Join(t.Scopes, ", "))
	}
	rec.Status = resp.status
	s.mu.Lock()
	s.requests = append(s.requests, rec)
	s.inFlight--
	s.mu.Unlock()
	s.write(w, resp)
}

func (s *Server) handle(r *http.Request, body []byte, rec *Request) response {
	path := r.URL.EscapedPath()
	if path != Prefix && !strings.HasPrefix(path, Prefix+"/") {
		// Outside the API prefix nothing answers: a client that ignored its
		// base URL gets GitHub's bare 404.
		return jsonResponse(http.StatusNotFound, errorBody("Not Found", "https://docs.github.com/rest"))
	}
	route, args := match(r.Method, strings.TrimPrefix(path, Prefix))
	rec.Route = route
	if route == "" {
		return jsonResponse(http.StatusNotFound, errorBody("Not Found", "https://docs.github.com/rest"))
	}
	s.mu.Lock()
	outage := s.outage
	s.mu.Unlock()
	if outage != 0 {
		return ServerError(outage).response(s.opts.Now())
	}
	token, ok := s.authenticate(r)
	if !ok {
		msg := "Bad credentials"
		if r.Header.Get("Authorization") == "" {
			msg = "Requires authentication"
		}
		return jsonResponse(http.StatusUnauthorized, errorBody(msg, "https://docs.github.com/rest"))
	}
	rec.Login = token.Login
	c := &call{r: r, body: body, token: token, route: route, args: args}

	fault, faulted := s.nextFault(route)
	if !faulted {
		return s.dispatch(c)
	}
	if fault.Before != nil {
		fault.Before()
	}
	var resp response
	if fault.LateEffect {
		time.Sleep(fault.Delay) // the client may be gone; the work happens regardless
		return s.dispatch(c)
	}
	if fault.AfterEffect {
		// The write happens first; the caller then waits, or sees an error.
		resp = s.dispatch(c)
	}
	if fault.Delay > 0 {
		select {
		case <-time.After(fault.Delay):
		case <-r.Context().Done():
			return jsonResponse(499, errorBody("client went away", ""))
		}
	}
	if fault.Status != 0 {
		return fault.response(s.opts.Now())
	}
	if !fault.AfterEffect {
		resp = s.dispatch(c)
	}
	return resp
}

func (s *Server) authenticate(r *http.Request) (Token, bool) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || (!strings.EqualFold(scheme, "bearer") && !strings.EqualFold(scheme, "token")) {
		return Token{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.opts.Tokens[strings.TrimSpace(tok)]
	return t, ok
}

// AddToken lets another caller in: each token acts as its own login, as on
// GitHub (a stranger opening and closing issues, a fleet's second bot).
// Issues and comments it creates are authored by t.Login, and GET /user
// answers t.Login to it.
func (s *Server) AddToken(token string, t Token) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tokens := make(map[string]Token, len(s.opts.Tokens)+1)
	for k, v := range s.opts.Tokens {
		tokens[k] = v
	}
	tokens[token] = t
	s.opts.Tokens = tokens // the caller's Options map is never written
}

// RemoveToken revokes a token: every request carrying it answers 401 Bad
// credentials until AddToken lets it in again (a token suspended or rotated
// while a watcher runs).
func (s *Server) RemoveToken(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tokens := make(map[string]Token, len(s.opts.Tokens))
	for k, v := range s.opts.Tokens {
		if k != token {
			tokens[k] = v
		}
	}
	s.opts.Tokens = tokens
}

// SetOutage makes every API request answer status (502, 503) without doing
// anything, as GitHub in an outage does, until SetOutage(0).
func (s *Server) SetOutage(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.outage = status
}

func (s *Server) write(w http.ResponseWriter, resp response) {
	for k, vs := range resp.header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if w.Header().Get("X-RateLimit-Limit") == "" {
		s.mu.Lock()
		used := len(s.requests)
		s.mu.Unlock()
		w.Header().Set("X-RateLimit-Limit", "5000")
		w.Header().Set("X-RateLimit-Remaining", strconv.Itoa(max(1, 5000-used)))
		w.Header().Set("X-RateLimit-Used", strconv.Itoa(used))
		w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(s.opts.Now().Add(time.Hour).Unix(), 10))
		w.Header().Set("X-RateLimit-Resource", "core")
	}
	w.WriteHeader(resp.status)
	if resp.body != nil {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(resp.body)
		_, _ = w.Write(buf.Bytes())
	}
}

// Route names one endpoint, for faults and request inspection.
type Route string

const (
	RouteAny           Route = "*" // faults queued here hit whichever route comes next
	RouteUser          Route = "GET /user"
	RouteGetRepo       Route = "GET /repos/{o}/{r}"
	RouteListIssues    Route = "GET /repos/{o}/{r}/issues"
	RouteGetIssue      Route = "GET /repos/{o}/{r}/issues/{n}"
	RouteCreateIssue   Route = "POST /repos/{o}/{r}/issues"
	RouteEditIssue     Route = "PATCH /repos/{o}/{r}/issues/{n}"
	RouteListComments  Route = "GET /repos/{o}/{r}/issues/{n}/comments"
	RouteCreateComment Route = "POST /repos/{o}/{r}/issues/{n}/comments"
	RouteEditComment   Route = "PATCH /repos/{o}/{r}/issues/comments/{id}"
	RouteGetLabel      Route = "GET /repos/{o}/{r}/labels/{name}"
	RouteCreateLabel   Route = "POST /repos/{o}/{r}/labels"
)

var routes = []Route{
	RouteUser, RouteGetRepo, RouteListIssues, RouteGetIssue, RouteCreateIssue, RouteEditIssue,
	RouteListComments, RouteCreateComment, RouteEditComment, RouteGetLabel, RouteCreateLabel,
}

// match finds the route for an escaped path (prefix removed) and returns its
// unescaped parameters. Hand-rolled because "issues/{n}/comments" and
// "issues/comments/{id}" overlap, which net/http's mux rejects.
func match(method, path string) (Route, []string) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for _, rt := range routes {
		m, pattern, _ := strings.Cut(string(rt), " ")
		if m != method {
			continue
		}
		want := strings.Split(strings.Trim(pattern, "/"), "/")
		if len(want) != len(segs) {
			continue
		}
		var args []string
		ok := true
		for i, w := range want {
			if strings.HasPrefix(w, "{") {
				v, err := url.PathUnescape(segs[i])
				if err != nil || v == "" {
					ok = false
					break
				}
				args = append(args, v)
				continue
			}
			if w != segs[i] {
				ok = false
				break
			}
		}
		if ok {
			// A literal segment must beat a parameter: "issues/comments/5"
			// is only an edit-comment route if it is a PATCH, and a GET of
			// "issues/comments" must not read as issue number "comments".
			if rt == RouteGetIssue || rt == RouteEditIssue {
				if _, err := strconv.Atoi(args[2]); err != nil {
					continue
				}
			}
			return rt, args
		}
	}
	return "", nil
}

func (s *Server) dispatch(c *call) response {
	if c.route == RouteUser {
		return jsonResponse(http.StatusOK, s.userJSON(c.token.Login))
	}
	if !strings.EqualFold(c.args[0], s.owner) || !strings.EqualFold(c.args[1], s.name) {
		return jsonResponse(http.StatusNotFound, errorBody("Not Found", "https://docs.github.com/rest/issues/issues"))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.route == RouteGetRepo {
		return jsonResponse(http.StatusOK, s.repoJSON(c.token))
	}
	if s.issuesDisabled && c.route != RouteGetLabel && c.route != RouteCreateLabel {
		return jsonResponse(http.StatusGone, errorBody("Issues are disabled for this repo", "https://docs.github.com/rest/issues/issues"))
	}
	if c.token.ReadOnly && c.r.Method != http.MethodGet {
		return forbidden("Resource not accessible by personal access token", "https://docs.github.com/rest/issues/issues")
	}
	switch c.route {
	case RouteListIssues:
		return s.listIssues(c)
	case RouteGetIssue:
		return s.getIssue(c)
	case RouteCreateIssue:
		return s.createIssue(c)
	case RouteEditIssue:
		return s.editIssue(c)
	case RouteListComments:
		return s.listComments(c)
	case RouteCreateComment:
		return s.createComment(c)
	case RouteEditComment:
		return s.editComment(c)
	case RouteGetLabel:
		return s.getLabel(c)
	case RouteCreateLabel:
		return s.createLabel(c)
	}
	return jsonResponse(http.StatusNotFound, errorBody("Not Found", "https://docs.github.com/rest"))
}

func forbidden(msg, doc string) response {
	return jsonResponse(http.StatusForbidden, errorBody(msg, doc))
}

func validationFailed(errs ...map[string]any) response {
	return jsonResponse(http.StatusUnprocessableEntity, map[string]any{
		"message":           "Validation Failed",
		"errors":            errs,
		"documentation_url": "https://docs.github.com/rest/issues/issues",
		"status":            "422",
	})
}

func fieldError(resource, field, code, message string) map[string]any {
	e := map[string]any{"resource": resource, "field": field, "code": code}
	if message != "" {
		e["message"] = message
	}
	return e
}

func notFound() response {
	return jsonResponse(http.StatusNotFound, errorBody("Not Found", "https://docs.github.com/rest/issues/issues"))
}

// runeLen counts characters as GitHub does for its limits.
func runeLen(s string) int { return len([]rune(s)) }
