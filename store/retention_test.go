package store

import (
	"testing"
	"time"
)

// The backlog's retention counts the time a defect waited by the tool's
// clock: records months old that have just begun waiting stay, and a
// backlog the cap needs longer than BacklogDays to drain stays whole.
func TestTheBacklogAgesByTheToolsClockNotItsRecords(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	old := now.AddDate(0, -4, 0)
	s := OpenMemory()
	st := NewState()
	st.Deferred["fresh-wait"] = Deferred{Since: old, LastSeen: old, Waited: now.Add(-time.Hour), Event: "x", Count: 1}
	st.Deferred["legacy"] = Deferred{Since: old, LastSeen: old, Event: "x", Count: 1} // no Waited: starts now
	st.Deferred["waited-long"] = Deferred{Since: old, LastSeen: old, Waited: now.AddDate(0, 0, -31), Event: "x", Count: 1}
	st.Deferred["waited-but-recurs"] = Deferred{Since: old, LastSeen: now.Add(-time.Hour), Waited: now.AddDate(0, 0, -31), Event: "x", Count: 9}
	s.retain(st, Retention{BacklogDays: 30}, now)
	for _, fp := range []string{"fresh-wait", "legacy", "waited-but-recurs"} {
		if _, ok := st.Deferred[fp]; !ok {
			t.Errorf("%s pruned", fp)
		}
	}
	if _, ok := st.Deferred["waited-long"]; ok {
		t.Errorf("a defect unseen for the whole 31 days it waited is kept")
	}
	if w := st.Deferred["legacy"].Waited; !w.Equal(now) {
		t.Errorf("an entry of an older release starts waiting at %v, want now", w)
	}

	// 100 defects at 3 a day need 34 days: none that waited 31 goes.
	st = NewState()
	for i := range 100 {
		st.Deferred[string(rune('A'+i%26))+time.Duration(i).String()] = Deferred{Since: old, LastSeen: old, Waited: now.AddDate(0, 0, -31), Event: "x", Count: 1}
	}
	s.retain(st, Retention{BacklogDays: 30, PerDay: 3}, now)
	if len(st.Deferred) != 100 {
		t.Fatalf("%d of 100 left while the cap still drains them", len(st.Deferred))
	}
}
