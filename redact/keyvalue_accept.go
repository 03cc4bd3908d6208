package redact

import (
	"strings"
)

// Deciding whether the value after a key is a secret: the key's class
// (classifyKey), the value's shape (credentialShaped, looksSecret),
// placeholders and references that stand for a secret (trivialValue), and
// the prose forms around a password word. keyvalue.go finds the pairs.

type keyClass int

const (
	keyNone   keyClass = iota
	keyStrong          // mask any non-trivial value (password, secret, token, api key)
	keyWeak            // mask only random-looking values (key, auth, signature, credential)
	keyAuthz           // Authorization: <scheme> <credential>
	keyCookie          // Cookie / Set-Cookie: name=value pairs
)

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
	// Documentation's stand-ins: curl --user "username:password", secretKey: foo.
	"user": true, "username": true, "pass": true, "foo": true, "bar": true,
	"baz": true, "foobar": true, "example": true, "placeholder": true, "dummy": true,
}

func classifyKey(name string) (keyClass, string) {
	var buf [8]string
	words := splitWords(name, buf[:0])
	if len(words) == 0 {
		return keyNone, ""
	}
	last := words[len(words)-1]
	if len(words) >= 2 && sharedKeyWords[words[len(words)-2]] || len(words) == 1 && publicGlued(last) {
		return keyNone, "" // public_key, publishableKey, foreignKey: meant to be seen
	}
	if namesNoCredential(words) {
		return keyNone, "" // fakeToken, dummy_password, csrf_token: the name says so
	}
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
	for _, suffix := range [...]string{"password", "passwd", "passphrase", "passcode", "secret", "token", "apikey", "pwd", "psw", "secretkey", "privatekey", "accesskey"} {
		if strings.HasSuffix(last, suffix) && len(last) > len(suffix) && last != "oldpwd" {
			return keyStrong, strongWords[suffix]
		}
	}
	if pre, ok := strings.CutSuffix(last, "key"); ok && pre != "" {
		// sharedaccesskey, dbsigningkey: a modifier glued before "key".
		for m, on := range keyModifiers {
			if on && len(m) >= 3 && strings.HasSuffix(pre, m) {
				return keyStrong, "token"
			}
		}
	}
	if strings.HasSuffix(last, "credential") || strings.HasSuffix(last, "credentials") {
		return keyWeak, "credential"
	}
	if strings.HasSuffix(last, "pw") && len(last) > 3 {
		return keyStrong, "password" // smtppw, registrypw
	}
	if strings.HasSuffix(last, "auth") && len(last) > 4 {
		return keyWeak, "auth" // dbauth, registryauth
	}
	// storepass, dbpass, smtppass: glued "pass" is a password unless the
	// word is one of the few English words that end so.
	if strings.HasSuffix(last, "pass") && len(last) > 4 && !englishPass[last] {
		return keyStrong, "password"
	}
	return keyNone, ""
}

// fakeWords in a key's name declare its value made up: test code's
// fakeToken, dummy_password, example_api_key, mockSecret. Words that
// describe a real value gone wrong (invalid, wrong, old) are not among
// them: a mistyped password is close to the real one.
var fakeWords = map[string]bool{"fake": true, "dummy": true, "mock": true, "bogus": true,
	"example": true, "sample": true, "placeholder": true, "nonmatching": true}

// antiForgeryWords name a form's anti-forgery token (csrf_token, Rails'
// authenticity_token): a per-session nonce that grants nothing without
// the session cookie, which is masked.
var antiForgeryWords = map[string]bool{"csrf": true, "xsrf": true, "authenticity": true}

// namesNoCredential reports whether a key's words declare its value made
// up or an anti-forgery nonce.
func namesNoCredential(words []string) bool {
	for i, w := range words {
		if fakeWords[w] || antiForgeryWords[w] || w == "non" && i+1 < len(words) && fakeWords["non"+words[i+1]] {
			return true
		}
	}
	return false
}

var englishPass = map[string]bool{"bypass": true, "compass": true, "surpass": true, "trespass": true,
	"overpass": true, "underpass": true, "multipass": true, "onepass": true, "twopass": true, "firstpass": true}

// sharedKeyWords before key or token name a value meant to be shared or a
// database column's role, not a credential.
var sharedKeyWords = map[string]bool{"public": true, "publishable": true, "foreign": true, "schema": true}

// publicGlued: publickey, publictoken, foreignkey written as one word.
func publicGlued(w string) bool {
	for p := range sharedKeyWords {
		if rest, ok := strings.CutPrefix(w, p); ok && (rest == "key" || rest == "token") {
			return true
		}
	}
	return false
}

// credentialShaped reports whether a value that follows a secret word in
// prose or a loose syntax has the shape of a credential rather than of a
// word: at least four characters holding a digit or a symbol (hunter2,
// abc123, P@ss), or a number long enough to be a PIN. Letters alone
// (expired, incorrect, TokenExpiredError) and words joined by - _ .
// (db-credentials, not_set) are prose or identifiers.
func credentialShaped(v string) bool {
	if len(v) < 4 || trivialValue(v) {
		return false
	}
	cc := countClasses(v)
	if cc.digit == len(v) {
		return len(v) >= 6
	}
	if cc.lower+cc.upper+cc.digit == 0 || referenceLike(v) {
		return false
	}
	if cc.digit > 0 {
		return true
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; charClass(c) == 3 && c != '-' && c != '_' && c != '.' {
			return true
		}
	}
	return cc.other == 0 && cc.upper > 0 && cc.lower > 0 && len(v) >= 8 && !camelWords(v)
}

// referenceLike reports whether v names something rather than being a
// secret: a URL, a version (v1.2.3, 10.0.1), a file:line
// (config.go:42), a namespaced name or path of lower-case words
// (default/db-creds-2, vault/prod/db).
func referenceLike(v string) bool {
	if strings.Contains(v, "://") {
		return true
	}
	w := strings.TrimPrefix(v, "v")
	if w != "" && isDigit(w[0]) && strings.Trim(w, "0123456789.") == "" && strings.Contains(w, ".") {
		return true
	}
	if c := strings.LastIndexByte(v, ':'); c > 0 && c < len(v)-1 && strings.Trim(v[c+1:], "0123456789") == "" && strings.Contains(v[:c], ".") {
		file := v[:c]
		return strings.Trim(strings.ToLower(file), "abcdefghijklmnopqrstuvwxyz0123456789._-/") == ""
	}
	if strings.Contains(v, "/") {
		for _, seg := range strings.Split(v, "/") {
			if seg == "" || !('a' <= seg[0] && seg[0] <= 'z') || strings.Trim(seg, "abcdefghijklmnopqrstuvwxyz0123456789-_.") != "" {
				return false
			}
		}
		return true
	}
	return false
}

// camelWords reports whether letters-only v reads as words in camel case
// (TokenExpiredError, invalidGrant): every capital starts a run of at
// least two lower-case letters. Random letters (iydVjhyzwP) do not.
func camelWords(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; 'A' <= c && c <= 'Z' {
			if i+2 >= len(v) || !('a' <= v[i+1] && v[i+1] <= 'z' && 'a' <= v[i+2] && v[i+2] <= 'z') {
				return false
			}
		}
	}
	return true
}

// keyPair is a key and the value findKeyValues read after it.
type keyPair struct {
	ks, nameEnd int // the key's name, s[ks:nameEnd]
	class       keyClass
	label       string
	flag        int  // 1 for -key, 2 for --key
	sep         byte // '=' or ':' (any assignment operator), ' ' for a word or a flag's argument
	quoted      bool // the value was quoted
	quotedKey   bool // the key was quoted ("password": x)
	tight       bool // Key:value with nothing between, a field of a Go or Python dump
	vs, ve      int  // the value, s[vs:ve]
}

// acceptValue masks the value of kp when its key, syntax and shape make
// it a secret.
func acceptValue(sc *scan, kp keyPair) {
	s := sc.s
	ks, nameEnd, class, label, flag, sep := kp.ks, kp.nameEnd, kp.class, kp.label, kp.flag, kp.sep
	quoted, quotedKey, tight, vs, ve := kp.quoted, kp.quotedKey, kp.tight, kp.vs, kp.ve
	if !quoted {
		// sig=Xq%2FbR…%3D: percent-encoded base64 is a binary credential
		// in any syntax. Being URL-encoded, it ends at a raw & or ;.
		if e := encodedBase64End(s, vs); e > vs {
			sc.add(vs, e, label)
			return
		}
	}
	v := s[vs:ve]
	if quoted && vs > 0 && s[vs-1] == '`' && strings.Contains(v, " ") {
		return // `vault read …`: a command that prints the secret
	}
	if trivialValue(v) || strings.HasPrefix(v, "-----BEGIN") || (len(v) < 4 && countClasses(v).other == len(v)) {
		return // a PEM block is masked by findPrivateKeys, keeping its armour
	}
	// pwd=/home/x is a working directory, not a password.
	if label == "password" && (v[0] == '/' || v[0] == '~') && !quoted && strings.HasSuffix(strings.ToLower(s[ks:nameEnd]), "pwd") {
		return
	}
	if sep == ' ' && !quoted && (v == "is" || v == "was") {
		// Prose: "the password is hunter2", "DD_API_KEY is 91d2…". Only a
		// value shaped like a credential is taken: "the token is expired",
		// "the password is incorrect" stay.
		q := skipWords(s, ve, "set to", "now")
		if q < len(s) && !isPlaceholderAt(s, q) {
			ws, we, wq := readValue(s, q)
			if !wq {
				we = proseValueEnd(s, q)
			}
			if we > ws && (looseValue(s[ws:we], wq, class, label) || !wq && proseKey(s, ks, nameEnd) && proseSecretWord(s[ws:we])) {
				sc.add(ws, we, label)
			}
		}
		return
	}
	if namesSecret(v) && (class == keyWeak || secretRef(v)) || strings.EqualFold(v, s[ks:nameEnd]) {
		// key="ClearTextPassword", secretKey: api-key: the value names a
		// secret; access_token=ACCESS_TOKEN repeats its key.
		return
	}
	switch {
	case sep == ' ':
		// "--password x", "password x" in .netrc, or prose ("the key X",
		// "with password hunter2"). "invalid_auth request_id=..." is a word
		// followed by another pair.
		// "login with password X" is prose: .netrc has no prepositions.
		prep := afterPreposition(s, ks)
		netrc := !prep && class == keyStrong && label == "password" && netrcContext(sc.lower, ks)
		// A pair after the word is its own key=value; "k=<redacted:…>" is
		// one too, masked already (so a second pass changes nothing).
		if flag == 0 && !netrc && !prep && (strings.Contains(strings.TrimRight(v, "="), "=") || v[len(v)-1] == '=' && isPlaceholderAt(s, ve)) {
			return
		}
		if (netrc || prep || proseKey(s, ks, nameEnd)) && !quoted {
			ve = proseValueEnd(s, vs) // a .netrc token or a word in prose runs to whitespace
			v = s[vs:ve]
		}
		switch {
		case flag > 0 && class == keyStrong && v[0] != '-':
		case netrc:
		case looksSecret(v):
		case quoted && class == keyStrong && ve < len(s) && s[ve] != '\n' && len(v) >= 6 && !strings.ContainsAny(v, " \t") && countClasses(v).other <= len(v)/2:
			// "with password 'hunter2'": a quoted value right after the word.
		case credentialShaped(v) && (class == keyStrong && label == "password" || prep && looseKey(class, label)):
			// "passphrase hunter2", "login with pw abc123".
		case !quoted && proseKey(s, ks, nameEnd) && (prep && proseSecretWord(v) || dicewareShape(v)):
			// "with password sunshine", "passphrase correct-horse-battery".
		default:
			return
		}
	case class == keyWeak:
		// In a URL query, key=, sig=, auth= name the credential the URL
		// carries (?key=AIza..., &sig=...): any credential-shaped value.
		inQuery := sep == '=' && ks > 0 && (s[ks-1] == '?' || s[ks-1] == '&')
		if uuidShaped(v) {
			return // kms_key_id, key_id: a UUID names a key, it is not one
		}
		if !looseValue(v, quoted, class, label) && !(inQuery && len(v) >= 8 && credentialShaped(v)) {
			return
		}
	case sep == ':' && !quoted && !quotedKey && !tight && !atLineStart(s, ks) && !looseValue(v, false, class, label):
		// "error: invalid token: signature mismatch" is prose, not YAML.
		return
	}
	if providerRejected(rulesNamedBy(s[ks:nameEnd]), s[ks:nameEnd]+" = ", s[vs:ve]) {
		return // telegram_api_token = <not a Telegram token>: gitleaks' rule for it read the value
	}
	sc.add(vs, ve, label)
}

// proseKey reports whether the key s[ks:ke] is a password word standing
// as a word in prose: password, passwd, passphrase, pwd, passcode (any
// case), not part of a path (/etc/passwd) or of an identifier.
func proseKey(s string, ks, ke int) bool {
	switch strings.ToLower(s[ks:ke]) {
	case "password", "passwd", "passphrase", "pwd", "passcode":
	default:
		return false
	}
	return ks == 0 || strings.IndexByte(" \t\n(\"'`", s[ks-1]) >= 0
}

// proseSecretWord decides the one token after a password word in a prose
// form ("the password is X", "with password X"): it is the password unless
// it describes the password's state or kind, which English marks by a
// closed list of function and state words (incorrect, too, not, reset,
// prompt) and by derivational suffixes (required, authentication,
// readable). Letters alone are enough: human passwords are words. A
// compound's head is its last part (auto-generated, correct-horse-battery).
func proseSecretWord(w string) bool {
	if len(w) < 4 || len(w) > 64 {
		return false
	}
	for i := 0; i < len(w); i++ {
		if c := w[i] | 0x20; !('a' <= c && c <= 'z') && !(w[i] == '-' && i > 0 && i < len(w)-1 && w[i-1] != '-') {
			return false
		}
	}
	w = strings.ToLower(w[strings.LastIndexByte(w, '-')+1:])
	if passwordStateWords[w] || trivialValues[w] {
		return false
	}
	for _, x := range []string{w, strings.TrimSuffix(w, "s")} {
		if passwordStateWords[x] || derivedWord(x) {
			return false
		}
	}
	return true
}

// dicewareShape: three or more letter words joined by '-', a passphrase
// even without a copula (passphrase correct-horse-battery), where "password
// policy" is a noun compound.
func dicewareShape(w string) bool {
	return strings.Count(w, "-") >= 2 && proseSecretWord(w)
}

// derivedWord reports whether w carries an English derivational or
// inflectional suffix after a stem of three letters or more: -ed, -ing,
// -ly (not -fly: dragonfly is a noun), -tion, -sion, -ment, -ness, -able,
// -ible, -ive, -ous, -ful, -less, -ity.
func derivedWord(w string) bool {
	for _, suf := range [...]string{"ed", "ing", "ly", "tion", "sion", "ment", "ness", "able", "ible", "ive", "ous", "ful", "less", "ity"} {
		if len(w) >= len(suf)+3 && strings.HasSuffix(w, suf) {
			return suf != "ly" || w[len(w)-3] != 'f'
		}
	}
	return false
}

// passwordStateWords are the words that, after "the password is" or "with
// password", describe the password rather than being it: function words,
// states that carry no suffix (incorrect, wrong, reset) and kinds (prompt,
// auth, policy). Forms with a suffix are found by derivedWord.
var passwordStateWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`
		a an the this that these those it its my your our their his her me you we they them us him
		mine yours ours theirs here there what which who whose where when why how
		is are was were be been being am has have had do does did will would can could shall should
		may might must not never also still only just now then already always again yet even ever
		too very quite much many more most less least some any all both each either neither every
		no none nothing one two three first last next same different similar identical other another
		and or but nor so if as than because though although unless whether while
		in on at of for from to by via with without into onto within inside outside over under
		above below after before during per like about against between through until since upon
		out off up down across along around behind beyond near
		correct incorrect right wrong valid invalid bad good fine ok okay weak strong short long
		shorter longer weaker stronger simpler better worse older newer new old due stale current
		default temporary permanent random plain plaintext clear cleartext secure insecure safe unsafe
		empty blank null nil missing unknown known present absent mandatory compulsory optional
		set unset reset used sent given shown known written taken chosen stolen hidden broken kept
		lost left read found made put cut going gone done seen forgotten gotten rewritten
		overwritten frozen spoken driven proven fallen shaken mistaken
		auth authn prompt login logon signin signon grant flow hash salt field file input entry
		length policy manager mode type form dialog box change expiry strength rule check store vault
		keyring keychain database db table column history hint reuse attempt retry request challenge
		screen page option config env variable var argument arg parameter param flag value string
		text key token secret credential credentials user username account method scheme provider
		backend helper plugin module handler case minimum maximum min max limit count error failure
		mismatch match stdin stdout stderr pair combo combination reminder lock protect cache
		character characters char chars digit letter symbol number`) {
		m[w] = true
	}
	return m
}()

// namesSecret reports whether v is itself the name of a secret rather
// than one: an identifier of two or more words (camelCase, _ - . joined)
// whose last word is a secret word, as ClearTextPassword, DB_PASSWORD,
// apiKey, X-Api-Key. Random text does not split into such words: each is
// letters, with at most trailing digits (oauth2).
func namesSecret(v string) bool {
	if len(v) > 64 {
		return false
	}
	for i := 0; i < len(v); i++ {
		if !keyChar(v[i]) {
			return false
		}
	}
	var buf [8]string
	words := splitWords(v, buf[:0])
	if len(words) < 2 {
		return false
	}
	for _, w := range words {
		d := len(strings.TrimRight(w, "0123456789"))
		if d == 0 || strings.Trim(w[:d], "abcdefghijklmnopqrstuvwxyz") != "" {
			return false
		}
	}
	c, _ := classifyKey(v)
	return c != keyNone
}

// secretRef: after a strong key, only a name written as a reference is
// taken for one — words joined by - or _ in one case (api-key,
// DB_PASSWORD) — as people's passwords are written SuperSecret or
// MyPassword1.
func secretRef(v string) bool {
	return strings.ContainsAny(v, "-_") && (strings.ToLower(v) == v || strings.ToUpper(v) == v)
}

// encodedBase64End returns the end of the percent-encoded base64 value at
// p (a SAS signature, an HMAC in a query string), or p if there is none.
// The value's only escapes are of base64's own symbols (%2B %2F %3D, any
// case), and decoded it is at least 16 characters of base64 with letters
// and digits: + or = padding mark base64 by themselves, but / alone may
// be a path (Photos%2F2024%2FSummer), so then a segment must mix letters
// and digits as random bytes do, not read as a word or a number.
func encodedBase64End(s string, p int) int {
	e, n, plus, pad, slash := p, 0, false, false, false
	var dec []byte
	for e < len(s) {
		c := s[e]
		if c == '%' {
			if e+2 >= len(s) || !isHex(s[e+1]) || !isHex(s[e+2]) {
				return p
			}
			switch strings.ToUpper(s[e+1 : e+3]) {
			case "2B":
				c, plus = '+', true
			case "2F":
				c, slash = '/', true
			case "3D":
				c, pad = '=', true
			default:
				return p // another escape: encoded text, not base64
			}
			e += 3
		} else if isAlnum(c) || c == '+' || c == '/' || c == '=' {
			e++
		} else {
			break
		}
		if n > 0 && dec[n-1] == '=' && c != '=' {
			return p // = is base64's padding: only at the end
		}
		dec = append(dec, c)
		n++
	}
	if n < 16 || !(plus || pad || slash) {
		return p
	}
	v := strings.TrimRight(string(dec), "=")
	cc := countClasses(v)
	if cc.digit == 0 || cc.lower+cc.upper == 0 {
		return p
	}
	if !plus && !pad {
		for _, seg := range strings.Split(v, "/") {
			if c := countClasses(seg); len(seg) >= 8 && c.digit > 0 && c.lower+c.upper > 0 && classTransitions(seg) >= 3 {
				return e
			}
		}
		return p
	}
	return e
}

// looseKey: keys whose value is taken in loose syntaxes (prose, Key:
// mid-line) when it is shaped like a credential. Weak keys named key,
// session or signature are too often cache keys and ids.
func looseKey(class keyClass, label string) bool {
	return class == keyStrong || label == "password" || label == "auth" || label == "credential"
}

// looseValue decides a value found in a loose syntax.
func looseValue(v string, quoted bool, class keyClass, label string) bool {
	if referenceLike(v) {
		return false
	}
	if looseKey(class, label) {
		return credentialShaped(v) || looksSecret(v) || (quoted && class == keyStrong && len(v) >= 4 && !trivialValue(v) && !strings.Contains(v, " "))
	}
	return looksSecret(v) && !wordsAndVersion(v)
}

// wordsAndVersion reports a name built of words and a few digits
// (SalesResults-1.2, OrderEvents_v2): what a weak key (bucket_key,
// cache_key) holds when it names a thing. Random text does not split into
// camel-case words.
func wordsAndVersion(v string) bool {
	digits, letters := 0, 0
	for i := 0; i < len(v); {
		c := v[i]
		switch {
		case isDigit(c):
			digits++
			i++
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
			j := i
			for j < len(v) && ('a' <= v[j] && v[j] <= 'z' || 'A' <= v[j] && v[j] <= 'Z') {
				j++
			}
			if j-i > 1 && !camelWords(v[i:j]+"xx") || j-i == 1 && c != 'v' {
				return false // +"xx": a last word of two letters (CreatedAt)
			}
			letters += j - i
			i = j
		default:
			i++
		}
	}
	return letters >= 6 && digits <= 4
}

// afterPreposition reports whether the word before s[ks:] is with, using,
// via or by: "connect with password X".
func afterPreposition(s string, ks int) bool {
	j := ks
	for j > 0 && s[j-1] == ' ' {
		j--
	}
	if j == ks {
		return false
	}
	w := j
	for w > 0 && isAlnum(s[w-1]) {
		w--
	}
	switch strings.ToLower(s[w:j]) {
	case "with", "using", "via", "by", "and":
		return true
	}
	return false
}

// netrcContext reports whether the key at ks sits in .netrc text: a
// "machine" or "default" entry shortly before, on this or earlier lines.
func netrcContext(lower string, ks int) bool {
	w := lower[max(0, ks-400):ks]
	return strings.Contains(w, "machine ") || strings.Contains(w, "login ") || strings.HasPrefix(strings.TrimSpace(w), "default")
}

func trivialValue(v string) bool {
	if len(v) <= 1 || len(v) <= 10 && trivialValues[strings.ToLower(v)] {
		return true // a one-character value is a flag (PuttyPassword=0)
	}
	for _, ref := range [...]string{"var.", "local.", "data.", "module.", "process.env.", "os.environ"} {
		if strings.HasPrefix(v, ref) && strings.Trim(strings.ToLower(v[len(ref):]), "abcdefghijklmnopqrstuvwxyz0123456789_.[]'\"") == "" {
			return true // Terraform's var.db_password, Node's process.env.X: a reference
		}
	}
	switch v[0] {
	case '$', '%', '{', '<':
		return true // ${VAR}, $VAR, %s, {{ .Secret }}, <your-token>
	case '[':
		if strings.HasSuffix(v, "]") && strings.Trim(v[1:len(v)-1], "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_- ") == "" {
			return true // [PASSWORD], [Redacted]: a word in brackets stands for the value
		}
	}
	if strings.Trim(v, "*xX.") == "" || len(v) <= 8 && strings.Trim(v, v[:1]) == "" && !isDigit(v[0]) {
		return true // already masked by the program (****, xxxx) or filler (yyy)
	}
	if u, pw, ok := strings.Cut(v, ":"); ok && u != "" && trivialValue(u) && trivialValue(pw) {
		return true // username:password, xxx:yyy: a pair of stand-ins
	}
	if strings.HasPrefix(v, "ENC[") || strings.Contains(strings.ToLower(v), "[redacted") {
		return true // SOPS ciphertext; a value a program already masked in part
	}
	return placeholderValue(v)
}

// placeholderValue reports a value written to be replaced: a filler run
// (pnu_XXXXXXXX…, glc_1111…, "aaaa…"), a keyboard sequence
// (sk_abcdefghijklmnopqrstuvwxyz123) or a command substitution
// (`vault read …`). Random text holds none of them: six equal characters
// in a row come up once in 10^8 random base62 strings.
func placeholderValue(v string) bool {
	if v[0] == '`' || strings.HasPrefix(v, "$(") {
		return true
	}
	// Filler: runs of six or more of one character making half the value
	// (a Twitter bearer token starts with twenty A's and is random after).
	run, filler := 1, 0
	for i := 1; i <= len(v); i++ {
		if i < len(v) && v[i] == v[i-1] && strings.IndexByte("xX*#01aA9._-", v[i]) >= 0 {
			run++
			continue
		}
		if run >= 6 {
			filler += run
		}
		run = 1
	}
	if 2*filler >= len(v) {
		return true
	}
	lower := strings.ToLower(v)
	return strings.Contains(lower, "abcdefgh") || strings.Contains(lower, "your_") ||
		strings.Contains(lower, "_here") || strings.Contains(lower, "your-") || strings.HasSuffix(lower, "here")
}
