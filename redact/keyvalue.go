package redact

import (
	"sort"
	"strings"
)

// Secrets by context: the value after a sensitive key in key=value, JSON,
// YAML, INI, env, logfmt, CLI-flag and HTTP-header forms.
//
// The key's last word decides (password, secret, token, api key, ...), so
// secret_name=db-credentials, max_tokens=4096, TOKEN_TTL_SECONDS=3600,
// auth_mode=oidc and credential_source=Ec2InstanceMetadata are kept: their
// last words are name, tokens, seconds, mode and source.
//
// This file parses: it finds the keys and reads the value after each, in
// whichever syntax. keyvalue_accept.go decides whether the value is a
// secret; headers.go reads Authorization and Cookie values.

// keywords that can appear in a sensitive key name, in lower case.
var keyKeywords = []string{"pass", "pw", "secret", "token", "key", "auth", "cred", "cookie", "sig", "session", "psw"}

func keyChar(c byte) bool {
	return isAlnum(c) || c == '_' || c == '-' || c == '.'
}

// keywordsByFirstByte lets findKeyValues find every keyword in one pass.
var keywordsByFirstByte = func() (idx [256][]string) {
	for _, kw := range keyKeywords {
		idx[kw[0]] = append(idx[kw[0]], kw)
	}
	return idx
}()

func findKeyValues(sc *scan) {
	s, lower := sc.s, sc.lower
	prevStart := -1
	for p := 0; p < len(lower); p++ {
		if p < sc.skipTo {
			p = sc.skipTo
			if p >= len(lower) {
				return
			}
		}
		kws := keywordsByFirstByte[lower[p]]
		if kws == nil {
			continue
		}
		hit := false
		for _, kw := range kws {
			if strings.HasPrefix(lower[p:], kw) {
				hit = true
				break
			}
		}
		if !hit {
			continue
		}
		ks := p
		for ks > 0 && keyChar(s[ks-1]) {
			ks--
		}
		ke := p
		for ke < len(s) && keyChar(s[ke]) {
			ke++
		}
		if ks != prevStart {
			prevStart = ks
			keyValue(sc, ks, ke)
		}
		p = ke // the rest of this key holds no other key
	}
}

// keyValue reads the key s[ks:ke] and the value that follows it in
// whichever syntax holds them; acceptValue decides whether the value is a
// secret. Authorization and Cookie values go to headers.go.
func keyValue(sc *scan, ks, ke int) {
	s := sc.s
	flag := 0
	if ks < len(s) && s[ks] == '-' && (ks == 0 || s[ks-1] == ' ' || s[ks-1] == '\t' || s[ks-1] == '\'' || s[ks-1] == '"') {
		flag = 1
		if ks+1 < len(s) && s[ks+1] == '-' {
			flag = 2
		}
	}
	nameEnd := ke
	for nameEnd > ks && (s[nameEnd-1] == '.' || s[nameEnd-1] == '-') {
		nameEnd--
	}
	class, label := classifyKey(s[ks:nameEnd])
	if class == keyNone {
		return
	}
	if class == keyWeak && flag == 0 {
		// Two words in prose or INI: "api key", "access key", "secret key".
		if w := wordBefore(s, ks); w != "" {
			if c2, l2 := classifyKey(w + " " + s[ks:nameEnd]); c2 == keyStrong {
				class, label = c2, l2
			}
		}
	}
	if flag > 0 && class == keyWeak && label == "password" {
		class = keyStrong // --pass X: no tool passes a count as --pass
	}
	p := nameEnd
	// <password>x</password>, Maven settings, any XML element.
	if p == ke && ks > 0 && s[ks-1] == '<' && p < len(s) && s[p] == '>' {
		xmlElementValue(sc, p+1, class, label)
		return
	}
	quotedKey := false
	// Closing quote of a JSON/YAML/Python key: "password": / \"password\": / 'pwd':
	if ks > 0 && (s[ks-1] == '"' || s[ks-1] == '\'') && p < len(s) && s[p] == s[ks-1] {
		p++
		quotedKey = true
	} else if ks > 0 && s[ks-1] == '[' && p < len(s) && s[p] == ']' && p+1 < len(s) && (s[p+1] == ' ' || s[p+1] == '=') {
		p++ // [Password] = x: a bracketed key (SQL, PowerShell, INI-like)
		quotedKey = true
	} else if ks > 1 && s[ks-2] == '\\' && s[ks-1] == '"' && strings.HasPrefix(s[p:], `\"`) {
		p += 2
		quotedKey = true
	} else if p != ke {
		return // "key." at the end of a sentence: no value follows
	}
	if quotedKey {
		if q, ok := indexOrCall(s, ks, p); ok {
			if q < 0 {
				return
			}
			if s[q] == '=' {
				p = q // ENV["API_KEY"] = x: the pair's = follows
			} else {
				vs, ve, quoted := readValue(s, q) // define('DB_PASSWORD', 'x')
				if quoted && vs < ve && !isPlaceholderAt(s, vs) && !trivialValue(s[vs:ve]) && (class == keyStrong || looseValue(s[vs:ve], true, class, label)) {
					sc.add(vs, ve, label)
				}
				return
			}
		}
	}
	// The secret word is itself the value of a name field: NuGet's
	// <add key="ClearTextPassword" value="x"/>, Kubernetes' env list
	// {name: DB_PASSWORD, value: x}. The sibling value field is the secret.
	if namesField(s, ks) {
		siblingValue(sc, p, class, label)
		return
	}
	sp := p
	for p < len(s) && (s[p] == ' ' || s[p] == '\t') {
		p++
	}
	spaced := p > sp
	// A typed declaration: "var apiToken string = x", "apiToken: String = x".
	if t := typedDeclaration(s, p); t > p {
		p = t
	}
	sep := byte(' ')
	dash := false
	op := assignmentOperator(s, p)
	switch {
	case op > 0:
		// Make's ?= ::= :::=, PHP's .=, +=, R's <-.
		sep = '='
		p += op
	case spaced && p+1 < len(s) && s[p] == '-' && s[p+1] == ' ':
		sep, dash = '=', true // "key - 'value'": taken only when quoted
		p++
	case p < len(s) && s[p] == '=' && !(p+2 < len(s) && s[p+1] == '=' && s[p+2] <= ' '):
		// "password == x" compares; "password==x" is a value starting with =.
		sep = '='
		p++
		if p < len(s) && s[p] == '>' {
			p++
		}
	case p < len(s) && s[p] == ':' && (p+1 >= len(s) || s[p+1] != ':' || dumpField(s, ks, p)):
		sep = ':'
		p++
		if p < len(s) && s[p] == '=' {
			p++
		}
	case !spaced:
		return
	}
	// Key:value with nothing between is a field of a Go or Python dump
	// (map[password:x], {Password:x}), not prose.
	tight := !spaced && sep == ':' && p < len(s) && s[p] != ' ' && s[p] != '\t'
	if sep != ' ' {
		for p < len(s) && (s[p] == ' ' || s[p] == '\t') {
			p++
		}
	}
	if p >= len(s) || s[p] == '\n' || s[p] == '\r' {
		return
	}
	if sep != ' ' {
		p = skipOpeners(s, p)
	}
	switch class {
	case keyAuthz:
		if sep != ' ' {
			authorizationValue(sc, p)
		}
		return
	case keyCookie:
		if sep == ':' || sep == '=' {
			cookieValue(sc, p)
		}
		return
	}
	vs, ve, quoted := readValue(s, p)
	if dash && !quoted {
		return
	}
	if tight && !quoted {
		vs, ve = p, dumpValueEnd(s, p)
	} else if !quoted && (sep == ' ' && flag > 0 || sep != ' ' && atLineStart(s, ks)) {
		// A flag's argument, and the value of a line-oriented syntax (INI,
		// env, YAML, a header), run to whitespace: , ; & are the password's.
		ve = proseValueEnd(s, vs)
	}
	if vs >= ve || isPlaceholderAt(s, vs) {
		return
	}
	acceptValue(sc, keyPair{ks, nameEnd, class, label, flag, sep, quoted, quotedKey, tight, vs, ve})
}

// dumpField reports whether "Key::" at ks is a field of a Go dump whose
// value starts with a colon (map[password::x]) rather than a scope
// (Token::Invalid): the field opens the dump or follows a space, and the
// value holds a symbol, which a scoped name does not.
func dumpField(s string, ks, colon int) bool {
	if ks == 0 || strings.IndexByte("[{ ", s[ks-1]) < 0 || colon+2 >= len(s) {
		return false
	}
	v := s[colon+1 : dumpValueEnd(s, colon+1)]
	for i := 1; i < len(v); i++ {
		if c := v[i]; !(isAlnum(c) || c == '_') {
			return c != ':' // a symbol: a password, not Scope::Name::Deeper
		}
	}
	return false
}

// indexOrCall recognises a quoted secret name used as an index or as a
// call's first argument: ENV["API_KEY"] = x, headers['X-Api-Key'] = x,
// define('DB_PASSWORD', 'x'), os.Setenv("API_TOKEN", "x"). It returns the
// position of the '=' or of the value's opening quote, or -1 when the form
// matched but no value follows; ok is false for any other form. A list of
// names (["password", "token"]) is neither: its names follow [ or ,.
func indexOrCall(s string, ks, p int) (int, bool) {
	o := ks - 1 // the key's opening quote
	if o > 0 && s[o-1] == '\\' {
		o--
	}
	b := o
	for b > 0 && s[b-1] == ' ' {
		b--
	}
	if b == 0 {
		return 0, false
	}
	skip := func(q int) int {
		for q < len(s) && (s[q] == ' ' || s[q] == '\t') {
			q++
		}
		return q
	}
	switch {
	case s[b-1] == '[' && p < len(s) && s[p] == ']':
		q := skip(p + 1)
		if q < len(s) && s[q] == '=' && !(q+1 < len(s) && s[q+1] == '=') {
			return q, true
		}
		return -1, true
	case s[b-1] == '(':
		q := skip(p)
		if q < len(s) && s[q] == ',' {
			if q = skip(q + 1); q < len(s) && (s[q] == '"' || s[q] == '\'' || s[q] == '`') {
				return q, true
			}
		}
		return -1, true
	}
	return 0, false
}

// wordBefore returns the word separated by one space before ks, if any.
func wordBefore(s string, ks int) string {
	if ks < 2 || s[ks-1] != ' ' {
		return ""
	}
	w := ks - 1
	for w > 0 && isAlnum(s[w-1]) {
		w--
	}
	return s[w : ks-1]
}

// dumpValueEnd ends an unquoted value of a Go %v dump: fields are split
// by spaces and the structure closes with ] or }.
func dumpValueEnd(s string, p int) int {
	e := p
	for e < len(s) && s[e] > ' ' && s[e] != ']' && s[e] != '}' {
		e++
	}
	return e
}

// proseValueEnd ends a value in prose at whitespace, less the punctuation
// that ends a sentence or a clause.
func proseValueEnd(s string, p int) int {
	e := p
	for e < len(s) && s[e] > ' ' && s[e] != '<' {
		e++
	}
	for e > p && strings.IndexByte(".,;:)]}\"'", s[e-1]) >= 0 {
		e--
	}
	return e
}

// skipOpeners steps over the container openers of a structure dump before
// a value: [x] in Go maps, []string{"x"} in http.Header, [ in JSON arrays.
func skipOpeners(s string, p int) int {
	for _, o := range [...]string{"[]string{", "[]interface {}{", "[]any{", "["} {
		if strings.HasPrefix(s[p:], o) {
			return p + len(o)
		}
	}
	return p
}

// skipWords skips a colon and spaces after i and, once, any of the given
// phrases: "is: x", "is set to x".
func skipWords(s string, i int, phrases ...string) int {
	if i < len(s) && s[i] == ':' {
		i++
	}
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	for _, ph := range phrases {
		if len(s)-i > len(ph) && strings.EqualFold(s[i:i+len(ph)], ph) && (s[i+len(ph)] == ' ' || s[i+len(ph)] == ':') {
			i += len(ph) + 1
			for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
				i++
			}
			break
		}
	}
	return i
}

// namesField reports whether the key starting at ks is the value of a
// "key" or "name" field: key="Password", "name": "DB_PASSWORD", name: X.
func namesField(s string, ks int) bool {
	j := ks
	if j > 0 && (s[j-1] == '"' || s[j-1] == '\'') {
		j--
	}
	for j > 0 && (s[j-1] == ' ' || s[j-1] == '\t') {
		j--
	}
	if j == 0 || (s[j-1] != '=' && s[j-1] != ':') {
		return false
	}
	j--
	for j > 0 && (s[j-1] == ' ' || s[j-1] == '\t' || s[j-1] == '"' || s[j-1] == '\'') {
		j--
	}
	w := j
	for w > 0 && isAlnum(s[w-1]) {
		w--
	}
	switch strings.ToLower(s[w:j]) {
	case "key", "name", "param", "parameter", "variable", "field":
		return true
	}
	return false
}

// siblingValue masks the value of the "value" field that follows a name
// field naming a secret, within the same element, object or list item.
func siblingValue(sc *scan, p int, class keyClass, label string) {
	s, lower := sc.s, sc.lower
	end := min(len(s), p+240)
	if i := strings.IndexAny(s[p:end], "}>"); i >= 0 {
		end = p + i
	}
	if i := strings.Index(s[p:end], "\n"); i >= 0 {
		if j := strings.Index(s[p+i+1:end], "\n"); j >= 0 {
			end = p + i + 1 + j
		}
	}
	for off := p; off < end; {
		q := nextWordEnd(lower, off, end, "value")
		if q < 0 {
			return
		}
		off = q
		if q < end && (s[q] == '"' || s[q] == '\'') {
			q++
		}
		for q < end && (s[q] == ' ' || s[q] == '\t') {
			q++
		}
		if q >= end || (s[q] != '=' && s[q] != ':') {
			continue
		}
		q++
		for q < end && (s[q] == ' ' || s[q] == '\t') {
			q++
		}
		vs, ve, quoted := readValue(s, q)
		if ve > end && !quoted {
			ve = end
		}
		if vs < ve && !isPlaceholderAt(s, vs) && !trivialValue(s[vs:ve]) && (class == keyStrong || looseValue(s[vs:ve], quoted, class, label)) {
			sc.add(vs, ve, label)
		}
		return
	}
}

// xmlElementValue masks the text of <password>…</password>, up to the
// closing tag.
func xmlElementValue(sc *scan, p int, class keyClass, label string) {
	s := sc.s
	e := p
	for e < len(s) && s[e] != '<' && s[e] != '\n' {
		e++
	}
	if strings.TrimSpace(s[p:e]) == "" && e < len(s) && s[e] == '\n' {
		// <apiToken>\n    value\n</apiToken>: the value on its own line,
		// taken when the element closes right after it.
		q := e + 1
		for q < len(s) && (s[q] == ' ' || s[q] == '\t' || s[q] == '\r') {
			q++
		}
		le := q
		for le < len(s) && s[le] != '<' && s[le] != '\n' {
			le++
		}
		c := le
		for c < len(s) && (s[c] == ' ' || s[c] == '\t' || s[c] == '\r' || s[c] == '\n') {
			c++
		}
		if le > q && strings.HasPrefix(s[c:], "</") && !strings.ContainsAny(strings.TrimSpace(s[q:le]), " \t") {
			p, e = q, le
		}
	}
	vs, ve := p, e
	for vs < ve && s[vs] == ' ' {
		vs++
	}
	for ve > vs && s[ve-1] == ' ' {
		ve--
	}
	if vs >= ve || isPlaceholderAt(s, vs) || trivialValue(s[vs:ve]) || countClasses(s[vs:ve]).other == ve-vs {
		return // "<your-password>": a placeholder's closing quote is no value
	}
	if class == keyStrong || looseValue(s[vs:ve], true, class, label) {
		sc.add(vs, ve, label)
	}
}

// readValue returns the value starting at p: a quoted string's content or
// an unquoted run up to whitespace or punctuation that ends values.
func readValue(s string, p int) (int, int, bool) {
	if p >= len(s) {
		return p, p, false
	}
	q := s[p]
	if q == '\\' && p+1 < len(s) && (s[p+1] == '"' || s[p+1] == '\'') {
		// \"value\" inside a JSON-encoded string.
		end := strings.Index(s[p+2:], s[p:p+2])
		nl := strings.IndexByte(s[p+2:], '\n')
		if end < 0 || (nl >= 0 && nl < end) {
			end = valueRunEnd(s, p+2) - (p + 2)
		}
		return p + 2, p + 2 + end, true
	}
	if q == '"' || q == '\'' || q == '`' {
		i := p + 1
		for i < len(s) && s[i] != q && s[i] != '\n' {
			if s[i] == '\\' && q != '`' && i+1 < len(s) {
				if s[i+1] == q {
					// An escaped closing quote of a JSON-in-JSON string ends
					// the value; any other escape is part of it.
					if i+2 >= len(s) || s[i+2] == ',' || s[i+2] == '}' || s[i+2] == ' ' {
						break
					}
				}
				i += 2
				continue
			}
			i++
		}
		if i > len(s) {
			i = len(s)
		}
		return p + 1, i, true
	}
	return p, valueRunEnd(s, p), false
}

func valueRunEnd(s string, p int) int {
	i := p
	for i < len(s) {
		c := s[i]
		if c <= ' ' || c == '"' || c == '\'' || c == '`' || c == ')' || c == ']' || c == '}' || c == '<' || c == '>' || c == '\\' {
			break
		}
		if (c == ',' || c == ';' || c == '&') && separatorAt(s, i) {
			break
		}
		i++
	}
	// A sentence's full stop or a trailing colon is not part of the value.
	for i > p && (s[i-1] == '.' || s[i-1] == ':') {
		i--
	}
	return i
}

// separatorAt reports whether the , ; or & at i separates fields rather
// than belonging to a password: it does when another key follows it
// (&page=2, ;Encrypt=true, , user: x) or the value ends there.
func separatorAt(s string, i int) bool {
	j := i + 1
	if s[i] != '&' {
		for j < len(s) && s[j] == ' ' {
			j++
		}
	}
	if j >= len(s) || s[j] <= ' ' || strings.IndexByte("\"'`)]}", s[j]) >= 0 {
		return true
	}
	if !(isAlnum(s[j]) || s[j] == '_') || isDigit(s[j]) {
		return false // keys start with a letter
	}
	k := j
	for k < len(s) && (keyChar(s[k]) || (s[i] == ';' && s[k] == ' ')) {
		k++
	}
	return k < len(s) && (s[k] == '=' || (s[i] == ',' && s[k] == ':' && k+1 < len(s) && s[k+1] == ' '))
}

// atLineStart reports whether only indentation or a list/quote marker
// precedes position i on its line: YAML keys and HTTP headers.
func atLineStart(s string, i int) bool {
	for i > 0 {
		c := s[i-1]
		switch c {
		case '\n':
			return true
		case ' ', '\t', '-', '>', '<', '*', '#', '+':
			i--
		default:
			if i >= 2 && s[i-2] == '\\' && c == 'n' {
				return true
			}
			return false
		}
	}
	return true
}

// lineMemo remembers, per line and needle set, whether the line holds a
// needle: a line of a million flags is searched once, not once per flag.
type lineMemo struct {
	breaks []int // positions of '\n', found on first use
	found  map[lineQuery]bool
}

type lineQuery struct {
	line    int
	needles *string
}

// lineHas reports whether the line holding position i contains any of
// needles (a package-level list, so its address names it).
func (sc *scan) lineHas(i int, needles []string) bool {
	m := &sc.lines
	if m.found == nil {
		m.found = map[lineQuery]bool{}
		for off := 0; ; {
			j := strings.IndexByte(sc.lower[off:], '\n')
			if j < 0 {
				break
			}
			m.breaks = append(m.breaks, off+j)
			off += j + 1
		}
	}
	n := sort.SearchInts(m.breaks, i) // the line's number: breaks before i
	q := lineQuery{n, &needles[0]}
	if v, ok := m.found[q]; ok {
		return v
	}
	ls, le := 0, len(sc.lower)
	if n > 0 {
		ls = m.breaks[n-1] + 1
	}
	if n < len(m.breaks) {
		le = m.breaks[n]
	}
	line := sc.lower[ls:le]
	v := false
	for _, nd := range needles {
		if strings.Contains(line, nd) {
			v = true
			break
		}
	}
	m.found[q] = v
	return v
}

// readArg reads one shell argument: a quoted string's content, or up to
// whitespace (passwords contain &, ; and , freely).
func readArg(s string, p int) (int, int) {
	if p < len(s) && (s[p] == '"' || s[p] == '\'') {
		vs, ve, _ := readValue(s, p)
		return vs, ve
	}
	e := p
	for e < len(s) && s[e] > ' ' && s[e] != '"' && s[e] != '\'' && s[e] != '`' {
		e++
	}
	return p, e
}

// allPortChars is true for port mappings and uid:gid pairs.
func allPortChars(v string) bool {
	for i := 0; i < len(v); i++ {
		if !isDigit(v[i]) && v[i] != ':' && v[i] != '.' && v[i] != '/' {
			return false
		}
	}
	return true
}

// assignmentOperator returns the length of an assignment operator other
// than = and : at i (?=, ::=, :::=, .=, +=, <-), or 0.
func assignmentOperator(s string, i int) int {
	for _, op := range [...]string{":::=", "::=", "?=", ".=", "+=", "<-"} {
		if strings.HasPrefix(s[i:], op) && (len(s) == i+len(op) || s[i+len(op)] != '=') {
			return len(op)
		}
	}
	return 0
}

// declTypes are type names a declaration puts between a name and its =.
var declTypes = []string{"string", "String", "str", "&str", "[]byte", "char*", "const char*", "SecureString"}

// typedDeclaration returns where the = of "name TYPE = v" or
// "name: TYPE = v" is, or i when s[i:] is not such a declaration.
func typedDeclaration(s string, i int) int {
	j := i
	if j < len(s) && s[j] == ':' {
		j++
	}
	for j < len(s) && s[j] == ' ' {
		j++
	}
	for _, t := range declTypes {
		if strings.HasPrefix(s[j:], t) {
			k := j + len(t)
			for k < len(s) && s[k] == ' ' {
				k++
			}
			if k < len(s) && s[k] == '=' && k > j+len(t) {
				return k
			}
		}
	}
	return i
}
