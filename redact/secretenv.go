package redact

import "strings"

// Environment values by name, as the-loop does: the value of a variable
// whose name holds TOKEN, SECRET, KEY, PASSWORD, CREDENTIAL or AUTH (any
// case, anywhere in the name, whatever else the name says: AUTH_USER,
// GIT_AUTHOR_NAME, KEY_FILE, TOKEN_TTL) is masked wherever it appears,
// from six characters up and whatever its shape — a lower-case word, a
// name or a path is as much the-loop's to hide as a random string. This
// package masks more, never less: PASS, PASSWD, PAT, PWD and PSW count
// too, less the English words that merely contain them (PATH, COMPASS)
// and names whose last word describes the value (MYSQL_PWD_FILE).

// theLoopStems are the-loop's: a name holding one is masked, no exception.
var theLoopStems = []string{"token", "secret", "key", "password", "credential", "auth"}

// extraStems are this package's additions, refined by envAccidents and
// envDescriptors.
var extraStems = []string{"passwd", "pass", "pat", "pwd", "psw"}

// envAccidents are words that hold an extra stem without naming a secret.
var envAccidents = []string{"path", "patch", "pattern", "dispatch", "compat", "spatial", "patient", "patron",
	"compass", "bypass", "passive", "passenger", "passthrough", "surpass", "trespass"}

// envDescriptors are last words that describe a secret's handling, not
// the secret (PASS_PREFIX, PWD_POLICY), beside the attributes
// harmlessLastWord lists.
var envDescriptors = map[string]bool{
	"prefix": true, "suffix": true, "label": true, "alg": true, "bits": true, "interval": true,
	"days": true, "hours": true, "limit": true, "max": true, "min": true, "retries": true, "policy": true,
	"rotation": true, "required": true,
}

// secretEnvName reports whether a variable's name marks its value as a
// secret.
func secretEnvName(name string) bool {
	lower := strings.ToLower(name)
	for _, stem := range theLoopStems {
		if strings.Contains(lower, stem) {
			return true
		}
	}
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
		for _, stem := range extraStems {
			if strings.Contains(w, stem) {
				return true
			}
		}
	}
	return false
}

// maskableSecretEnvValue: six characters and up, as the-loop, less the
// words programs print for an unset or switched value (disabled, required,
// undefined), which would mask that word in every sentence and hide
// nothing. A path is masked too: the-loop hides where a key file is kept.
func maskableSecretEnvValue(v string) bool {
	return len(v) >= 6 && !(len(v) <= 10 && trivialValues[strings.ToLower(v)])
}
