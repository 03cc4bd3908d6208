package pipeline

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestClassifyNamesEachFailureClass(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want Class
	}{
		{errors.New("422 Validation Failed"), ClassDefect},
		{&OutageError{Reason: "GitHub is not answering (HTTP 502)"}, ClassOutage},
		{fmt.Errorf("post: %w", &SetupError{Area: "GitHub", Cause: "x", Fix: "y", Status: 404}), ClassSetup},
		{&SetupError{Err: context.Canceled}, ClassSetup}, // setup wins over what it wraps
		{&InDoubtError{Err: errors.New("EOF")}, ClassInDoubt},
		{&DeferralError{Reason: "GitHub rate limit: retry after 1h0m0s"}, ClassDeferral},
		{fmt.Errorf("list issues: %w", context.DeadlineExceeded), ClassCancelled},
	} {
		if got := Classify(tc.err); got != tc.want {
			t.Errorf("Classify(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

func TestSetupErrorTexts(t *testing.T) {
	e := &SetupError{Area: "GitHub", Cause: "no GitHub token is set", Fix: "set GH_TOKEN", Status: 401}
	if got, want := e.Error(), "GitHub setup: no GitHub token is set (HTTP 401); fix: set GH_TOKEN"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	inner := errors.New("state file /x/s.json is empty")
	if got := (&SetupError{Err: inner}).Error(); got != inner.Error() {
		t.Errorf("a wrapped setup problem prints as itself, got %q", got)
	}
}
