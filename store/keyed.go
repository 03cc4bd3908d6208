package store

import (
	"encoding/json"
	"maps"
	"slices"
)

// Keyed is a per-fingerprint collection that can grow without bound (every
// defect ever filed): it is read from the database one key at a time, when
// a stage asks for it, and what was read is kept for the rest of the store's
// life. Nothing ranges over it in a scan; status and export call All.
//
// A lookup the database cannot answer is taken as present (the zero entry)
// and remembered as the store's error, which fails the next Update: a
// defect is never filed twice because a read failed.
type Keyed[V any] struct {
	m       map[string]V
	missing map[string]bool // looked up and absent
	// committed are the entries as the database holds them, for those in m
	// or deleted: the next Update writes only what differs.
	committed map[string]V
	fetch     func(fp string) (V, bool, error)
	all       func() (map[string]V, error)
	failed    func(error) // records a lookup failure (the store's)
	// complete: m holds every entry (a JSON state, or after All).
	complete bool
}

// NewKeyed is an empty, complete collection (a state that is not in a
// database: tests, a dry run's import, a JSON file).
func NewKeyed[V any]() *Keyed[V] {
	return &Keyed[V]{m: map[string]V{}, missing: map[string]bool{}, committed: map[string]V{}, complete: true}
}

func (k *Keyed[V]) ensure() {
	if k.committed == nil {
		k.committed = map[string]V{}
	}
	if k.m == nil {
		k.m, k.missing = map[string]V{}, map[string]bool{}
		if k.fetch == nil {
			k.complete = true
		}
	}
}

// Get returns fp's entry, reading it from the database the first time.
func (k *Keyed[V]) Get(fp string) (V, bool) {
	k.ensure()
	if v, ok := k.m[fp]; ok {
		return v, true
	}
	var zero V
	if k.complete || k.missing[fp] {
		return zero, false
	}
	v, ok, err := k.fetch(fp)
	if err != nil {
		if k.failed != nil {
			k.failed(err)
		}
		return zero, true // fail closed: see the type's comment
	}
	if !ok {
		k.missing[fp] = true
		return zero, false
	}
	k.m[fp], k.committed[fp] = v, v
	return v, true
}

// At is Get without the presence flag.
func (k *Keyed[V]) At(fp string) V {
	v, _ := k.Get(fp)
	return v
}

// Has reports whether fp has an entry.
func (k *Keyed[V]) Has(fp string) bool {
	_, ok := k.Get(fp)
	return ok
}

// Set records fp's entry (written by the next Update).
func (k *Keyed[V]) Set(fp string, v V) {
	k.ensure()
	delete(k.missing, fp)
	k.m[fp] = v
}

// Delete removes fp's entry (deleted by the next Update).
func (k *Keyed[V]) Delete(fp string) {
	k.ensure()
	if _, ok := k.m[fp]; !ok && !k.complete {
		k.Get(fp) // so the diff knows there was a row to delete
	}
	delete(k.m, fp)
	k.missing[fp] = true
}

// All reads every entry (status, export, retry --all): the collection is
// complete from then on.
func (k *Keyed[V]) All() map[string]V {
	k.ensure()
	if !k.complete {
		all, err := k.all()
		if err != nil {
			if k.failed != nil {
				k.failed(err)
			}
			return k.m
		}
		for fp, v := range all {
			if _, ok := k.committed[fp]; !ok {
				k.committed[fp] = v
			}
		}
		for fp, v := range k.m { // what this store changed wins
			all[fp] = v
		}
		for fp := range k.missing {
			if _, ok := k.m[fp]; !ok {
				delete(all, fp)
			}
		}
		k.m, k.complete = all, true
	}
	return k.m
}

// Len is how many entries there are (reads them all).
func (k *Keyed[V]) Len() int { return len(k.All()) }

// diff calls put for each entry that differs from the database's and del
// for each the database holds that is gone. The returned done takes them as
// committed: call it only once the transaction committed.
func (k *Keyed[V]) diff(eq func(a, b V) bool, put func(string, V) error, del func(string) error) (func(), error) {
	k.ensure()
	return diffMap(k.m, k.committed, eq, put, del)
}

// diffMap is one collection's per-row write: put what changed, del what
// went; done records them in committed, after the commit. Rows are written
// in key order: deployments sharing a PostgreSQL then lock shared rows in
// one order, so their transactions cannot deadlock on each other (in map
// order, eight deployments updating the same issues rows did).
func diffMap[V any](cur, committed map[string]V, eq func(a, b V) bool, put func(string, V) error, del func(string) error) (done func(), err error) {
	var puts, dels []string
	for fp, v := range cur {
		if old, ok := committed[fp]; !ok || !eq(old, v) {
			puts = append(puts, fp)
		}
	}
	for fp := range committed {
		if _, ok := cur[fp]; !ok {
			dels = append(dels, fp)
		}
	}
	slices.Sort(puts)
	slices.Sort(dels)
	for _, fp := range puts {
		if err := put(fp, cur[fp]); err != nil {
			return nil, err
		}
	}
	for _, fp := range dels {
		if err := del(fp); err != nil {
			return nil, err
		}
	}
	return func() {
		for _, fp := range puts {
			committed[fp] = cur[fp]
		}
		for _, fp := range dels {
			delete(committed, fp)
		}
	}, nil
}

func (k *Keyed[V]) MarshalJSON() ([]byte, error) { return json.Marshal(k.All()) }

// UnmarshalJSON reads the-loop's shapes (FlexMap).
func (k *Keyed[V]) UnmarshalJSON(b []byte) error {
	var m FlexMap[V]
	if err := m.UnmarshalJSON(b); err != nil {
		return err
	}
	*k = Keyed[V]{m: maps.Clone(map[string]V(m)), missing: map[string]bool{}, committed: map[string]V{}, complete: true}
	return nil
}
