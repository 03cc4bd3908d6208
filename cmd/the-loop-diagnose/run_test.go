package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"testing"
	"time"

	"github.com/the-loop/the-loop-diagnose/logread"
	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/store"
)

func TestBackoffStartsAtTheIntervalAndIsCapped(t *testing.T) {
	for _, tc := range []struct {
		interval time.Duration
		want     []time.Duration
	}{
		{time.Hour, []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 15 * time.Minute, 15 * time.Minute}},
		{30 * time.Second, []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 5 * time.Minute, 5 * time.Minute}},
		{200 * time.Millisecond, []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, 1600 * time.Millisecond, 2 * time.Second}},
	} {
		b := newBackoff(tc.interval)
		for i, want := range tc.want {
			if got := b.next(); got != want {
				t.Fatalf("interval %s: wait %d = %s, want %s", tc.interval, i, got, want)
			}
		}
		b.reset()
		if got := b.next(); got != tc.want[0] {
			t.Fatalf("interval %s: after reset %s, want %s", tc.interval, got, tc.want[0])
		}
	}
}

func TestWatchStopsOnlyForWhatAPersonMustFix(t *testing.T) {
	scan := func(err error) error { return fmt.Errorf("%w (set eventLog.path or --log)", err) }
	for _, tc := range []struct {
		name  string
		err   error
		stops bool
	}{
		{"rejected token", &pipeline.SetupError{Status: http.StatusUnauthorized, Cause: "the GitHub token was rejected (Bad credentials)"}, false},
		{"403 bad credentials", &pipeline.SetupError{Status: http.StatusForbidden, Cause: "the token may not create issues in o/r (Bad credentials)"}, false},
		{"GitHub down", &pipeline.OutageError{Reason: "GitHub is not answering (HTTP 502)"}, false},
		{"waiting for the agent", &exitError{code: exitFailed, msg: "waiting for the agent: quota", waiting: true}, false},
		{"missing log", scan(&logread.LogMissingError{Path: "/x/events.jsonl"}), false},
		{"anything else", errors.New("read /x/events.jsonl: input/output error"), false},
		{"no permission on GitHub", &pipeline.SetupError{Status: http.StatusForbidden, Cause: "the token may not create issues in o/r (Resource not accessible)"}, true},
		{"repository not found", &pipeline.SetupError{Status: http.StatusNotFound}, true},
		{"no token", &pipeline.SetupError{Err: &pipeline.SetupError{Status: http.StatusUnauthorized, Cause: "no GitHub token is set"}}, true},
		{"corrupt state", &pipeline.SetupError{Err: &store.CorruptStateError{Path: "/x/s.json", Problem: "is empty"}}, true},
		{"unreadable log", scan(fmt.Errorf("event log /x: %w", fs.ErrPermission)), true},
		{"bad config", &ConfigError{File: "c.yaml", Key: "selfDiagnosis.repo", Err: errors.New("bad")}, true},
		{"second signal", context.Canceled, true},
	} {
		if got := watchStops(tc.err); got != tc.stops {
			t.Errorf("%s: watchStops = %v, want %v", tc.name, got, tc.stops)
		}
	}
}
