package source

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/semver"

	"github.com/the-loop/the-loop-diagnose/pipeline"
)

// Checkout answers "was this closed issue fixed in a release the
// deployment does not run yet?" from a git clone of the target repository:
// a test under tests/ that names the issue number proves the fix, and the
// first tag containing that test is the release that shipped it.
type Checkout struct {
	Dir     string
	Timeout time.Duration // per git command; default 30s
}

// FixedUpstream returns a settlement when the deployment's version is older
// than the first tag holding a regression test for issue; nil when the
// deployment already has the fix (so the recurrence is real) or no test
// names the issue. Any git error is returned: the caller treats it as
// inconclusive and lets a human see the recurrence.
func (c Checkout) FixedUpstream(ctx context.Context, issue int, issueURL, deployed string) (*pipeline.Settlement, error) {
	tests, err := c.testsNaming(ctx, issue)
	if err != nil || len(tests) == 0 {
		return nil, err
	}
	test := tests[0]
	added, err := c.git(ctx, "log", "--diff-filter=A", "--format=%H", "--", test)
	if err != nil {
		return nil, err
	}
	commits := strings.Fields(added)
	if len(commits) == 0 {
		return nil, fmt.Errorf("git log found no commit adding %s", test)
	}
	tags, err := c.git(ctx, "tag", "--contains", commits[len(commits)-1])
	if err != nil {
		return nil, err
	}
	tag := earliestRelease(strings.Fields(tags))
	if tag == "" {
		return nil, nil // the fix is not released yet: nothing to upgrade to
	}
	dv := CanonicalVersion(deployed)
	if dv == "" {
		return nil, fmt.Errorf("deployment version %q is not a version: cannot compare with %s", deployed, tag)
	}
	if semver.Compare(dv, CanonicalVersion(tag)) >= 0 {
		return nil, nil // the deployment has the fix and it recurred: a human must look
	}
	return &pipeline.Settlement{Verdict: pipeline.SettledFixedUpstream,
		Reason: fmt.Sprintf("fixed in %s: upgrade (this deployment runs %s)", tag, deployed),
		Evidence: map[string]any{"issue_url": issueURL, "test_path": test, "tag": tag,
			"commit": commits[len(commits)-1], "deployed_version": deployed}}, nil
}

// testsNaming lists files under tests/ that hold the issue number as a whole
// word, regression folders first.
func (c Checkout) testsNaming(ctx context.Context, issue int) ([]string, error) {
	out, err := c.git(ctx, "grep", "-l", "-w", "-F", strconv.Itoa(issue), "--", "tests/")
	if err != nil {
		// git grep exits 1 when nothing matches: that is an answer, not an error.
		if ee, ok := err.(*gitError); ok && ee.code == 1 && ee.stderr == "" {
			return nil, nil
		}
		return nil, err
	}
	files := strings.Fields(out)
	sort.SliceStable(files, func(i, j int) bool {
		return strings.Contains(files[i], "regression") && !strings.Contains(files[j], "regression")
	})
	return files, nil
}

type gitError struct {
	args   []string
	code   int
	stderr string
}

func (e *gitError) Error() string {
	return fmt.Sprintf("git %s: exit %d: %s", strings.Join(e.args, " "), e.code, e.stderr)
}

func (c Checkout) git(ctx context.Context, args ...string) (string, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", c.Dir}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		code := -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return "", &gitError{args: args, code: code, stderr: strings.TrimSpace(stderr.String())}
	}
	return stdout.String(), nil
}

// earliestRelease picks the lowest semantic version among tags; tags that
// are not versions are ignored.
func earliestRelease(tags []string) string {
	best := ""
	for _, t := range tags {
		v := CanonicalVersion(t)
		if v == "" || semver.Prerelease(v) != "" {
			continue
		}
		if best == "" || semver.Compare(v, CanonicalVersion(best)) < 0 {
			best = t
		}
	}
	return best
}

// CanonicalVersion accepts "1.4.2", "v1.4.2" and "release-1.4.2".
func CanonicalVersion(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "0123456789"); i > 0 && !strings.HasPrefix(s, "v") {
		s = s[i:]
	}
	if !strings.HasPrefix(s, "v") {
		s = "v" + s
	}
	if !semver.IsValid(s) {
		return ""
	}
	return semver.Canonical(s)
}

// DeployedVersion is the version the records carry (the newest sample's
// version field), else the configured one.
func DeployedVersion(g pipeline.Group, configured string) string {
	for i := len(g.Samples) - 1; i >= 0; i-- {
		if v := g.Samples[i].Str("version"); v != "" {
			return v
		}
	}
	return configured
}
