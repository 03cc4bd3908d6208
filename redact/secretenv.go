package redact

import "strings"

// Environment values by name, as the-loop does: the value of a variable
// whose name holds TOKEN, SECRET, KEY, PASSWORD, CREDENTIAL, PASS or PAT
// (any case, anywhere in the name) is masked wherever it appears, from six
// characters up and whatever its shape — a lower-case word or a number is
// as much a password as a random string. The name match is a substring
// match, less the English words that merely contain one (PATH, PATCH,
// KEYBOARD, COMPASS, ...), and less names whose last word says the value
// describes the secret rather than being it (TOKEN_TTL_SECONDS, KEY_FILE).

var envSecretStems = []string{"token", "secret", "key", "password", "passwd", "credential", "pass", "pat", "auth", "pwd", "psw"}

// envAccidents are words that hold a stem without naming a secret.
var envAccidents = []string{"path", "patch", "pattern", "dispatch", "compat", "spatial", "patient", "patron",
	"keyboard", "keymap", "keyspace", "monkey", "turkey", "hockey", "donkey", "jockey", "whiskey", "hotkey",
	"compass", "bypass", "passive", "passenger", "passthrough", "surpass", "trespass", "tokenizer", "author"}

// envDescriptors are last words that describe a secret's handling, not
// the secret (KEY_PREFIX, TOKEN_LIMIT, PASSWORD_POLICY), beside the
// attributes harmlessLastWord lists.
var envDescriptors = map[string]bool{
	"prefix": true, "suffix": true, "label": true, "alg": true, "bits": true, "interval": true,
	"days": true, "hours": true, "limit": true, "max": true, "min": true, "retries": true, "policy": true,
	"rotation": true, "required": true,
}

// secretEnvName reports whether a variable's name marks its value as a
// secret.
func secretEnvName(name string) bool {
	var buf [8]string
	words := splitWords(name, buf[:0])
	if len(words) == 0 || (len(words) == 1 && (words[0] == "pwd" || words[0] == "oldpwd")) {
		return false
	}
	if last := words[len(words)-1]; harmlessLastWord[last] || envDescriptors[last] {
		return false
	}
	for _, w := range words {
		for _, a := range envAccidents {
			w = strings.ReplaceAll(w, a, " ")
		}
		for _, stem := range envSecretStems {
			if strings.Contains(w, stem) {
				return true
			}
		}
	}
	return false
}

// maskableSecretEnvValue rejects only what cannot be told from ordinary
// text or is not the secret itself: values under six characters, the
// placeholders programs print (true, none, ****, ${VAR}) and file paths,
// which say where a secret is kept, not what it is.
func maskableSecretEnvValue(v string) bool {
	if len(v) < 6 || trivialValue(v) {
		return false
	}
	return !(v[0] == '/' || v[0] == '~' || strings.HasPrefix(v, "./") || (len(v) > 2 && v[1] == ':' && v[2] == '\\'))
}
