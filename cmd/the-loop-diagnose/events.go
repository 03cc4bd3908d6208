package main

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// Whether, and where, a scan appends its diagnosis.* events: the event log
// may be one this user can only read.

// eventLogForEvents is where diagnosis.* events go: the log itself, as the-loop
// does, except in a dry run, which writes nothing, and when the operator
// turned the-loop's event log off (eventLog.enabled: false), as the-loop's
// emit then writes nothing either.
func (s *scanner) eventLogForEvents() string {
	if s.dryRun || !s.cfg.EventLogEnabled {
		return ""
	}
	return s.eventsTarget(s.cfg.EventLog)
}

// eventsTarget is where a scan's diagnosis.* events go: the event log when
// this user may append to it, else selfDiagnosis.eventsPath, else nowhere
// (said once): a log the tool may only read is no reason to fail a run
// whose issues were filed.
func (s *scanner) eventsTarget(log string) string {
	if target := eventsTargetFor(log, s.cfg.EventsPath); target != "" {
		return target
	}
	if !s.eventsWarned {
		s.eventsWarned = true
		s.log.Warn().Str("log", log).Msg("the event log is not writable by this user: diagnosis.* events are not appended (set selfDiagnosis.eventsPath to keep them elsewhere)")
	}
	return ""
}

// eventsTargetFor is where diagnosis.* events go (eventsTarget's rule,
// without its warning): the event log when this user may append to it (or
// it is missing: it is created), else eventsPath ("" for nowhere).
func eventsTargetFor(log, eventsPath string) string {
	f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND, 0)
	if err == nil {
		f.Close()
		return log
	}
	if !errors.Is(err, fs.ErrPermission) && !errors.Is(err, syscall.EROFS) {
		return log // a missing log is created; other errors say themselves
	}
	return eventsPath
}
