package store

import (
	"slices"
	"time"
)

// Forget removes what the state holds of a defect's past — its report,
// abandonment, dismissal, settlement, backlog entry, retry count and last
// failure, kept answer and heals — with the entries kept for the-loop under
// its own (v1) fingerprints, so the next scan treats the defect as new: it
// is diagnosed again and filed. fp may be one of those v1 fingerprints: the
// defect it stands for is forgotten. It returns the fingerprint forgotten
// and the state keys it was removed from (none: the state knew nothing of
// it).
//
// What records GitHub's side stays: the issue cache (issues) and a create's
// intent (intents, which may have happened). A forgotten defect whose issue
// still exists is found by its marker and counted on it, never filed twice;
// one whose issue a maintainer closed as not planned is dismissed again.
func (st *State) Forget(fp string) (canonical string, removed []string) {
	if r, ok := st.Reported.Get(fp); ok && r.AliasOf != "" {
		fp = r.AliasOf
	} else if a, ok := st.Abandoned[fp]; ok && a.AliasOf != "" {
		fp = a.AliasOf
	}
	drop := func(key string, had bool) {
		if had && !slices.Contains(removed, key) {
			removed = append(removed, key)
		}
	}
	deleteReported := func(k string) bool {
		had := st.Reported.Has(k)
		st.Reported.Delete(k)
		return had
	}
	drop("reported", deleteReported(fp))
	drop("abandoned", deleteKey(st.Abandoned, fp))
	// The copies kept for the-loop's scan name the defect they stand for
	// (a command, so reading every report is affordable).
	for k, r := range st.Reported.All() {
		if r.AliasOf == fp {
			drop("reported", deleteReported(k))
		}
	}
	for k, a := range st.Abandoned {
		if a.AliasOf == fp {
			drop("abandoned", deleteKey(st.Abandoned, k))
		}
	}
	drop("dismissed", deleteKey(st.Dismissed, fp))
	drop("settled", deleteKey(st.Settled, fp))
	drop("deferred", deleteKey(st.Deferred, fp))
	drop("attempts", deleteKey(st.Attempts, fp))
	drop("last_failure", deleteKey(st.Failures, fp))
	drop("first_failed", deleteKey(st.FirstFailed, fp))
	drop("answers", deleteKey(st.Answers, fp))
	drop("heals", deleteKey(st.Heals, fp))
	return fp, removed
}

// deleteKey deletes k from m, reporting whether it was there.
func deleteKey[M ~map[string]V, V any](m M, k string) bool {
	_, ok := m[k]
	delete(m, k)
	return ok
}

// Retry brings an abandoned defect back: its backlog entry returns (so the
// next scan files it without its records), its failures are forgotten.
// It reports whether fp was abandoned.
func (st *State) Retry(fp string) bool {
	a, ok := st.Abandoned[fp]
	if !ok {
		return false
	}
	if a.AliasOf != "" { // the-loop's copy: retry the defect it stands for
		if _, ok := st.Abandoned[a.AliasOf]; ok {
			return st.Retry(a.AliasOf)
		}
	}
	delete(st.Abandoned, fp)
	for k, alias := range st.Abandoned { // the entries kept for the-loop go too
		if alias.AliasOf == fp {
			delete(st.Abandoned, k)
		}
	}
	delete(st.Attempts, fp)
	delete(st.Failures, fp)
	delete(st.FirstFailed, fp)
	if a.Pending != nil {
		d := *a.Pending
		d.Waited = time.Time{} // waits afresh from the retry (the next scan's clock)
		st.Deferred[fp] = d
	}
	return true
}
