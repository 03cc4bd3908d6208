package redact

import "strings"

// Secrets by context: the value after a sensitive key in key=value, JSON,
// YAML, INI, env, logfmt, CLI-flag and HTTP-header forms.
//
// The key's last word decides (password, secret, token, api key, ...), so
// secret_name=db-credentials, max_tokens=4096, TOKEN_TTL_SECONDS=3600,
// auth_mode=oidc and credential_source=Ec2InstanceMetadata are kept: their
// last words are name, tokens, seconds, mode and source.

type keyClass int

const (
	keyNone   keyClass = iota
	keyStrong          // mask any non-trivial value (password, secret, token, api key)
	keyWeak            // mask only random-looking values (key, auth, signature, credential)
	keyAuthz           // Authorization: <scheme> <credential>
	keyCookie          // Cookie / Set-Cookie: name=value pairs
)

// keywords that can appear in a sensitive key name, in lower case.
var keyKeywords = []string{"pass", "pw", "secret", "token", "key", "auth", "cred", "cookie", "sig", "session", "psw"}

var strongWords = map[string]string{
	"password": "password", "passwd": "password", "pwd": "password", "passphrase": "password",
	"passcode": "password", "psw": "password", "pswd": "password",
	"secret": "secret", "token": "token", "apikey": "token", "accesstoken": "token",
	"authtoken": "token", "refreshtoken": "token", "idtoken": "token", "sessiontoken": "token",
	"secretkey": "secret", "privatekey": "secret", "clientsecret": "secret", "secretaccesskey": "secret",
	"accesskey": "secret", "apisecret": "secret", "apitoken": "token", "bearertoken": "token",
}

var weakWords = map[string]string{
	"key": "key", "auth": "auth", "credential": "credential", "credentials": "credential",
	"creds": "credential", "cred": "credential", "sig": "signature", "signature": "signature",
	"session": "session", "sessionid": "session", "sid": "session", "pass": "password",
	"pw": "password", "keyid": "key",
}

// keyModifiers turn a bare "key" into a secret key: api_key, AccountKey,
// X-Functions-Key, signing_key. Other keys (cache_key, sort_key) are
// masked only when the value looks random.
var keyModifiers = map[string]bool{
	"api": true, "access": true, "secret": true, "private": true, "account": true, "shared": true,
	"sharedaccess": true, "master": true, "signing": true, "sign": true, "encryption": true,
	"encrypt": true, "client": true, "auth": true, "app": true, "application": true,
	"license": true, "service": true, "subscription": true, "webhook": true, "admin": true,
	"session": true, "storage": true, "root": true, "deploy": true, "ssh": true, "consumer": true,
	"sas": true, "hmac": true, "jwt": true, "ingest": true, "ingestion": true, "write": true,
	"management": true, "functions": true, "function": true, "host": true, "primary": false,
	"server": true, "secure": true, "crypto": true, "cipher": true, "aes": true, "gpg": true,
	"pgp": true, "partner": true, "merchant": true, "personal": true, "user": true, "bot": true,
	"rest": true, "sdk": true, "developer": true, "dev": true, "live": true, "prod": true,
}

// Value words that are not secrets even after a sensitive key.
var trivialValues = map[string]bool{
	"": true, "null": true, "nil": true, "none": true, "true": true, "false": true,
	"undefined": true, "redacted": true, "[redacted]": true, "[filtered]": true, "hidden": true,
	"<hidden>": true, "masked": true, "required": true, "optional": true, "yes": true, "no": true,
	"on": true, "off": true, "enabled": true, "disabled": true, "string": true, "str": true,
	"bool": true, "int": true, "bearer": true, "basic": true, "|": true, ">": true, "-": true,
	"env": true, "file": true, "secret": true, "password": true, "token": true, "***": true,
	"empty": true, "missing": true, "invalid": true, "expired": true, "set": true, "unset": true,
}

func classifyKey(name string) (keyClass, string) {
	var buf [8]string
	words := splitWords(name, buf[:0])
	if len(words) == 0 {
		return keyNone, ""
	}
	last := words[len(words)-1]
	switch last {
	case "authorization":
		return keyAuthz, "token"
	case "cookie", "cookies":
		return keyCookie, "cookie"
	}
	if label, ok := strongWords[last]; ok {
		return keyStrong, label
	}
	if label, ok := weakWords[last]; ok {
		if last == "key" && len(words) >= 2 && keyModifiers[words[len(words)-2]] {
			return keyStrong, "token"
		}
		// DB_PASS, SMTP_PW: a qualified "pass" is a password; a bare one
		// may be a test count (pass=12 fail=0).
		if (last == "pass" || last == "pw") && len(words) >= 2 {
			return keyStrong, label
		}
		return keyWeak, label
	}
	if last == "id" && len(words) >= 2 && words[len(words)-2] == "session" {
		return keyWeak, "session"
	}
	// "id" after "key" (private_key_id, AccessKeyId) names a key identifier:
	// worth masking only when it looks random.
	if last == "id" && len(words) >= 2 && (words[len(words)-2] == "key" || words[len(words)-2] == "secret") {
		return keyWeak, "key"
	}
	// Glued words: dbpassword, authtoken, sharedaccesskey, x_apikey.
	for _, suffix := range [...]string{"password", "passwd", "secret", "token", "apikey"} {
		if strings.HasSuffix(last, suffix) && len(last) > len(suffix) {
			return keyStrong, strongWords[suffix]
		}
	}
	if strings.HasSuffix(last, "key") && keyModifiers[strings.TrimSuffix(last, "key")] {
		return keyStrong, "token"
	}
	return keyNone, ""
}

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

// keyValue inspects the key s[ks:ke] and masks the value that follows it.
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
	p := nameEnd
	quotedKey := false
	// Closing quote of a JSON/YAML/Python key: "password": / \"password\": / 'pwd':
	if ks > 0 && (s[ks-1] == '"' || s[ks-1] == '\'') && p < len(s) && s[p] == s[ks-1] {
		p++
		quotedKey = true
	} else if ks > 1 && s[ks-2] == '\\' && s[ks-1] == '"' && strings.HasPrefix(s[p:], `\"`) {
		p += 2
		quotedKey = true
	} else if p != ke {
		return // "key." at the end of a sentence: no value follows
	}
	sp := p
	for p < len(s) && (s[p] == ' ' || s[p] == '\t') {
		p++
	}
	spaced := p > sp
	sep := byte(' ')
	switch {
	case p < len(s) && s[p] == '=' && !(p+1 < len(s) && s[p+1] == '='):
		sep = '='
		p++
		if p < len(s) && s[p] == '>' {
			p++
		}
	case p < len(s) && s[p] == ':' && !(p+1 < len(s) && s[p+1] == ':'):
		sep = ':'
		p++
		if p < len(s) && s[p] == '=' {
			p++
		}
	case !spaced:
		return
	}
	if sep != ' ' {
		for p < len(s) && (s[p] == ' ' || s[p] == '\t') {
			p++
		}
	}
	if p >= len(s) || s[p] == '\n' || s[p] == '\r' {
		return
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
	if vs >= ve || isPlaceholderAt(s, vs) {
		return
	}
	v := s[vs:ve]
	if trivialValue(v) || strings.HasPrefix(v, "-----BEGIN") {
		return // a PEM block is masked by findPrivateKeys, keeping its armour
	}
	// pwd=/home/x is a working directory, not a password.
	if label == "password" && (v[0] == '/' || v[0] == '~') && !quoted && strings.HasSuffix(strings.ToLower(s[ks:nameEnd]), "pwd") {
		return
	}
	if sep == ' ' && !quoted && (v == "is" || v == "was") && class != keyWeak {
		// Prose: "DD_API_KEY is 91d2…". Only a value that looks like a
		// credential is taken: "the token is expired" stays.
		p := ve
		for p < len(s) && (s[p] == ' ' || s[p] == '\t') {
			p++
		}
		if p < len(s) && !isPlaceholderAt(s, p) {
			if ws, we, _ := readValue(s, p); we-ws >= 16 && (looksSecret(s[ws:we]) || (we-ws >= 32 && hexRest(s[ws:we]))) {
				sc.add(ws, we, label)
			}
		}
		return
	}
	switch {
	case sep == ' ':
		// "--password x", "password x" in .netrc, or prose ("the key X").
		// "invalid_auth request_id=..." is a word followed by another pair.
		if strings.Contains(strings.TrimRight(v, "="), "=") {
			return
		}
		switch {
		case flag > 0 && class == keyStrong && v[0] != '-':
		case class == keyStrong && lineHasAny(sc.lower, ks, "machine ", "login "):
		case looksSecret(v):
		case quoted && class == keyStrong && ve < len(s) && s[ve] != '\n' && len(v) >= 6 && !strings.ContainsAny(v, " \t") && countClasses(v).other <= len(v)/2:
			// "with password 'hunter2'": a quoted value right after the word.
		default:
			return
		}
	case class == keyWeak:
		if !looksSecret(v) {
			return
		}
	case sep == ':' && !quoted && !quotedKey && !atLineStart(s, ks) && !looksSecret(v):
		// "error: invalid token: signature mismatch" is prose, not YAML.
		return
	}
	sc.add(vs, ve, label)
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
		if c <= ' ' || c == '"' || c == '\'' || c == '`' || c == ',' || c == ';' || c == '&' ||
			c == ')' || c == ']' || c == '}' || c == '<' || c == '>' || c == '\\' {
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

func trivialValue(v string) bool {
	if len(v) <= 10 && trivialValues[strings.ToLower(v)] {
		return true
	}
	switch v[0] {
	case '$', '%', '{', '<':
		return true // ${VAR}, $VAR, %s, {{ .Secret }}, <your-token>
	}
	if strings.Trim(v, "*xX.") == "" {
		return true // already masked by the program: ****, xxxx
	}
	return false
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

func lineHasAny(lower string, i int, needles ...string) bool {
	ls := strings.LastIndexByte(lower[:i], '\n') + 1
	le := strings.IndexByte(lower[i:], '\n')
	if le < 0 {
		le = len(lower)
	} else {
		le += i
	}
	line := lower[ls:le]
	for _, n := range needles {
		if strings.Contains(line, n) {
			return true
		}
	}
	return false
}

var authSchemes = map[string]bool{
	"bearer": true, "basic": true, "token": true, "bot": true, "negotiate": true, "ntlm": true,
	"apikey": true, "api-key": true, "sso-key": true, "ssws": true, "jwt": true, "key": true,
	"oauth": true, "digest": true, "hmac": true, "splunk": true, "dsn": true, "klaviyo-api-key": true,
	"genieKey": true, "mac": true, "pat": true,
}

// authorizationValue masks the credential of an Authorization header value
// starting at p, keeping the scheme so readers see how the client
// authenticated. AWS SigV4 values are left to the key=value rules
// (Credential=AKIA..., Signature=...).
func authorizationValue(sc *scan, p int) {
	s := sc.s
	q := byte(0)
	if p < len(s) && (s[p] == '"' || s[p] == '\'') {
		q = s[p]
		p++
	} else if strings.HasPrefix(s[p:], `\"`) {
		q = '\\'
		p += 2
	}
	ws := p
	for p < len(s) && (isAlnum(s[p]) || s[p] == '-' || s[p] == '_') {
		p++
	}
	scheme := strings.ToLower(s[ws:p])
	if strings.HasPrefix(scheme, "aws4-") || strings.HasPrefix(scheme, "aws-") || strings.HasPrefix(scheme, "goog4-") {
		return
	}
	if p < len(s) && s[p] == ' ' && authSchemes[scheme] {
		for p < len(s) && s[p] == ' ' {
			p++
		}
		if scheme == "digest" || scheme == "oauth" {
			// Parameter lists: mask to the end of the header value.
			e := p
			for e < len(s) && s[e] != '\n' && s[e] != '\r' && (q == 0 || s[e] != q) {
				e++
			}
			if !isPlaceholderAt(s, p) {
				sc.add(p, e, "token")
			}
			return
		}
	} else {
		p = ws
	}
	e := p
	for e < len(s) && s[e] > ' ' && s[e] != '"' && s[e] != '\'' && s[e] != ',' && s[e] != '\\' && s[e] != '<' {
		e++
	}
	if e > p && !trivialValue(s[p:e]) {
		sc.add(p, e, "token")
	}
}

var cookieAttributes = map[string]bool{
	"path": true, "domain": true, "expires": true, "max-age": true, "samesite": true,
	"secure": true, "httponly": true, "priority": true, "partitioned": true, "version": true,
	"comment": true,
}

// cookieValue masks every cookie value on a Cookie or Set-Cookie line,
// keeping names and attributes (Path, Expires, ...).
func cookieValue(sc *scan, p int) {
	s := sc.s
	end := p
	for end < len(s) && s[end] != '\n' && s[end] != '\r' && s[end] != '"' && s[end] != '\\' {
		end++
	}
	for p < end {
		for p < end && (s[p] == ' ' || s[p] == ';' || s[p] == '\t') {
			p++
		}
		ns := p
		for p < end && s[p] != '=' && s[p] != ';' {
			p++
		}
		if p >= end || s[p] != '=' {
			continue
		}
		name := strings.ToLower(strings.TrimSpace(s[ns:p]))
		p++
		vs := p
		for p < end && s[p] != ';' && s[p] != ' ' {
			p++
		}
		// theme=dark or lang=en are preferences, not sessions.
		if v := s[vs:p]; len(v) <= 10 && countClasses(v).lower == len(v) {
			continue
		}
		if !cookieAttributes[name] && p > vs && !isPlaceholderAt(s, vs) && !trivialValue(s[vs:p]) {
			sc.add(vs, p, "cookie")
		}
	}
}

// findBearer masks "Bearer <token>" wherever it appears, not only in an
// Authorization header (curl -H, quoted strings, logs).
func findBearer(sc *scan) {
	s, lower := sc.s, sc.lower
	for off := 0; ; {
		i := strings.Index(lower[off:], "bearer ")
		if i < 0 {
			return
		}
		p := off + i + len("bearer ")
		off = p
		if off-7 > 0 && isAlnum(s[off-8]) {
			continue
		}
		for p < len(s) && s[p] == ' ' {
			p++
		}
		e := p
		for e < len(s) && (tokenChar(s[e])) {
			e++
		}
		v := s[p:e]
		if len(v) >= 8 && !isPlaceholderAt(s, p) && (countClasses(v).digit > 0 || len(v) >= 20) && !trivialValue(v) {
			sc.add(p, e, "token")
		}
	}
}

// findCLIPasswords masks passwords passed as short flags: mysql -pSECRET,
// sshpass -p SECRET, docker login -p SECRET, and curl -u user:SECRET.
func findCLIPasswords(sc *scan) {
	s, lower := sc.s, sc.lower
	for off := 0; ; {
		i := strings.Index(s[off:], "-p")
		if i < 0 {
			break
		}
		p := off + i
		off = p + 2
		if p > 0 && s[p-1] != ' ' && s[p-1] != '\t' {
			continue
		}
		if !lineHasAny(lower, p, "-u ", "--user", "mysql", "mariadb", "sshpass", " login", "twine") {
			continue
		}
		v := p + 2
		if v < len(s) && s[v] == ' ' {
			v++
		} else if v < len(s) && !(isAlnum(s[v]) || strings.IndexByte("!#%^*@+._~", s[v]) >= 0) {
			continue // -p=... and --password are key=value territory
		}
		vs, ve := readArg(s, v)
		if vs >= ve || s[vs] == '-' || isPlaceholderAt(s, vs) || trivialValue(s[vs:ve]) || allPortChars(s[vs:ve]) {
			continue
		}
		sc.add(vs, ve, "password")
	}
	for _, flag := range [...]string{"-u ", "--user ", "--user=", "-U "} {
		for off := 0; ; {
			i := strings.Index(s[off:], flag)
			if i < 0 {
				break
			}
			p := off + i
			off = p + len(flag)
			if p > 0 && s[p-1] != ' ' && s[p-1] != '\t' {
				continue
			}
			vs, ve := readArg(s, off)
			v := s[vs:ve]
			c := strings.IndexByte(v, ':')
			if c <= 0 || c == len(v)-1 || allPortChars(v) || isPlaceholderAt(s, vs+c+1) {
				continue
			}
			sc.add(vs+c+1, ve, "password")
		}
	}
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
