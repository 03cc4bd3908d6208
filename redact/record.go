package redact

import (
	"cmp"
	"slices"
	"sort"
	"strings"
)

// RecordIdentity holds what a record's dropped fields say about whose and
// where it is (the work item's owner, repository and number, the tmux
// target, the working directory and the user in it, the delivery id, the
// actor, the branch). The allow-list keeps those fields out of a dossier;
// ScrubRecord keeps them out of the record's own error text too, and Find
// tells the fingerprinter which runs of a text are this record's identity
// (volatile across records of one defect).
//
// A run is masked only where it stands as a whole token, and only if it is
// worth masking: two characters or more, not a common word (main, docs,
// home, src, ...), and, unless its field names a person or its position in
// the value names an owner, repository or user, not a plain word at all
// (it holds a digit, a separator or a capital inside). A number (the work
// item's #7) is masked only where it stands as an issue or pull request
// number: #7, issues/7, issue view 7. A whole value that is a common word
// (branch: main) is masked only where the text marks it as a value: quoted
// on its own ('main'), as a ref's leaf (refs/heads/main, HEAD -> main,
// bot:main), as the value of a name (branch=main) or as an option's argument (-b main, --delete main), so
// "in main" of a stack trace stays.
//
// The zero value holds nothing and masks nothing.
type RecordIdentity struct {
	runs []idRun // lower-cased, longest first, no duplicates
}

type idRun struct {
	text   string
	number bool
	// common: a whole value too common to tell from prose (branch main,
	// actor admin), masked only where the text marks it as a value.
	common bool
}

// enumFields hold a value from a fixed set (harness, via, ...): never
// identity, whatever a caller passes.
var enumFields = map[string]bool{
	"harness": true, "via": true, "level": true, "gh_event": true, "source": true, "event": true, "ts": true,
	"will_retry": true, "attempts": true, "exit_code": true, "error": true,
}

// personFields name a person or an account: their value is identity even
// when it reads as a word.
var personFields = map[string]bool{
	"actor": true, "user": true, "username": true, "login": true, "sender": true, "author": true,
	"owner": true, "assignee": true, "committer": true, "requester": true,
}

// commonIdentityWords are values too common to mask on their own.
var commonIdentityWords = map[string]bool{
	"main": true, "master": true, "trunk": true, "develop": true, "dev": true, "development": true,
	"staging": true, "stage": true, "prod": true, "production": true, "release": true, "test": true,
	"tests": true, "testing": true, "feature": true, "features": true, "fix": true, "bugfix": true,
	"hotfix": true, "chore": true, "docs": true, "doc": true, "home": true, "users": true, "user": true,
	"root": true, "admin": true, "src": true, "source": true, "lib": true, "work": true, "workspace": true,
	"tmp": true, "temp": true, "var": true, "opt": true, "srv": true, "app": true, "apps": true, "api": true,
	"web": true, "www": true, "github": true, "gitlab": true, "bitbucket": true, "gh": true, "issue": true,
	"issues": true, "pull": true, "pulls": true, "pr": true, "repo": true, "repos": true, "the": true,
	"loop": true, "the-loop": true, "claude": true, "cursor": true, "agent": true, "worker": true,
	"runner": true, "build": true, "ci": true, "cd": true, "default": true, "local": true, "origin": true,
	"head": true, "refs": true, "heads": true, "tags": true, "tag": true, "null": true, "none": true,
	"true": true, "false": true, "bot": true, "webhook": true, "cli": true, "data": true, "mnt": true,
	"go": true, "code": true, "project": true, "projects": true, "git": true, "http": true, "https": true,
}

// Add takes one dropped field of a record. Values with spaces (free text)
// and values of enum fields are ignored; a path may hold spaces (a macOS
// home named after its owner, "/Users/Ana M./work").
func (id *RecordIdentity) Add(key, value string) {
	value = strings.TrimSpace(value)
	key = strings.ToLower(key)
	had := len(id.runs)
	if value == "" || len(value) > 256 || enumFields[key] || strings.ContainsAny(value, "\t\n\r") ||
		strings.IndexByte(value, ' ') >= 0 && !isAbsolutePath(value) {
		return
	}
	id.consider(value, personFields[key])
	if l := asciiLower(value); commonIdentityWords[l] {
		id.runs = append(id.runs, idRun{text: l, common: true})
	}
	v := value
	// provider:owner/repo#N (a work item) or a repository's owner/name:
	// owner and name are identity even when they read as words.
	provider := false
	if c := strings.IndexByte(v, ':'); c > 0 && c < strings.IndexByte(v+"/", '/') && allLetters(v[:c]) {
		v, provider = v[c+1:], true
	}
	repoField := provider || key == "work_item" || key == "repo" || key == "repository" || key == "full_name"
	if slash := strings.IndexByte(v, '/'); repoField && slash > 0 && strings.Count(v, "/") == 1 {
		repo, num, _ := strings.Cut(v, "#")
		owner, name, _ := strings.Cut(repo, "/")
		id.consider(repo, true)
		id.consider(owner, true)
		id.consider(name, true)
		if num != "" && allDigits(num) {
			id.runs = append(id.runs, idRun{text: num, number: true})
		}
	}
	// A working directory: the user after /home/ or /Users/ is a person.
	// The separators are ASCII, so splitting bytes splits as runes would.
	prev := ""
	for start, i := 0, 0; i <= len(value); i++ {
		if i < len(value) && !isPartSeparator(value[i]) {
			continue
		}
		if part := value[start:i]; part != "" {
			id.consider(part, strings.EqualFold(prev, "home") || strings.EqualFold(prev, "users"))
			prev = part
		}
		start = i + 1
	}
	if len(id.runs) > had { // none added: still in order
		id.normalize()
	}
}

func isPartSeparator(c byte) bool {
	switch c {
	case '/', '\\', ':', '#', '@', '=', ',', ';', '?', '&':
		return true
	}
	return false
}

// isAbsolutePath: /x, ~/x, C:\x or C:/x.
func isAbsolutePath(v string) bool {
	return v[0] == '/' || strings.HasPrefix(v, "~/") ||
		len(v) > 2 && isLetter(v[0]) && v[1] == ':' && (v[2] == '\\' || v[2] == '/')
}

// consider adds a run if it is worth masking (see RecordIdentity). The
// cheap tests come first: most runs are plain words of no person.
func (id *RecordIdentity) consider(run string, person bool) {
	if len(run) < 2 || allDigits(run) || !hasLetter(run) || !person && plainWord(run) {
		return
	}
	lower := asciiLower(run)
	if commonIdentityWords[lower] {
		return
	}
	id.runs = append(id.runs, idRun{text: lower})
}

func hasLetter(v string) bool {
	for i := 0; i < len(v); i++ {
		if isLetter(v[i]) {
			return true
		}
	}
	return false
}

// plainWord reports whether v reads as a word: not a distinctiveName,
// no capital inside, no path or URL character (one pass, not four).
func plainWord(v string) bool {
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case distinctiveByte(c), c == '/', c == '\\', c == ':', c == '#', c == '@', i > 0 && isUpper(c):
			return false
		}
	}
	return true
}

func allDigits(v string) bool {
	for i := 0; i < len(v); i++ {
		if !isDigit(v[i]) {
			return false
		}
	}
	return v != ""
}

func (id *RecordIdentity) normalize() {
	// slices.SortFunc, not sort.Slice: this runs at every field IdentityOf
	// adds, and sort.Slice's reflection allocates each time. Equal texts
	// are ordered by their flags, so duplicates end up side by side.
	slices.SortFunc(id.runs, func(a, b idRun) int {
		if len(a.text) != len(b.text) {
			return len(b.text) - len(a.text)
		}
		if c := strings.Compare(a.text, b.text); c != 0 {
			return c
		}
		return cmp.Compare(flags(a), flags(b))
	})
	out := id.runs[:0]
	for i, r := range id.runs {
		if i == 0 || r != id.runs[i-1] {
			out = append(out, r)
		}
	}
	id.runs = out
}

func flags(r idRun) int {
	n := 0
	if r.number {
		n++
	}
	if r.common {
		n += 2
	}
	return n
}

// Union returns the identity of both: what a template shared by several
// records must not show.
func (id RecordIdentity) Union(o RecordIdentity) RecordIdentity {
	if len(o.runs) == 0 {
		return id
	}
	if len(id.runs) == 0 {
		return o
	}
	u := RecordIdentity{runs: append(append(make([]idRun, 0, len(id.runs)+len(o.runs)), id.runs...), o.runs...)}
	u.normalize()
	return u
}

// Empty reports whether the identity masks nothing.
func (id RecordIdentity) Empty() bool { return len(id.runs) == 0 }

// Key is a string equal for equal identities (a cache key).
func (id RecordIdentity) Key() string {
	var b strings.Builder
	for _, r := range id.runs {
		if r.number {
			b.WriteByte('#')
		}
		b.WriteString(r.text)
		b.WriteByte(0)
	}
	return b.String()
}

// Find returns the byte ranges [start, end) of text where the identity's
// runs stand as whole tokens, sorted and not overlapping.
func (id RecordIdentity) Find(text string) [][2]int {
	if len(id.runs) == 0 || text == "" {
		return nil
	}
	var spans []span
	id.find(text, asciiLower(text), func(s, e int) { spans = append(spans, span{s, e, ""}) })
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	var out [][2]int
	for _, sp := range spans {
		if n := len(out); n > 0 && sp.start < out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], sp.end)
			continue
		}
		out = append(out, [2]int{sp.start, sp.end})
	}
	return out
}

// issueNumberBefore are what precede an issue or pull request number.
var issueNumberBefore = []string{"#", "issues/", "pull/", "pulls/", "issue ", "view ", "pr ", "number ", "number="}

func (id RecordIdentity) find(s, lower string, add func(start, end int)) {
	for _, r := range id.runs {
		for off := 0; ; {
			i := strings.Index(lower[off:], r.text)
			if i < 0 {
				break
			}
			p := off + i
			e := p + len(r.text)
			off = p + 1
			if gluedNameBefore(s, p) || gluedNameAfter(s, e) {
				continue
			}
			if r.common && !markedAsValue(s, lower, p, e) {
				continue
			}
			if r.number {
				if e < len(s) && s[e] == '.' && e+1 < len(s) && isDigit(s[e+1]) {
					continue
				}
				ok := false
				for _, b := range issueNumberBefore {
					if strings.HasSuffix(lower[:p], b) {
						ok = true
						break
					}
				}
				if !ok {
					continue
				}
			}
			add(p, e)
		}
	}
}

// refLeafBefore are what precede a ref's leaf: the ref being pushed or
// checked out (refs/heads/main, HEAD:main, HEAD -> main). A remote's branch
// (origin/main) is left out: "git rebase origin/main" names the base every
// work item rebases on, not the record's own branch.
var refLeafBefore = []string{"heads/", "head:", "head -> ", "-> "}

// markedAsValue reports whether s[p:e] stands where the text marks it as a
// value: quoted on its own, as a ref's leaf, or as an option's argument.
func markedAsValue(s, lower string, p, e int) bool {
	if p > 0 && e < len(s) && isQuoteByte(s[p-1]) && s[e] == s[p-1] {
		return true
	}
	for _, b := range refLeafBefore {
		if strings.HasSuffix(lower[:p], b) {
			return true
		}
	}
	// "owner:main" (a head ref), "branch=main": the value of a name glued
	// to it by ':' or '='.
	if p >= 2 && (s[p-1] == ':' || s[p-1] == '=') && nameChar(s[p-2]) {
		return true
	}
	// "-b main", "--delete main": the word before is an option.
	if p >= 3 && s[p-1] == ' ' {
		k := strings.LastIndexAny(s[:p-1], " \t\n") + 1
		opt := s[k : p-1]
		return len(opt) >= 2 && opt[0] == '-' && opt != "--" && isAlnum(opt[len(opt)-1])
	}
	return false
}

func isQuoteByte(c byte) bool { return c == '\'' || c == '"' || c == '`' }

// ScrubRecord is Scrub for one record's text: it also masks the record's
// own identity (see RecordIdentity) where it reappears in the text.
func (r *Redactor) ScrubRecord(text string, id RecordIdentity) string {
	return r.scrub(text, id)
}
