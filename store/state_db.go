package store

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/the-loop/the-loop-diagnose/fingerprint"
)

// This file maps a State onto the database's rows (migrations/00001_state.sql):
// what is loaded at open, what is read per key on demand, and the diff
// that turns an Update into the rows it changed.

// op is one statement of a transaction, ? placeholders.
type op struct {
	q    string
	args []any
}

// batch is what one Update writes: its statements, and what to record as
// committed once the transaction committed.
type batch struct {
	ops  []op
	done []func()
}

func (b *batch) add(q string, args ...any) { b.ops = append(b.ops, op{q, args}) }

// exec runs the batch in tx.
func (b *batch) exec(db *DB, tx *sql.Tx) error {
	for _, o := range b.ops {
		if _, err := tx.Exec(db.Rebind(o.q), o.args...); err != nil {
			return fmt.Errorf("%s: %w", strings.Fields(o.q)[0]+" "+tableOf(o.q), err)
		}
	}
	return nil
}

// tableOf names the table a statement writes, for an error message.
func tableOf(q string) string {
	f := strings.Fields(q)
	for i, w := range f {
		if (strings.EqualFold(w, "INTO") || strings.EqualFold(w, "FROM") || strings.EqualFold(w, "UPDATE")) && i+1 < len(f) {
			return f[i+1]
		}
	}
	return ""
}

// ms is a time as the schema keeps it: unix milliseconds, 0 for none.
func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

func same[V comparable](a, b V) bool { return a == b }
func deepSame[V any](a, b V) bool    { return reflect.DeepEqual(a, b) }

// collection is one kind of the entries table: a bounded map of the State,
// loaded whole at open and written per changed entry.
type collection interface {
	kind() string
	shared() bool
	decode(st *State, fp string, body []byte) error
	diff(st *State, scope string, b *batch) error
}

type mapColl[V any] struct {
	name string
	// fleet: one row for every deployment of a fleet (scope ''), else the
	// deployment's own.
	fleet     bool
	field     func(*State) map[string]V
	eq        func(a, b V) bool
	expires   func(V) time.Time // when retention may delete it; nil: never
	committed map[string]V
}

func (c *mapColl[V]) kind() string { return c.name }
func (c *mapColl[V]) shared() bool { return c.fleet }

func (c *mapColl[V]) shadow() map[string]V {
	if c.committed == nil {
		c.committed = map[string]V{}
	}
	return c.committed
}

func (c *mapColl[V]) decode(st *State, fp string, body []byte) error {
	var v V
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("%s entry %q: %w", c.name, fp, err)
	}
	c.field(st)[fp] = v
	c.shadow()[fp] = v
	return nil
}

func (c *mapColl[V]) diff(st *State, scope string, b *batch) error {
	done, err := diffMap(c.field(st), c.shadow(), c.eq, func(fp string, v V) error {
		body, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("%s entry %q: %w", c.name, fp, err)
		}
		var exp any // NULL: kept until the state itself drops it
		if c.expires != nil {
			if t := c.expires(v); !t.IsZero() {
				exp = ms(t)
			}
		}
		b.add(`INSERT INTO entries (kind, scope, fingerprint, body, expires_ms) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (kind, scope, fingerprint) DO UPDATE SET body = excluded.body, expires_ms = excluded.expires_ms`,
			c.name, scope, fp, string(body), exp)
		return nil
	}, func(fp string) error {
		b.add(`DELETE FROM entries WHERE kind = ? AND scope = ? AND fingerprint = ?`, c.name, scope, fp)
		return nil
	})
	if err == nil {
		b.done = append(b.done, done)
	}
	return err
}

// collections are the State's bounded maps, by kind. What a fleet shares
// (the-loop's retry counts, abandonments, dismissals, intents, the
// diagnosis cache) is one row for all; what follows one deployment's log
// and disk (its backlog and dossiers, its settlements and heals, its
// outages, its charges) is its own.
func collections() []collection {
	return []collection{
		&mapColl[Abandoned]{name: "abandoned", fleet: true, field: func(s *State) map[string]Abandoned { return s.Abandoned }, eq: deepSame[Abandoned]},
		&mapColl[int]{name: "attempts", fleet: true, field: func(s *State) map[string]int { return s.Attempts }, eq: same[int]},
		&mapColl[Intent]{name: "intents", fleet: true, field: func(s *State) map[string]Intent { return s.Intents }, eq: same[Intent]},
		&mapColl[Dismissal]{name: "dismissed", fleet: true, field: func(s *State) map[string]Dismissal { return s.Dismissed }, eq: same[Dismissal]},
		&mapColl[string]{name: "last_failure", fleet: true, field: func(s *State) map[string]string { return s.Failures }, eq: same[string]},
		&mapColl[time.Time]{name: "first_failed", fleet: true, field: func(s *State) map[string]time.Time { return s.FirstFailed }, eq: same[time.Time]},
		&mapColl[KeptAnswer]{name: "answers", fleet: true, field: func(s *State) map[string]KeptAnswer { return s.Answers }, eq: deepSame[KeptAnswer]},
		&mapColl[Deferred]{name: "deferred", field: func(s *State) map[string]Deferred { return s.Deferred }, eq: deepSame[Deferred]},
		&mapColl[time.Time]{name: "charged", field: func(s *State) map[string]time.Time { return s.Charged }, eq: same[time.Time]},
		&mapColl[Outage]{name: "outages", field: func(s *State) map[string]Outage { return s.Outages }, eq: same[Outage]},
		&mapColl[Settlement]{name: "settled", field: func(s *State) map[string]Settlement { return s.Settled }, eq: deepSame[Settlement],
			expires: func(v Settlement) time.Time { return v.Until }},
		&mapColl[[]time.Time]{name: "heals", field: func(s *State) map[string][]time.Time { return s.Heals }, eq: deepSame[[]time.Time]},
	}
}

// metaItem is one of the State's singletons, a row of meta.
type metaItem struct {
	name string
	ptr  func(*State) any
	// token, when set, changes whenever the value does and is far cheaper
	// than encoding it (the template memory: megabytes at 100k defects).
	token func(*State) string
}

var metaItems = []metaItem{
	{name: "cursor", ptr: func(s *State) any { return &s.Cursor }},
	{name: "posted", ptr: func(s *State) any { return &s.Posted }},
	{name: "diagnosed", ptr: func(s *State) any { return &s.Diagnosed }},
	{name: "costs", ptr: func(s *State) any { return &s.Costs }},
	{name: "cost_total", ptr: func(s *State) any { return &s.CostTotal }},
	{name: "deployment", ptr: func(s *State) any { return &s.Deployment }},
	{name: "template_memory", ptr: func(s *State) any { return &s.TemplateMemory }, token: memoryToken},
	{name: "incidents", ptr: func(s *State) any { return &s.Incidents }},
	{name: "incident_keys", ptr: func(s *State) any { return &s.IncidentKeys }},
	{name: "foreign_markers", ptr: func(s *State) any { return &s.ForeignMarkers }},
	{name: "issue_login", ptr: func(s *State) any { return &s.IssueLogin }},
	{name: "github_resume", ptr: func(s *State) any { return &s.GitHubResume }},
}

// memoryToken changes with every learning call (Tick) and with anything
// the stages replace wholesale.
func memoryToken(s *State) string {
	m := s.TemplateMemory
	if m == nil {
		return "nil"
	}
	return fmt.Sprintf("%p/%d/%d/%d", m, m.Tick, len(m.Slots), len(m.Families))
}

// extraPrefix names the meta rows that keep a JSON state's unknown keys.
const extraPrefix = "x:"

// rows is the State's persistence in one database: the committed shadows
// the diff compares against.
type rows struct {
	db     *DB
	scope  string // this deployment's key for its own rows ('' on SQLite)
	colls  []collection
	meta   map[string][]byte // committed bodies by meta name
	tokens map[string]string
}

func (r *rows) scopeOf(fleet bool) string {
	if fleet {
		return ""
	}
	return r.scope
}

// load reads the bounded part of the state and wires the lazy one.
func (r *rows) load(st *State, fail func(error)) error {
	byKind := map[string]collection{}
	for _, c := range r.colls {
		byKind[c.kind()] = c
	}
	q, err := r.db.SQL.Query(r.db.Rebind(`SELECT kind, scope, fingerprint, body FROM entries WHERE scope = '' OR scope = ?`), r.scope)
	if err != nil {
		return err
	}
	defer q.Close()
	for q.Next() {
		var kind, scope, fp, body string
		if err := q.Scan(&kind, &scope, &fp, &body); err != nil {
			return err
		}
		c, ok := byKind[kind]
		if !ok || scope != r.scopeOf(c.shared()) {
			continue // a newer version's kind, or another deployment's
		}
		if err := c.decode(st, fp, []byte(body)); err != nil {
			return err
		}
	}
	if err := q.Err(); err != nil {
		return err
	}
	if err := r.loadMeta(st); err != nil {
		return err
	}
	st.Reported = &Keyed[Reported]{fetch: r.fetchReported, all: r.allReported, failed: fail}
	st.Issues = &Keyed[IssueRef]{fetch: r.fetchIssue, all: r.allIssues, failed: fail}
	st.olderReported = func() bool {
		older, err := r.olderReported()
		if err != nil {
			fail(err)
			return true // matching aliases costs time, never a duplicate
		}
		return older
	}
	return nil
}

func (r *rows) loadMeta(st *State) error {
	q, err := r.db.SQL.Query(r.db.Rebind(`SELECT name, body FROM meta WHERE scope = ?`), r.scope)
	if err != nil {
		return err
	}
	defer q.Close()
	items := map[string]metaItem{}
	for _, m := range metaItems {
		items[m.name] = m
	}
	for q.Next() {
		var name, body string
		if err := q.Scan(&name, &body); err != nil {
			return err
		}
		if m, ok := items[name]; ok {
			if err := json.Unmarshal([]byte(body), m.ptr(st)); err != nil {
				return fmt.Errorf("meta %s: %w", name, err)
			}
			if m.token != nil {
				r.tokens[name] = m.token(st)
			}
		} else if key, ok := strings.CutPrefix(name, extraPrefix); ok {
			if st.extra == nil {
				st.extra = map[string]json.RawMessage{}
			}
			st.extra[key] = json.RawMessage(body)
		}
		r.meta[name] = []byte(body)
	}
	return q.Err()
}

// diff adds to b every row the State changed since the last commit.
func (r *rows) diff(st *State, b *batch) error {
	for _, c := range r.colls {
		if err := c.diff(st, r.scopeOf(c.shared()), b); err != nil {
			return err
		}
	}
	done, err := st.Reported.diff(same[Reported], func(fp string, v Reported) error {
		b.add(`INSERT INTO reported (fingerprint, url, number, at_ms, event, title, alias_of) VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (fingerprint) DO UPDATE SET url = excluded.url, number = excluded.number, at_ms = excluded.at_ms,
			event = excluded.event, title = excluded.title, alias_of = excluded.alias_of`,
			fp, v.URL, v.Number, ms(v.At), v.Event, v.Title, v.AliasOf)
		return nil
	}, func(fp string) error {
		b.add(`DELETE FROM reported WHERE fingerprint = ?`, fp)
		return nil
	})
	if err != nil {
		return err
	}
	b.done = append(b.done, done)
	done, err = st.Issues.diff(deepSame[IssueRef], func(fp string, v IssueRef) error {
		body, err := json.Marshal(v)
		if err != nil {
			return err
		}
		b.add(`INSERT INTO issues (fingerprint, body) VALUES (?, ?) ON CONFLICT (fingerprint) DO UPDATE SET body = excluded.body`, fp, string(body))
		return nil
	}, func(fp string) error {
		b.add(`DELETE FROM issues WHERE fingerprint = ?`, fp)
		return nil
	})
	if err != nil {
		return err
	}
	b.done = append(b.done, done)
	return r.diffMeta(st, b)
}

func (r *rows) diffMeta(st *State, b *batch) error {
	put := func(name string, body []byte, token string) {
		if old, ok := r.meta[name]; ok && string(old) == string(body) {
			return
		}
		b.add(`INSERT INTO meta (scope, name, body) VALUES (?, ?, ?) ON CONFLICT (scope, name) DO UPDATE SET body = excluded.body`,
			r.scope, name, string(body))
		b.done = append(b.done, func() {
			r.meta[name] = body
			if token != "" {
				r.tokens[name] = token
			}
		})
	}
	for _, m := range metaItems {
		var token string
		if m.token != nil {
			if token = m.token(st); token == r.tokens[m.name] {
				continue
			}
		}
		body, err := json.Marshal(m.ptr(st))
		if err != nil {
			return fmt.Errorf("meta %s: %w", m.name, err)
		}
		put(m.name, body, token)
	}
	for key, v := range st.extra {
		put(extraPrefix+key, v, "")
	}
	return nil
}

func (r *rows) fetchReported(fp string) (Reported, bool, error) {
	var v Reported
	var at int64
	err := r.db.SQL.QueryRow(r.db.Rebind(`SELECT url, number, at_ms, event, title, alias_of FROM reported WHERE fingerprint = ?`), fp).
		Scan(&v.URL, &v.Number, &at, &v.Event, &v.Title, &v.AliasOf)
	if err == sql.ErrNoRows {
		return v, false, nil
	}
	if err != nil {
		return v, false, &StoreError{r.db.Name(), fmt.Errorf("reading reported %q: %w", fp, err)}
	}
	v.At = fromMS(at)
	return v, true, nil
}

func (r *rows) allReported() (map[string]Reported, error) {
	q, err := r.db.SQL.Query(`SELECT fingerprint, url, number, at_ms, event, title, alias_of FROM reported`)
	if err != nil {
		return nil, &StoreError{r.db.Name(), err}
	}
	defer q.Close()
	out := map[string]Reported{}
	for q.Next() {
		var fp string
		var v Reported
		var at int64
		if err := q.Scan(&fp, &v.URL, &v.Number, &at, &v.Event, &v.Title, &v.AliasOf); err != nil {
			return nil, &StoreError{r.db.Name(), err}
		}
		v.At = fromMS(at)
		out[fp] = v
	}
	return out, q.Err()
}

func (r *rows) fetchIssue(fp string) (IssueRef, bool, error) {
	var v IssueRef
	var body string
	err := r.db.SQL.QueryRow(r.db.Rebind(`SELECT body FROM issues WHERE fingerprint = ?`), fp).Scan(&body)
	if err == sql.ErrNoRows {
		return v, false, nil
	}
	if err == nil {
		err = json.Unmarshal([]byte(body), &v)
	}
	if err != nil {
		return v, false, &StoreError{r.db.Name(), fmt.Errorf("reading issues %q: %w", fp, err)}
	}
	return v, true, nil
}

func (r *rows) allIssues() (map[string]IssueRef, error) {
	q, err := r.db.SQL.Query(`SELECT fingerprint, body FROM issues`)
	if err != nil {
		return nil, &StoreError{r.db.Name(), err}
	}
	defer q.Close()
	out := map[string]IssueRef{}
	for q.Next() {
		var fp, body string
		if err := q.Scan(&fp, &body); err != nil {
			return nil, &StoreError{r.db.Name(), err}
		}
		var v IssueRef
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			return nil, &StoreError{r.db.Name(), fmt.Errorf("issues %q: %w", fp, err)}
		}
		out[fp] = v
	}
	return out, q.Err()
}

// olderReported is HoldsOlderVersions over reported: any entry of its own
// (not an alias) whose fingerprint is not this version's or a pattern.
func (r *rows) olderReported() (bool, error) {
	var one int
	err := r.db.SQL.QueryRow(r.db.Rebind(`SELECT 1 FROM reported WHERE alias_of = '' AND fingerprint NOT LIKE ? AND fingerprint NOT LIKE ? LIMIT 1`),
		fingerprint.Version+":%", fingerprint.Version+"p:%").Scan(&one)
	if err == sql.ErrNoRows {
		return false, nil
	}
	if err != nil {
		return false, &StoreError{r.db.Name(), err}
	}
	return true, nil
}
