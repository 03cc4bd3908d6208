package pipeline

import (
	"context"
	"errors"
	"strconv"
	"time"
)

// The failure classes: how an error met while handling a defect is
// answered. Each has one type here; Classify names an error's class. The
// data form of a wait carried on an item is Wait (items.go).
//
//	class      type           what happens
//	defect     (any other)    the defect's own failure: recorded, retried a bounded number of times
//	outage     *OutageError   the service is unusable this scan: the defect waits, nothing is charged
//	setup      *SetupError    configuration only a person can fix: the scan stops
//	in doubt   *InDoubtError  a create was sent and its outcome is unknown: never sent again blind
//	deferral   *DeferralError a rate limit longer than the scan may wait, or a cap: the rest of the scan is deferred
//	cancelled  context errors the scan was stopped: nothing is recorded as failed
type Class int

const (
	ClassDefect Class = iota
	ClassOutage
	ClassSetup
	ClassInDoubt
	ClassDeferral
	ClassCancelled
)

// Classify names err's failure class (nil, too, is ClassDefect: callers
// check for nil first). A setup error wins over the others it may wrap.
func Classify(err error) Class {
	var setup *SetupError
	var outage *OutageError
	var doubt *InDoubtError
	var deferral *DeferralError
	switch {
	case errors.As(err, &setup):
		return ClassSetup
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return ClassCancelled
	case errors.As(err, &doubt):
		return ClassInDoubt
	case errors.As(err, &deferral):
		return ClassDeferral
	case errors.As(err, &outage):
		return ClassOutage
	}
	return ClassDefect
}

// OutageError is a service (GitHub) being unusable for this scan: 5xx or
// the network past the retries (or at the scan's first call), or a create
// whose outcome is unknown. The defect waits; nothing is charged to it.
type OutageError struct{ Reason string }

func (e *OutageError) Error() string { return e.Reason }

// SetupError is a failure of configuration, not of a defect: a bad token,
// a missing repository, issues disabled, no permission, or (Err set) a
// problem found outside any request that only a person can fix — the
// state file, its lock, the token's absence. The scan stops with it and no
// defect's retry count moves; a watcher stops on it too, except when
// GitHub rejects the token itself (it may be rotated while it waits).
type SetupError struct {
	Area   string // what is set up wrong, e.g. "GitHub"
	Cause  string
	Fix    string
	Status int // the HTTP status that revealed it; 0 when none was sent
	// Err is the problem itself when it says it all (it prints as Err);
	// a SetupError with Err set is never waited out.
	Err error
}

func (e *SetupError) Error() string {
	if e.Cause == "" && e.Err != nil {
		return e.Err.Error()
	}
	s := e.Area + " setup: " + e.Cause
	if e.Status != 0 {
		s += " (HTTP " + strconv.Itoa(e.Status) + ")"
	}
	return s + "; fix: " + e.Fix
}

func (e *SetupError) Unwrap() error { return e.Err }

// InDoubtError is a create that was sent and failed in a way that leaves
// its outcome unknown (a timeout, a lost connection, a 5xx); a rate limit
// is a refusal, not a doubt.
type InDoubtError struct{ Err error }

func (e *InDoubtError) Error() string { return e.Err.Error() }
func (e *InDoubtError) Unwrap() error { return e.Err }

// DeferralError is a rate limit longer than the scan may wait, or a cap
// reached: the rest of the scan is deferred. Until is when the service
// asked to be left alone until (zero: a cap).
type DeferralError struct {
	Reason string
	Until  time.Time
}

func (e *DeferralError) Error() string { return e.Reason }

// SetupCheck is one line of a setup check (doctor): what was found, or what
// is wrong and how to fix it.
type SetupCheck struct {
	Name    string `json:"name"`
	OK      bool   `json:"ok"`
	Skipped bool   `json:"skipped,omitempty"`
	Detail  string `json:"detail"`
	Fix     string `json:"fix,omitempty"`
}
