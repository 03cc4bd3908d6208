package redact

import "strings"

// People and machines named in a sentence's own words (issue 32, point
// 4): the account a permission message is about ("permission denied for
// jtanaka"), a commit's author ("author: hiroshi"), the user of
// user@host in ssh and git messages, and hosts under a private naming
// label (vault.prod.initech.net, ws-jdoe59.office.acme-corp.com).

// personCues are phrases after which the next word names a person or an
// account.
var personCues = []string{"denied for ", "author: ", "author=", "authored by ", "committed by ", "committer: "}

// personAnchors: a text holding none of them has no cue, checked in
// three passes instead of one per cue.
var personAnchors = []string{"denied for ", "author", "committe"}

func findPeople(sc *scan) {
	s, lower := sc.s, sc.lower
	anchored := false
	for _, a := range personAnchors {
		if strings.Contains(lower, a) {
			anchored = true
			break
		}
	}
	if !anchored {
		findSSHUsers(sc)
		return
	}
	for _, cue := range personCues {
		for off := 0; ; {
			// "co-author: " is still a cue; "coauthor" glued is not ours.
			p := nextWordEnd(lower, off, len(lower), cue)
			if p < 0 {
				break
			}
			off = p
			q := p
			if q < len(s) && (s[q] == '"' || s[q] == '\'') {
				q++
			}
			e := q
			for e < len(s) && keyChar(s[e]) {
				e++
			}
			for e > q && (s[e-1] == '.' || s[e-1] == '-') {
				e--
			}
			if e-q < 2 || isPlaceholderAt(s, q) || notAccountNames[lower[q:e]] || personStopWords[lower[q:e]] {
				continue
			}
			sc.add(q, e, "user")
		}
	}
	findSSHUsers(sc)
}

// personStopWords follow a cue without naming anyone.
var personStopWords = map[string]bool{
	"user": true, "the": true, "this": true, "that": true, "table": true, "schema": true, "relation": true,
	"database": true, "sequence": true, "function": true, "unknown": true, "none": true, "null": true,
	"a": true, "an": true, "all": true, "root": false, "anonymous": true, "path": true, "file": true,
}

// sshServiceUsers are the accounts hosting services publish in clone URLs:
// the same for everyone, naming nobody.
var sshServiceUsers = map[string]bool{"git": true, "hg": true, "ec2-user": true, "org-": true}

// findSSHUsers masks the user of user@host on a line that speaks ssh or
// git, where the host is a machine name (no public TLD makes it an
// e-mail address, which findEmails owns).
func findSSHUsers(sc *scan) {
	s, lower := sc.s, sc.lower
	for off := 0; ; {
		i := strings.IndexByte(s[off:], '@')
		if i < 0 {
			return
		}
		at := off + i
		off = at + 1
		us := at
		for us > 0 && keyChar(s[us-1]) {
			us--
		}
		he := at + 1
		for he < len(s) && (isAlnum(s[he]) || s[he] == '.' || s[he] == '-') {
			he++
		}
		if us == at || he == at+1 || (us > 0 && (s[us-1] == ':' || s[us-1] == '/')) || sshServiceUsers[lower[us:at]] {
			continue // scheme://user@host is urls.go's
		}
		host := lower[at+1 : he]
		if strings.Contains(host, ".") && !strings.HasSuffix(host, ".internal") && !strings.HasSuffix(host, ".local") && !strings.HasSuffix(host, ".lan") {
			continue // an e-mail address or a public host
		}
		if at-us < 2 || !lineHasWord(lower, at, sshWords) {
			continue
		}
		if keyComment(s, us) {
			continue // a public key's comment: shared with the key, meant to be read
		}
		sc.add(us, at, "user")
	}
}

// privateLabels are DNS labels organisations give their internal zones:
// a name with one of them left of its registrable domain is an internal
// host, whatever public suffix the organisation registered.
var privateLabels = map[string]bool{
	"prod": true, "production": true, "staging": true, "stage": true, "corp": true, "office": true,
	"intra": true, "intranet": true, "internal": true, "int": true, "priv": true, "private": true,
	"vpn": true, "lan": true, "dmz": true, "mgmt": true, "infra": true, "ad": true,
}

// findPrivatelyNamedHosts masks the labels left of the registrable domain
// of a host name holding a private label (vault.prod.initech.net keeps
// initech.net: the organisation is public, its machines are not).
func findPrivatelyNamedHosts(sc *scan) {
	s, lower := sc.s, sc.lower
	if !hasPrivateLabel(lower) {
		return // most texts: one pass over the dots, no token read
	}
	for i := 0; i < len(s); {
		if !isAlnum(s[i]) || (i > 0 && (isAlnum(s[i-1]) || s[i-1] == '.' || s[i-1] == '-' || s[i-1] == '_' || s[i-1] == '@')) {
			i++
			continue
		}
		e := i
		for e < len(s) && (isAlnum(s[e]) || s[e] == '.' || s[e] == '-') {
			e++
		}
		name := strings.TrimRight(lower[i:e], ".-")
		start := i
		i = e
		if strings.Count(name, ".") < 3 {
			continue // most tokens: no allocation for them
		}
		labels := strings.Split(name, ".")
		if len(labels) < 4 || e < len(s) && (s[e] == '_' || s[e] == '(' || s[e] == '/' && start > 0 && s[start-1] == '/') || reverseDNS[labels[0]] {
			continue // com.acme.internal.Foo.bar(…): a package, not a host
		}
		tld := labels[len(labels)-1]
		if len(tld) < 2 || len(tld) > 6 || strings.Trim(tld, "abcdefghijklmnopqrstuvwxyz") != "" {
			continue // a version, a file name, a Java package with a long last part
		}
		private := false
		for _, l := range labels[1 : len(labels)-2] {
			if privateLabels[l] {
				private = true
			}
		}
		if !private {
			continue
		}
		cut := len(name) - len(labels[len(labels)-1]) - len(labels[len(labels)-2]) - 1
		sc.add(start, start+cut-1, "host")
	}
}

// reverseDNS are first labels of Java, Kotlin and .NET package names.
var reverseDNS = map[string]bool{"com": true, "org": true, "net": true, "io": true, "de": true, "uk": true, "fr": true,
	"nl": true, "jp": true, "edu": true, "gov": true, "dev": true, "app": true, "co": true, "me": true, "ch": true}

// keyComment reports whether the word at i follows an OpenSSH public key's
// base64 (AAAA…).
func keyComment(s string, i int) bool {
	j := i
	for j > 0 && s[j-1] == ' ' {
		j--
	}
	we := j
	for j > 0 && (isAlnum(s[j-1]) || s[j-1] == '+' || s[j-1] == '/' || s[j-1] == '=') {
		j--
	}
	return we < i && we-j >= 40 && strings.HasPrefix(s[j:we], "AAAA")
}

// hasPrivateLabel reports whether some ".label." in lower is private.
func hasPrivateLabel(lower string) bool {
	for off := 0; ; {
		i := strings.IndexByte(lower[off:], '.')
		if i < 0 {
			return false
		}
		ls := off + i + 1
		le := ls
		for le < len(lower) && le-ls <= 10 && (isAlnum(lower[le]) || lower[le] == '-') {
			le++
		}
		if le < len(lower) && lower[le] == '.' && privateLabels[lower[ls:le]] {
			return true
		}
		off = ls
	}
}

var sshWords = []string{"ssh", "git", "scp", "rsync", "sftp"}

// lineHasWord reports whether the line holding i has one of words as a
// whole word (git, not github or <redacted:github-token>).
func lineHasWord(lower string, i int, words []string) bool {
	ls := strings.LastIndexByte(lower[:i], '\n') + 1
	le := strings.IndexByte(lower[i:], '\n')
	if le < 0 {
		le = len(lower)
	} else {
		le += i
	}
	line := lower[ls:le]
	for _, w := range words {
		for off := 0; ; {
			en := nextWordEnd(line, off, len(line), w)
			if en < 0 {
				break
			}
			off = en
			if en == len(line) || !isAlnum(line[en]) {
				return true
			}
		}
	}
	return false
}
