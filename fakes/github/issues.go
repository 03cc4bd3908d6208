package github

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

func ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339)
}

func (s *Server) apiBase() string { return s.srv.URL + Prefix + "/repos/" + s.owner + "/" + s.name }

func (s *Server) userJSON(login string) map[string]any {
	return map[string]any{
		"login":    login,
		"id":       int64(len(login)) + 4242,
		"type":     "User",
		"url":      s.srv.URL + Prefix + "/users/" + login,
		"html_url": s.srv.URL + "/" + login,
	}
}

// repoJSON is the repository as tok sees it: has_issues, and in
// permissions what tok may do (triage and push with Triage, never on a
// ReadOnly token); caller holds mu.
func (s *Server) repoJSON(tok Token) map[string]any {
	return map[string]any{
		"id":         4242,
		"name":       s.name,
		"full_name":  s.owner + "/" + s.name,
		"owner":      s.userJSON(s.owner),
		"private":    false,
		"html_url":   s.srv.URL + "/" + s.owner + "/" + s.name,
		"url":        s.apiBase(),
		"has_issues": !s.issuesDisabled,
		"permissions": map[string]bool{
			"admin": false, "maintain": false,
			"push":   tok.Triage && !tok.ReadOnly,
			"triage": tok.Triage && !tok.ReadOnly,
			"pull":   true,
		},
	}
}

func (s *Server) labelJSON(l *Label) map[string]any {
	return map[string]any{
		"name":        l.Name,
		"color":       l.Color,
		"description": l.Description,
		"default":     false,
		"url":         s.apiBase() + "/labels/" + l.Name,
	}
}

// issueJSON renders an issue in GitHub's shape; caller holds mu.
func (s *Server) issueJSON(is *Issue) map[string]any {
	labels := []any{}
	for _, name := range is.Labels {
		if l, ok := s.labels[strings.ToLower(name)]; ok {
			labels = append(labels, s.labelJSON(l))
		}
	}
	var reason any
	if is.StateReason != "" {
		reason = is.StateReason
	}
	comments := 0
	for _, c := range s.comments {
		if c.Issue == is.Number {
			comments++
		}
	}
	url := fmt.Sprintf("%s/issues/%d", s.apiBase(), is.Number)
	out := map[string]any{
		"id":                 int64(is.Number) * 7919,
		"node_id":            "I_fake" + strconv.Itoa(is.Number),
		"number":             is.Number,
		"url":                url,
		"repository_url":     s.apiBase(),
		"comments_url":       url + "/comments",
		"labels_url":         url + "/labels{/name}",
		"html_url":           fmt.Sprintf("%s/%s/%s/issues/%d", s.srv.URL, s.owner, s.name, is.Number),
		"state":              is.State,
		"state_reason":       reason,
		"title":              is.Title,
		"body":               is.Body,
		"user":               s.userJSON(is.Login),
		"labels":             labels,
		"locked":             false,
		"comments":           comments,
		"created_at":         ts(is.CreatedAt),
		"updated_at":         ts(is.UpdatedAt),
		"closed_at":          ts(is.ClosedAt),
		"author_association": "NONE",
	}
	if is.ClosedBy != "" {
		out["closed_by"] = s.userJSON(is.ClosedBy)
	}
	return out
}

func (s *Server) commentJSON(c *Comment) map[string]any {
	return map[string]any{
		"id":                 c.ID,
		"node_id":            "IC_fake" + strconv.FormatInt(c.ID, 10),
		"url":                fmt.Sprintf("%s/issues/comments/%d", s.apiBase(), c.ID),
		"html_url":           fmt.Sprintf("%s/%s/%s/issues/%d#issuecomment-%d", s.srv.URL, s.owner, s.name, c.Issue, c.ID),
		"issue_url":          fmt.Sprintf("%s/issues/%d", s.apiBase(), c.Issue),
		"body":               c.Body,
		"user":               s.userJSON(c.Login),
		"created_at":         ts(c.CreatedAt),
		"updated_at":         ts(c.UpdatedAt),
		"author_association": "NONE",
	}
}

func (s *Server) issueArg(c *call) (*Issue, bool) {
	n, err := strconv.Atoi(c.args[2])
	if err != nil || n < 1 || n > len(s.issues) {
		return nil, false
	}
	return s.issues[n-1], true
}

func (s *Server) listIssues(c *call) response {
	q := c.r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	if state != "open" && state != "closed" && state != "all" {
		return validationFailed(fieldError("Issue", "state", "invalid", ""))
	}
	var wantLabels []string
	if l := q.Get("labels"); l != "" {
		for _, name := range strings.Split(l, ",") {
			wantLabels = append(wantLabels, strings.ToLower(strings.TrimSpace(name)))
		}
	}
	creator := q.Get("creator")
	var hits []*Issue
	for _, is := range s.issues {
		if state != "all" && is.State != state {
			continue
		}
		if creator != "" && !strings.EqualFold(is.Login, creator) {
			continue
		}
		have := map[string]bool{}
		for _, l := range is.Labels {
			have[strings.ToLower(l)] = true
		}
		all := true
		for _, l := range wantLabels {
			all = all && have[l]
		}
		if all {
			hits = append(hits, is)
		}
	}
	sortKey := q.Get("sort")
	if sortKey == "" {
		sortKey = "created"
	}
	desc := q.Get("direction") != "asc"
	slices.SortStableFunc(hits, func(a, b *Issue) int {
		var c int
		switch sortKey {
		case "updated":
			c = a.UpdatedAt.Compare(b.UpdatedAt)
		case "comments":
			c = s.commentCount(a.Number) - s.commentCount(b.Number)
		default:
			c = a.CreatedAt.Compare(b.CreatedAt)
		}
		if c == 0 {
			c = a.Number - b.Number
		}
		if desc {
			return -c
		}
		return c
	})
	page, perPage := pagination(c)
	start := min((page-1)*perPage, len(hits))
	end := min(start+perPage, len(hits))
	out := make([]any, 0, end-start)
	for _, is := range hits[start:end] {
		out = append(out, s.issueJSON(is))
	}
	resp := jsonResponse(http.StatusOK, out)
	s.linkHeader(resp.header, c, page, perPage, len(hits))
	return resp
}

func (s *Server) commentCount(n int) int {
	count := 0
	for _, c := range s.comments {
		if c.Issue == n {
			count++
		}
	}
	return count
}

// pagination reads page and per_page as GitHub does: per_page defaults to 30
// and is capped at 100.
func pagination(c *call) (page, perPage int) {
	q := c.r.URL.Query()
	page, _ = strconv.Atoi(q.Get("page"))
	if page < 1 {
		page = 1
	}
	perPage, _ = strconv.Atoi(q.Get("per_page"))
	if perPage < 1 {
		perPage = 30
	}
	return page, min(perPage, 100)
}

// linkHeader writes an RFC 5988 Link header with first/prev/next/last as
// GitHub does, each an absolute URL that keeps the request's other params.
func (s *Server) linkHeader(h map[string][]string, c *call, page, perPage, total int) {
	last := max(1, (total+perPage-1)/perPage)
	link := func(p int, rel string) string {
		q := c.r.URL.Query()
		q.Set("page", strconv.Itoa(p))
		q.Set("per_page", strconv.Itoa(perPage))
		return fmt.Sprintf(`<%s%s?%s>; rel="%s"`, s.srv.URL, c.r.URL.EscapedPath(), q.Encode(), rel)
	}
	var parts []string
	if page > 1 {
		parts = append(parts, link(page-1, "prev"), link(1, "first"))
	}
	if page < last {
		parts = append(parts, link(page+1, "next"), link(last, "last"))
	}
	if len(parts) > 0 {
		h["Link"] = []string{strings.Join(parts, ", ")}
	}
}

func (s *Server) getIssue(c *call) response {
	is, ok := s.issueArg(c)
	if !ok {
		return notFound()
	}
	return jsonResponse(http.StatusOK, s.issueJSON(is))
}

// issueInput is a create or edit request; pointers tell absent from empty.
type issueInput struct {
	Title       *string   `json:"title"`
	Body        *string   `json:"body"`
	State       *string   `json:"state"`
	StateReason *string   `json:"state_reason"`
	Labels      *[]string `json:"labels"`
}

func problemsOf(in issueInput) []map[string]any {
	var errs []map[string]any
	if in.Title != nil && runeLen(*in.Title) > MaxTitle {
		errs = append(errs, fieldError("Issue", "title", "custom", fmt.Sprintf("title is too long (maximum is %d characters)", MaxTitle)))
	}
	if in.Body != nil && runeLen(*in.Body) > MaxBody {
		errs = append(errs, fieldError("Issue", "body", "custom", fmt.Sprintf("body is too long (maximum is %d characters)", MaxBody)))
	}
	if in.State != nil && *in.State != "open" && *in.State != "closed" {
		errs = append(errs, fieldError("Issue", "state", "invalid", ""))
	}
	if in.StateReason != nil && !slices.Contains([]string{"completed", "not_planned", "reopened"}, *in.StateReason) {
		errs = append(errs, fieldError("Issue", "state_reason", "invalid", ""))
	}
	return errs
}

func problemsJSON() response {
	return jsonResponse(http.StatusBadRequest, errorBody("Problems parsing JSON", "https://docs.github.com/rest"))
}

// applyLabels sets labels when the caller may; GitHub silently ignores
// labels from callers without triage rights, and creates unknown ones.
func (s *Server) applyLabels(is *Issue, names []string, tok Token) {
	if !tok.Triage {
		return
	}
	is.Labels = nil
	for _, name := range names {
		key := strings.ToLower(name)
		if _, ok := s.labels[key]; !ok {
			s.labels[key] = &Label{Name: name, Color: "ededed"}
		}
		if !slices.ContainsFunc(is.Labels, func(l string) bool { return strings.EqualFold(l, name) }) {
			is.Labels = append(is.Labels, s.labels[key].Name)
		}
	}
}

func (s *Server) createIssue(c *call) response {
	var in issueInput
	if err := json.Unmarshal(c.body, &in); err != nil {
		return problemsJSON()
	}
	if in.Title == nil || strings.TrimSpace(*in.Title) == "" {
		return validationFailed(fieldError("Issue", "title", "missing_field", ""))
	}
	if errs := problemsOf(in); len(errs) > 0 {
		return validationFailed(errs...)
	}
	now := s.opts.Now()
	is := &Issue{
		Number:    len(s.issues) + 1,
		Title:     *in.Title,
		State:     "open",
		Login:     c.token.Login,
		CreatedAt: now,
		UpdatedAt: now,
	}
	if in.Body != nil {
		is.Body = *in.Body
	}
	if in.Labels != nil {
		s.applyLabels(is, *in.Labels, c.token)
	}
	s.issues = append(s.issues, is)
	s.created++
	resp := jsonResponse(http.StatusCreated, s.issueJSON(is))
	resp.header.Set("Location", fmt.Sprintf("%s/issues/%d", s.apiBase(), is.Number))
	return resp
}

func (s *Server) editIssue(c *call) response {
	is, ok := s.issueArg(c)
	if !ok {
		return notFound()
	}
	var in issueInput
	if err := json.Unmarshal(c.body, &in); err != nil {
		return problemsJSON()
	}
	if errs := problemsOf(in); len(errs) > 0 {
		return validationFailed(errs...)
	}
	author := strings.EqualFold(is.Login, c.token.Login)
	if !c.token.Triage && !author {
		return forbidden("Resource not accessible by personal access token", "https://docs.github.com/rest/issues/issues#update-an-issue")
	}
	// An author without triage rights may reopen only what they closed
	// themselves, as on GitHub.
	if in.State != nil && *in.State == "open" && is.State == "closed" && !c.token.Triage &&
		!strings.EqualFold(is.ClosedBy, c.token.Login) {
		return forbidden("Resource not accessible by personal access token", "https://docs.github.com/rest/issues/issues#update-an-issue")
	}
	now := s.opts.Now()
	if in.Title != nil {
		if strings.TrimSpace(*in.Title) == "" {
			return validationFailed(fieldError("Issue", "title", "missing_field", ""))
		}
		is.Title = *in.Title
	}
	if in.Body != nil {
		is.Body = *in.Body
	}
	if in.Labels != nil {
		s.applyLabels(is, *in.Labels, c.token)
	}
	if in.State != nil {
		switch {
		case *in.State == "closed" && is.State != "closed":
			is.State, is.ClosedAt, is.ClosedBy = "closed", now, c.token.Login
			is.StateReason = "completed"
		case *in.State == "open" && is.State != "open":
			is.State, is.ClosedAt, is.ClosedBy = "open", time.Time{}, ""
			is.StateReason = "reopened"
		}
	}
	if in.StateReason != nil && is.State == "closed" {
		is.StateReason = *in.StateReason
	}
	is.UpdatedAt = now
	return jsonResponse(http.StatusOK, s.issueJSON(is))
}

func (s *Server) listComments(c *call) response {
	is, ok := s.issueArg(c)
	if !ok {
		return notFound()
	}
	var hits []*Comment
	for _, cm := range s.comments {
		if cm.Issue == is.Number {
			hits = append(hits, cm)
		}
	}
	page, perPage := pagination(c)
	start := min((page-1)*perPage, len(hits))
	end := min(start+perPage, len(hits))
	out := make([]any, 0, end-start)
	for _, cm := range hits[start:end] {
		out = append(out, s.commentJSON(cm))
	}
	resp := jsonResponse(http.StatusOK, out)
	s.linkHeader(resp.header, c, page, perPage, len(hits))
	return resp
}

type commentInput struct {
	Body *string `json:"body"`
}

func (s *Server) commentBody(c *call) (string, *response) {
	var in commentInput
	if err := json.Unmarshal(c.body, &in); err != nil {
		r := problemsJSON()
		return "", &r
	}
	if in.Body == nil || *in.Body == "" {
		r := validationFailed(fieldError("IssueComment", "body", "missing_field", ""))
		return "", &r
	}
	if runeLen(*in.Body) > MaxBody {
		r := validationFailed(fieldError("IssueComment", "body", "custom", fmt.Sprintf("body is too long (maximum is %d characters)", MaxBody)))
		return "", &r
	}
	return *in.Body, nil
}

func (s *Server) createComment(c *call) response {
	is, ok := s.issueArg(c)
	if !ok {
		return notFound()
	}
	body, bad := s.commentBody(c)
	if bad != nil {
		return *bad
	}
	now := s.opts.Now()
	s.nextID++
	cm := &Comment{ID: s.nextID, Issue: is.Number, Body: body, Login: c.token.Login, CreatedAt: now, UpdatedAt: now}
	s.comments = append(s.comments, cm)
	is.UpdatedAt = now
	return jsonResponse(http.StatusCreated, s.commentJSON(cm))
}

func (s *Server) editComment(c *call) response {
	id, err := strconv.ParseInt(c.args[2], 10, 64)
	if err != nil {
		return notFound()
	}
	i := slices.IndexFunc(s.comments, func(cm *Comment) bool { return cm.ID == id })
	if i < 0 {
		return notFound()
	}
	cm := s.comments[i]
	if !c.token.Triage && !strings.EqualFold(cm.Login, c.token.Login) {
		return forbidden("Resource not accessible by personal access token", "https://docs.github.com/rest/issues/comments#update-an-issue-comment")
	}
	body, bad := s.commentBody(c)
	if bad != nil {
		return *bad
	}
	cm.Body = body
	cm.UpdatedAt = s.opts.Now()
	return jsonResponse(http.StatusOK, s.commentJSON(cm))
}

func (s *Server) getLabel(c *call) response {
	l, ok := s.labels[strings.ToLower(c.args[2])]
	if !ok {
		return jsonResponse(http.StatusNotFound, errorBody("Not Found", "https://docs.github.com/rest/issues/labels#get-a-label"))
	}
	return jsonResponse(http.StatusOK, s.labelJSON(l))
}

func (s *Server) createLabel(c *call) response {
	if !c.token.Triage {
		return forbidden("Resource not accessible by personal access token", "https://docs.github.com/rest/issues/labels#create-a-label")
	}
	var in struct {
		Name        string `json:"name"`
		Color       string `json:"color"`
		Description string `json:"description"`
	}
	if err := json.Unmarshal(c.body, &in); err != nil {
		return problemsJSON()
	}
	if in.Name == "" {
		return validationFailed(fieldError("Label", "name", "missing_field", ""))
	}
	if _, ok := s.labels[strings.ToLower(in.Name)]; ok {
		return validationFailed(fieldError("Label", "name", "already_exists", ""))
	}
	if in.Color == "" {
		in.Color = "ededed"
	}
	l := &Label{Name: in.Name, Color: strings.TrimPrefix(in.Color, "#"), Description: in.Description}
	s.labels[strings.ToLower(in.Name)] = l
	return jsonResponse(http.StatusCreated, s.labelJSON(l))
}
