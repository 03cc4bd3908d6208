package tracker

import "context"

// WithCheck is t with check run before each of its calls (a scan's
// preflight: made once, it returns its first answer every time); check's
// error is the call's.
func WithCheck(t Tracker, check func(context.Context) error) Tracker {
	if check == nil {
		return t
	}
	return checked{t, check}
}

type checked struct {
	t     Tracker
	check func(context.Context) error
}

func (c checked) Login(ctx context.Context) (string, error) {
	if err := c.check(ctx); err != nil {
		return "", err
	}
	return c.t.Login(ctx)
}

func (c checked) Issue(ctx context.Context, n int) (*Issue, error) {
	if err := c.check(ctx); err != nil {
		return nil, err
	}
	return c.t.Issue(ctx, n)
}

func (c checked) ListIssues(ctx context.Context, q Query, each func(Issue) bool) error {
	if err := c.check(ctx); err != nil {
		return err
	}
	return c.t.ListIssues(ctx, q, each)
}

func (c checked) Create(ctx context.Context, req NewIssue, recheck Recheck) (*Issue, error) {
	if err := c.check(ctx); err != nil {
		return nil, err
	}
	return c.t.Create(ctx, req, recheck)
}

func (c checked) Edit(ctx context.Context, n int, e Edit) (*Issue, error) {
	if err := c.check(ctx); err != nil {
		return nil, err
	}
	return c.t.Edit(ctx, n, e)
}

func (c checked) Comment(ctx context.Context, n int, body string, recheck Recheck) (*Comment, error) {
	if err := c.check(ctx); err != nil {
		return nil, err
	}
	return c.t.Comment(ctx, n, body, recheck)
}

func (c checked) EditComment(ctx context.Context, id int64, body string) error {
	if err := c.check(ctx); err != nil {
		return err
	}
	return c.t.EditComment(ctx, id, body)
}

func (c checked) ListComments(ctx context.Context, n int, each func(Comment) bool) error {
	if err := c.check(ctx); err != nil {
		return err
	}
	return c.t.ListComments(ctx, n, each)
}

func (c checked) EnsureLabel(ctx context.Context, l Label) error {
	if err := c.check(ctx); err != nil {
		return err
	}
	return c.t.EnsureLabel(ctx, l)
}
