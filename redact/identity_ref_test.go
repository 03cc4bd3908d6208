package redact

import (
	"slices"
	"strings"
	"testing"
)

// addReference is RecordIdentity.Add as first written (FieldsFunc, a
// character set scanned per run and test): Add must build the same runs.
func (id *RecordIdentity) addReference(key, value string) {
	value = strings.TrimSpace(value)
	key = strings.ToLower(key)
	had := len(id.runs)
	if value == "" || len(value) > 256 || enumFields[key] || strings.ContainsAny(value, "\t\n\r") ||
		strings.IndexByte(value, ' ') >= 0 && !isAbsolutePath(value) {
		return
	}
	consider := func(run string, person bool) {
		if len(run) < 2 {
			return
		}
		lower := asciiLower(run)
		if commonIdentityWords[lower] || allDigits(run) || !strings.ContainsAny(lower, "abcdefghijklmnopqrstuvwxyz") {
			return
		}
		innerCapital := strings.ContainsFunc(run[1:], func(r rune) bool { return 'A' <= r && r <= 'Z' })
		if !person && !distinctiveName(run) && !innerCapital && !strings.ContainsAny(run, `/\:#@`) {
			return
		}
		id.runs = append(id.runs, idRun{text: lower})
	}
	consider(value, personFields[key])
	if l := asciiLower(value); commonIdentityWords[l] {
		id.runs = append(id.runs, idRun{text: l, common: true})
	}
	v := value
	provider := false
	if c := strings.IndexByte(v, ':'); c > 0 && c < strings.IndexByte(v+"/", '/') && allLetters(v[:c]) {
		v, provider = v[c+1:], true
	}
	repoField := provider || key == "work_item" || key == "repo" || key == "repository" || key == "full_name"
	if slash := strings.IndexByte(v, '/'); repoField && slash > 0 && strings.Count(v, "/") == 1 {
		repo, num, _ := strings.Cut(v, "#")
		owner, name, _ := strings.Cut(repo, "/")
		consider(repo, true)
		consider(owner, true)
		consider(name, true)
		if num != "" && allDigits(num) {
			id.runs = append(id.runs, idRun{text: num, number: true})
		}
	}
	parts := strings.FieldsFunc(value, func(r rune) bool { return strings.ContainsRune(`/\:#@=,;?&`, r) })
	for k, part := range parts {
		person := k > 0 && (strings.EqualFold(parts[k-1], "home") || strings.EqualFold(parts[k-1], "users"))
		consider(part, person)
	}
	if len(id.runs) > had {
		id.normalize()
	}
}

func FuzzAddMatchesReference(f *testing.F) {
	for _, s := range []struct{ k, v string }{
		{"cwd", "/home/Ana/work/billing"}, {"work_item", "github:acme/Vault#12"}, {"repo", "acme/x"},
		{"cwd", `C:\Users\jdoe\src`}, {"branch", "main"}, {"actor", "octocat"}, {"delivery_id", "63b61b8f-0153-1f1d"},
		{"cwd", "/Users/Ana M./work"}, {"dir", "a//b::c#@d=e,f;g?h&é/home/ß"}, {"user", "\xffroot/\xfehome"},
	} {
		f.Add(s.k, s.v, "tmux_target", "loop-x-7:0.0")
	}
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		var got, want RecordIdentity
		got.Add(k1, v1)
		got.Add(k2, v2)
		want.addReference(k1, v1)
		want.addReference(k2, v2)
		if !slices.Equal(got.runs, want.runs) {
			t.Fatalf("Add(%q, %q), Add(%q, %q): runs %+v, want %+v", k1, v1, k2, v2, got.runs, want.runs)
		}
	})
}
