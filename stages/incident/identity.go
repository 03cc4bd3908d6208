package incident

import (
	"slices"
	"strings"
)

// IdentityFields name who and where a record is about (its work item, its
// branch, the person or bot acting, the session, the machine, the working
// directory, one delivery): a value of one of them that reappears in the
// error text is volatile for the fingerprint (the same defect on another
// work item is the same defect). A field whose name ends in "id" (a
// request, trace or correlation id) is one too. Other fields are left out:
// a logger's or component's name ("logger":"payments") reappearing in its
// message names the defect, and masking it would merge two components'
// defects. Redaction masks every dropped field (RecordIdentity): there,
// masking too much is safe.
var IdentityFields = []string{
	"work_item", "repo", "repository", "full_name", "branch", "ref", "actor", "user", "username",
	"login", "sender", "author", "owner", "assignee", "committer", "requester", "tmux_target",
	"session", "cwd", "workdir", "working_dir", "dir", "home", "host", "hostname", "pod", "node",
	"container", "instance",
}

// IdentityField tells whether key names identity, and under which of
// IdentityFields' names: one of them, an id field, or a key whose last word
// is one of them, as other loggers name them ("git_branch" is a branch,
// "userLogin" a login, "pod_name" and "host.name" the last word before a
// "name"), so the value is judged as that field's (a login is a person's
// name even when it reads as a word).
func IdentityField(key string) (string, bool) {
	if k := strings.ToLower(key); slices.Contains(IdentityFields, k) || isIDField(key) {
		return k, true
	}
	words := keyWords(key)
	if len(words) < 2 { // a one-word key was looked up whole above
		return "", false
	}
	last := words[len(words)-1]
	if last == "name" {
		last = words[len(words)-2]
	}
	return last, slices.Contains(IdentityFields, last)
}

// IdentityKeys remembers IdentityField's answer per key: a log writes the
// same few keys on every record, and working the answer out anew was a
// fifth of the cost of a record's identity. It is not safe for concurrent
// use.
type IdentityKeys map[string]identityKey

type identityKey struct {
	name string
	ok   bool
}

// maxIdentityKeys bounds IdentityKeys for a log whose keys are data: it is
// emptied when full.
const maxIdentityKeys = 1024

// Field is IdentityField(key), remembered.
func (m IdentityKeys) Field(key string) (string, bool) {
	k, ok := m[key]
	if !ok {
		k.name, k.ok = IdentityField(key)
		if len(m) >= maxIdentityKeys {
			clear(m)
		}
		m[strings.Clone(key)] = k // not a slice of the record's line, which it would keep
	}
	return k.name, k.ok
}

func isIdentityField(key string) bool {
	_, ok := IdentityField(key)
	return ok
}

// keyWords splits a field name into lower-case words at '_', '-', '.' and
// a lower-to-upper case change.
func keyWords(key string) []string {
	var words []string
	start := 0
	for i := 0; i <= len(key); i++ {
		split := i == len(key) || key[i] == '_' || key[i] == '-' || key[i] == '.'
		camel := i > 0 && i < len(key) && key[i-1] >= 'a' && key[i-1] <= 'z' && key[i] >= 'A' && key[i] <= 'Z'
		if split || camel {
			if i > start {
				words = append(words, strings.ToLower(key[start:i]))
			}
			start = i
			if split {
				start = i + 1
			}
		}
	}
	return words
}

// isIDField: "id", "delivery_id", "request-id", "traceId", "spanID".
func isIDField(key string) bool {
	k := strings.ToLower(key)
	return k == "id" || strings.HasSuffix(k, "_id") || strings.HasSuffix(k, "-id") ||
		strings.HasSuffix(key, "Id") || strings.HasSuffix(key, "ID")
}
