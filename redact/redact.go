// Package redact masks secrets, credentials and personal or machine identity
// in text before it leaves the machine (agent prompts, issue bodies, logs).
//
// Every mask is a visible, named placeholder such as <redacted:token> or
// <redacted:email>; nothing is removed silently, so a reader still sees that
// something was there and what kind of thing it was.
//
// Detection is by context (the value after password=, an Authorization
// header, the password of a URL), by well-known provider prefixes (ghp_,
// sk-ant-, AKIA, ...), by the machine's own identity (user, home, host) and by
// the values of sensitive-named environment variables. Look-alikes that are
// not secrets (git SHAs, UUID request ids, trace ids, image digests, pod
// names, max_tokens=4096, ...) are kept because a hex string alone is not a
// secret: the words around it decide.
//
// Guarantees (checked by the fuzz tests): Scrub never panics, is idempotent
// (Scrub(Scrub(x)) == Scrub(x)), and its output is at most MaxGrowth times
// longer than its input (plus nothing for empty input): every masked span is
// at least one byte long and becomes one placeholder of at most
// MaxPlaceholderLen bytes.
package redact

import (
	"os"
	"os/user"
	"path/filepath"
	"sort"
	"strings"
)

// MaxPlaceholderLen bounds the length of any placeholder Scrub writes.
const MaxPlaceholderLen = 64

// MaxGrowth bounds len(Scrub(s)) / len(s): a one-byte secret becomes one
// placeholder of at most MaxPlaceholderLen bytes.
const MaxGrowth = MaxPlaceholderLen

// Options describe what, besides well-known secret formats, must be masked.
type Options struct {
	Env  []string // "NAME=value" pairs, like os.Environ(); values of sensitive-named vars are masked wherever they appear
	User string   // this account's name: masked where it stands as an account (see findIdentity)
	Home string   // home directory to mask
	Host string   // this machine's name (short name too, the part before the first dot): masked where it stands as a machine
	// StateRoots are the-loop's state.root directories (absolute): the
	// segment after a work directory under one names a repository and is
	// masked. Roots named the-loop or .the-loop are known without it.
	StateRoots []string
}

// Redactor masks secrets in text. It is immutable after New and safe for
// concurrent use.
type Redactor struct {
	envSecrets   []envSecret // longest first, so a longer value wins an overlap
	user         string
	userDistinct bool     // the user name cannot be a word: masked wherever it stands alone
	stateRoots   []string // lower-cased, no trailing slash
	home         string
	hosts        []string // lower-cased full and short host name
	hostDistinct []bool   // per host name: cannot be a word
}

type envSecret struct {
	value string
	name  string
}

// New compiles the options into a Redactor.
func New(o Options) *Redactor {
	r := &Redactor{}
	seen := map[string]bool{}
	for _, kv := range o.Env {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !secretEnvName(name) || !maskableSecretEnvValue(value) || seen[value] {
			continue
		}
		seen[value] = true
		r.envSecrets = append(r.envSecrets, envSecret{value: value, name: name})
	}
	sort.Slice(r.envSecrets, func(i, j int) bool {
		return len(r.envSecrets[i].value) > len(r.envSecrets[j].value)
	})
	for _, root := range o.StateRoots {
		if root = strings.ToLower(strings.TrimRight(strings.TrimSpace(root), "/")); len(root) > 1 && root[0] == '/' {
			r.stateRoots = append(r.stateRoots, root)
		}
	}
	if u := strings.TrimSpace(o.User); len(u) >= 2 && !strings.ContainsAny(u, " \t\n") {
		r.user = u
		r.userDistinct = distinctiveName(u) && !systemAccounts[u]
	}
	// A home of "/" or a relative path would mask half of every path.
	if h := strings.TrimRight(strings.TrimSpace(o.Home), `/\`); len(h) >= 3 && (h[0] == '/' || (len(h) > 2 && h[1] == ':')) {
		r.home = h
	}
	if h := strings.ToLower(strings.TrimSpace(o.Host)); h != "" && h != "localhost" && !strings.ContainsAny(h, " \t\n") {
		r.hosts = append(r.hosts, h)
		if short, _, found := strings.Cut(h, "."); found && short != "" && short != "localhost" {
			r.hosts = append(r.hosts, short)
		}
	}
	for _, h := range r.hosts {
		r.hostDistinct = append(r.hostDistinct, distinctiveName(h))
	}
	return r
}

// systemAccounts are service accounts whose names hold a separator yet read
// as words in logs (ec2-user, www-data): masked only in an account slot.
var systemAccounts = map[string]bool{
	"root": true, "admin": true, "runner": true, "ubuntu": true, "debian": true, "ec2-user": true,
	"nobody": true, "daemon": true, "user": true, "www-data": true, "jenkins": true, "circleci": true,
}

// FromEnvironment builds a Redactor for this process: os.Environ(), $USER
// (else the current user), $HOME (else os.UserHomeDir), the host name
// from both $HOSTNAME and os.Hostname(), and the-loop's state roots
// (config's state.root; relative ones are made absolute).
func FromEnvironment(stateRoots ...string) *Redactor {
	o := Options{Env: os.Environ(), User: os.Getenv("USER"), Home: os.Getenv("HOME")}
	for _, root := range stateRoots {
		if abs, err := filepath.Abs(root); err == nil && strings.TrimSpace(root) != "" {
			o.StateRoots = append(o.StateRoots, abs)
		}
	}
	if o.User == "" {
		if u, err := user.Current(); err == nil {
			o.User = u.Username
		}
	}
	if o.Home == "" {
		o.Home, _ = os.UserHomeDir()
	}
	kernelHost, _ := os.Hostname()
	o.Host = kernelHost
	if h := os.Getenv("HOSTNAME"); h != "" {
		o.Host = h
	}
	r := New(o)
	// $HOSTNAME may differ from the kernel's name (containers, CI); mask both.
	if kernelHost != "" && !strings.EqualFold(kernelHost, o.Host) {
		k := New(Options{Host: kernelHost})
		r.hosts = append(r.hosts, k.hosts...)
		r.hostDistinct = append(r.hostDistinct, k.hostDistinct...)
	}
	return r
}

// span is a half-open byte range of the input to replace by a placeholder.
type span struct {
	start, end int
	label      string
}

// scan is the per-call state shared by the detectors.
type scan struct {
	s     string
	lower string // ASCII-lower-cased s, byte-aligned with s
	spans []span
	lines lineMemo // answers "does this line name a tool?" once per line
	// skipTo: the key-value scan resumes here; a header value masked to
	// the end of its line has been read, keys inside it included.
	skipTo     int
	stateRoots []string    // Redactor.stateRoots
	glSeen     []window    // where gitleaks' patterns matched, allowed or not
	glFound    []glFinding // gitleaks' matches, before their allow-lists
}

func (sc *scan) add(start, end int, label string) {
	if start < end {
		sc.spans = append(sc.spans, span{start, end, label})
	}
}

// Scrub returns s with every secret it recognises replaced by a placeholder.
func (r *Redactor) Scrub(s string) string {
	return r.scrub(s, RecordIdentity{})
}

func (r *Redactor) scrub(s string, id RecordIdentity) string {
	if s == "" {
		return s
	}
	// Phase one: every detector reads the original text and reports spans;
	// none sees another's masks, so a host masked by one cannot hide the
	// password beside it from another.
	sc := &scan{s: s, lower: asciiLower(s), stateRoots: r.stateRoots}
	// gitleaks first: tokens.go defers to it where its rule read a run.
	findGitleaks(sc)
	findPrivateKeys(sc)
	findTokens(sc)
	findTelegramTokens(sc)
	findAzureClientSecrets(sc)
	findKeyValues(sc)
	findBearer(sc)
	findBasicCredentials(sc)
	findPairedSecrets(sc)
	findCLIPasswords(sc)
	findPromptPasswords(sc)
	findURLSecrets(sc)
	findWebhooks(sc)
	findEmails(sc)
	findIPs(sc)
	findNumbers(sc)
	findIBANs(sc)
	findInternalHosts(sc)
	findPrivatelyNamedHosts(sc)
	findLoginUsers(sc)
	findPeople(sc)
	findHomePaths(sc)
	findPaths(sc)
	r.findIdentity(sc)
	r.findEnvSecrets(sc)
	id.find(sc.s, sc.lower, func(start, end int) { sc.add(start, end, "identity") })
	// After the package's own spans: on a tie in width their label
	// (password, token) wins over a gitleaks rule's, as apply keeps the
	// first of equal spans.
	allowGitleaks(sc, sc.spans)
	if len(sc.spans) == 0 {
		return s
	}
	// Phase two: a secret found once is masked wherever it recurs, then the
	// text is masked in one pass.
	maskRecurrences(sc)
	return apply(s, sc.spans)
}

// notRecurring are kinds whose value is masked only where a detector saw
// it: a host, an address or a path component also stands for itself in
// other places (a user's name is a word elsewhere), and the detectors that
// find them already look at every occurrence.
var notRecurring = map[string]bool{
	"path": true, "repo": true, "home": true, "host": true, "ip": true, "email": true, "user": true, "identity": true,
	"iban": true, "phone": true, "card": true, "ssn": true,
}

// minRecurring is the shortest secret searched for elsewhere in the text:
// shorter values (a 4-digit PIN) are words and numbers in other places.
const minRecurring = 6

// maskRecurrences adds a span for every other whole-token occurrence of a
// value some detector called a credential.
func maskRecurrences(sc *scan) {
	s := sc.s
	var seen map[string]bool
	n := len(sc.spans)
	for k := 0; k < n; k++ {
		sp := sc.spans[k]
		if sp.end-sp.start < minRecurring || notRecurring[sp.label] {
			continue
		}
		v := s[sp.start:sp.end]
		if seen[v] {
			continue
		}
		if seen == nil {
			seen = map[string]bool{}
		}
		seen[v] = true
		for off := 0; ; {
			i := strings.Index(s[off:], v)
			if i < 0 {
				break
			}
			start := off + i
			off = start + len(v)
			if start != sp.start && alnumBoundary(s, start, off) {
				sc.add(start, off, sp.label)
			}
		}
	}
}

// apply merges overlapping spans and writes placeholders. Spans that touch
// an existing placeholder are dropped: the placeholder already stands for
// what was there, and masking around it again would break idempotence.
func apply(s string, spans []span) string {
	sort.SliceStable(spans, func(i, j int) bool {
		if spans[i].start != spans[j].start {
			return spans[i].start < spans[j].start
		}
		return spans[i].end > spans[j].end
	})
	existing := placeholderRanges(s)
	var b strings.Builder
	b.Grow(len(s) + 32*len(spans))
	pos := 0
	for i := 0; i < len(spans); {
		// Overlapping spans become one mask named after the widest: a
		// credential inside a URL and the URL's credentials are one secret.
		cur := spans[i]
		widest := cur.end - cur.start
		i++
		for i < len(spans) && spans[i].start <= cur.end {
			if w := spans[i].end - spans[i].start; w > widest {
				widest, cur.label = w, spans[i].label
			}
			if spans[i].end > cur.end {
				cur.end = spans[i].end
			}
			i++
		}
		if overlapsAny(cur, existing) {
			continue
		}
		b.WriteString(s[pos:cur.start])
		b.WriteString(placeholder(cur.label))
		pos = cur.end
	}
	b.WriteString(s[pos:])
	return b.String()
}

const placeholderPrefix = "<redacted"

func placeholder(label string) string {
	if label == "" {
		return placeholderPrefix + ">"
	}
	p := placeholderPrefix + ":" + label + ">"
	if len(p) > MaxPlaceholderLen {
		return placeholderPrefix + ">"
	}
	return p
}

// placeholderRanges finds placeholders already present in s.
func placeholderRanges(s string) [][2]int {
	var out [][2]int
	for off := 0; ; {
		i := strings.Index(s[off:], placeholderPrefix)
		if i < 0 {
			return out
		}
		start := off + i
		end := placeholderEnd(s, start)
		if end < 0 {
			off = start + len(placeholderPrefix)
			continue
		}
		out = append(out, [2]int{start, end})
		off = end
	}
}

// placeholderEnd returns the end of the placeholder starting at i, or -1.
func placeholderEnd(s string, i int) int {
	j := i + len(placeholderPrefix)
	if j < len(s) && s[j] == '>' {
		return j + 1
	}
	if j >= len(s) || s[j] != ':' {
		return -1
	}
	for k := j + 1; k < len(s) && k-i < MaxPlaceholderLen; k++ {
		c := s[k]
		if c == '>' {
			return k + 1
		}
		if !(isAlnum(c) || c == '-' || c == '_' || c == ':' || c == '.' || c == '$') {
			return -1
		}
	}
	return -1
}

func isPlaceholderAt(s string, i int) bool {
	return strings.HasPrefix(s[i:], placeholderPrefix) && placeholderEnd(s, i) > 0
}

func overlapsAny(sp span, ranges [][2]int) bool {
	// ranges is sorted; a linear scan is fine because placeholders are rare
	// in fresh input and few in scrubbed input.
	for _, r := range ranges {
		if r[0] >= sp.end {
			return false
		}
		if r[1] > sp.start {
			return true
		}
	}
	return false
}

func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; 'A' <= c && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// alnumBoundary reports whether s[start:end] is not glued to letters or
// digits on either side. A placeholder counts as glued: it stands for text
// that was there, so a match next to one must be judged the same way before
// and after masking (idempotence).
func alnumBoundary(s string, start, end int) bool {
	return !gluedBefore(s, start) && !gluedAfter(s, end)
}

func gluedBefore(s string, i int) bool {
	return i > 0 && (isAlnum(s[i-1]) || placeholderEndsAt(s, i))
}

func gluedAfter(s string, i int) bool {
	return i < len(s) && (isAlnum(s[i]) || isPlaceholderAt(s, i))
}

// placeholderEndsAt reports whether a placeholder ends just before i.
func placeholderEndsAt(s string, i int) bool {
	if i == 0 || s[i-1] != '>' {
		return false
	}
	j := strings.LastIndex(s[max(0, i-MaxPlaceholderLen):i], placeholderPrefix)
	if j < 0 {
		return false
	}
	j += max(0, i-MaxPlaceholderLen)
	return placeholderEnd(s, j) == i
}

// nextWordEnd returns the end of the next occurrence of word (lower case)
// in lower[off:end] that does not continue a word before it, or -1.
func nextWordEnd(lower string, off, end int, word string) int {
	for off < end {
		i := strings.Index(lower[off:end], word)
		if i < 0 {
			return -1
		}
		start := off + i
		off = start + len(word)
		if start == 0 || !isAlnum(lower[start-1]) {
			return off
		}
	}
	return -1
}
