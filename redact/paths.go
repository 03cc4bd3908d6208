package redact

import "strings"

// Paths: a path under a root where machines keep people's and customers'
// files (a home directory, /srv, /mnt, /data, /Volumes, a workspace, a
// Windows drive, a UNC share, ~) may name a customer, a project or a person
// in the directories between that root and the source tree. Those
// directories are masked as one <redacted:path>; the root and the tail a
// maintainer needs (from the first source-tree anchor such as src/,
// internal/, site-packages/, node_modules/, or the file name when it has a
// source or text extension) stay. System paths (/usr, /etc, /dev, /proc,
// /tmp, /var, /opt/homebrew, C:\Windows, ...) and paths under roots that
// are not a storage root (URL routes such as /api/v1/users) are kept whole.

// systemRoots hold the operating system's and package managers' files.
var systemRoots = map[string]bool{
	"usr": true, "etc": true, "dev": true, "proc": true, "sys": true, "tmp": true, "var": true, "bin": true,
	"sbin": true, "lib": true, "lib32": true, "lib64": true, "libx32": true, "run": true, "boot": true,
	"nix": true, "snap": true, "system": true, "library": true, "applications": true, "private": true,
	"cores": true, "windows": true, "programdata": true, "program files": true, "program files (x86)": true,
}

// optSystem are /opt's package-manager and vendor trees.
var optSystem = map[string]bool{
	"homebrew": true, "local": true, "conda": true, "miniconda3": true, "hostedtoolcache": true,
	"java": true, "google": true, "microsoft": true, "python": true, "rh": true, "bitnami": true,
}

// storageRoots are where a machine keeps people's, customers' and
// projects' files: masking starts with their first directory.
var storageRoots = map[string]bool{
	"srv": true, "mnt": true, "data": true, "media": true, "volumes": true, "workspace": true,
	"workspaces": true, "work": true, "builds": true, "app": true, "code": true, "export": true,
	"net": true, "scratch": true, "shared": true, "github": true, "__w": true, "opt": true, "root": true,
	"projects": true, "repos": true, "clients": true, "customers": true, "backup": true, "backups": true,
}

// pathAnchors start the part of a path that is the software's own: what
// follows is what a maintainer reads a stack trace by.
var pathAnchors = map[string]bool{
	"src": true, "source": true, "lib": true, "lib64": true, "libs": true, "internal": true, "pkg": true,
	"cmd": true, "app": true, "apps": true, "test": true, "tests": true, "spec": true, "vendor": true,
	"node_modules": true, "site-packages": true, "dist-packages": true, "bin": true, "include": true,
	"go": true, ".venv": true, "venv": true, ".cargo": true, ".rustup": true, ".npm": true, ".cache": true,
	".config": true, ".local": true, ".ssh": true, ".kube": true, ".m2": true, ".gradle": true, ".git": true,
	"dist": true, "target": true, "appdata": true, "__pycache__": true, ".docker": true, ".aws": true,
}

// sourceExts are file extensions of source, configuration and text files:
// such a file name says what broke, not whose it is.
var sourceExts = map[string]bool{
	"go": true, "py": true, "js": true, "mjs": true, "cjs": true, "ts": true, "tsx": true, "jsx": true,
	"java": true, "kt": true, "rb": true, "rs": true, "c": true, "h": true, "cc": true, "cpp": true,
	"hpp": true, "cs": true, "php": true, "swift": true, "scala": true, "sh": true, "bash": true,
	"ps1": true, "pl": true, "lua": true, "sql": true, "yaml": true, "yml": true, "json": true,
	"jsonl": true, "toml": true, "ini": true, "cfg": true, "conf": true, "xml": true, "html": true,
	"css": true, "md": true, "txt": true, "log": true, "lock": true, "mod": true, "sum": true,
	"proto": true, "gradle": true, "properties": true, "pyc": true, "so": true, "dll": true, "jar": true,
}

func pathSegChar(c byte) bool {
	return isAlnum(c) || c == '.' || c == '_' || c == '-' || c == '+' || c == '@' || c == '~' || c == '%' || c == '$'
}

// pathStartOK: a path starts at the beginning of a word, not inside a
// URL, a fraction (2/5) or a placeholder; file:///… is a path.
func pathStartOK(s string, i int) bool {
	if i == 0 {
		return true
	}
	if i >= 7 && strings.EqualFold(s[i-7:i], "file://") {
		return true
	}
	switch s[i-1] {
	case ' ', '\t', '\n', '\r', '"', '\'', '`', '(', '[', '{', '=', ',', ';', '|':
		return true
	}
	return false
}

type seg struct{ start, end int }

// findPaths masks the identifying directories of absolute paths.
func findPaths(sc *scan) {
	s := sc.s
	for off := 0; ; {
		i := strings.IndexAny(s[off:], `/\~`)
		if i < 0 {
			return
		}
		p := off + i
		off = p + 1
		switch s[p] {
		case '/':
			if pathStartOK(s, p) && p+1 < len(s) && pathSegChar(s[p+1]) {
				off = unixPath(sc, p)
			} else if p+1 < len(s) && pathSegChar(s[p+1]) {
				off = max(off, relativeStatePath(sc, p))
			}
		case '~':
			if pathStartOK(s, p) && p+1 < len(s) && s[p+1] == '/' {
				off = homeRelative(sc, p+1)
			}
		case '\\':
			if p >= 2 && s[p-1] == ':' && isAlnum(s[p-2]) && !(p >= 3 && isAlnum(s[p-3])) && pathStartOK(s, p-2) {
				off = windowsPath(sc, p)
			} else if p+1 < len(s) && s[p+1] == '\\' && pathStartOK(s, p) {
				q := p
				for q < len(s) && s[q] == '\\' {
					q++
				}
				if q < len(s) && isAlnum(s[q]) && q-p <= 4 {
					off = maskPath(sc, q-1, 0) // \\server\share: the server is the first segment
				}
			}
		}
	}
}

// segments splits the path starting at the separator at p into its
// segments (a run of / or \ separates); it ends at a character no path
// segment holds (a space, a quote, the ':' before a line number).
func segments(s string, p int, buf []seg) ([]seg, int) {
	for p < len(s) && (s[p] == '/' || s[p] == '\\') {
		for p < len(s) && (s[p] == '/' || s[p] == '\\') {
			p++
		}
		st := p
		for p < len(s) && pathSegChar(s[p]) {
			p++
		}
		if p == st || isPlaceholderAt(s, st) {
			break
		}
		buf = append(buf, seg{st, p})
	}
	return buf, p
}

func unixPath(sc *scan, p int) int {
	s, lower := sc.s, sc.lower
	var buf [16]seg
	segs, end := segments(s, p, buf[:0])
	if len(segs) == 0 {
		return p + 1
	}
	if k := workTreeRepo(lower, segs, sc.stateRoots); k > 0 {
		sc.add(segs[k].start, segs[k].end, "repo")
		return end
	}
	root := lower[segs[0].start:segs[0].end]
	if k := credentialStore(lower, segs); k >= 0 {
		from := 0
		if root == "home" || root == "users" {
			from = 2 // the user is findHomePaths'
		}
		if k >= from && from < len(segs) {
			sc.add(segs[from].start, end, "path")
		}
		return end
	}
	switch {
	case root == "home" || root == "users":
		if len(segs) > 1 && notUserDirs[s[segs[1].start:segs[1].end]] {
			return end // /Users/Shared: the system's
		}
		return maskFrom(sc, segs, 2, end) // the user is findHomePaths'
	case root == "opt" && len(segs) > 1 && optSystem[lower[segs[1].start:segs[1].end]]:
		return end
	case systemRoots[root]:
		return end
	case storageRoots[root]:
		return maskFrom(sc, segs, 1, end)
	}
	return end
}

// windowsPath handles X:\...: a drive is a storage root.
func windowsPath(sc *scan, p int) int {
	lower := sc.lower
	rest := lower[p:]
	for len(rest) > 0 && rest[0] == '\\' {
		rest = rest[1:]
	}
	for _, sys := range [...]string{"windows", "program files", "programdata"} {
		if strings.HasPrefix(rest, sys) {
			return p + 1
		}
	}
	var buf [16]seg
	segs, end := segments(sc.s, p, buf[:0])
	if len(segs) == 0 {
		return p + 1
	}
	if lower[segs[0].start:segs[0].end] == "users" {
		return maskFrom(sc, segs, 2, end)
	}
	return maskFrom(sc, segs, 0, end)
}

// maskPath masks the path whose first separator is at p from segment from.
func maskPath(sc *scan, p, from int) int {
	var buf [16]seg
	segs, end := segments(sc.s, p, buf[:0])
	if len(segs) == 0 {
		return p + 1
	}
	return maskFrom(sc, segs, from, end)
}

// maskFrom masks segs[from:] up to the first anchor as one span.
func maskFrom(sc *scan, segs []seg, from, end int) int {
	lower := sc.lower
	if from >= len(segs) {
		return end
	}
	upto := len(segs)
	for k := from; k < len(segs); k++ {
		name := lower[segs[k].start:segs[k].end]
		if pathAnchors[name] || strings.HasPrefix(name, "python3") || strings.HasPrefix(name, "python2") {
			upto = k
			break
		}
		if k == len(segs)-1 {
			if dot := strings.LastIndexByte(name, '.'); dot > 0 && sourceExts[name[dot+1:]] {
				upto = k
			}
		}
	}
	if upto > from {
		sc.add(segs[from].start, segs[upto-1].end, "path")
	}
	return end
}

// homeRelative handles ~/…, a person's files: a credential store under it
// (~/.ssh/id_rsa, ~/.aws/credentials) is masked whole, other paths from
// the home to the source tree.
func homeRelative(sc *scan, p int) int {
	var buf [16]seg
	segs, end := segments(sc.s, p, buf[:0])
	if len(segs) == 0 {
		return p + 1
	}
	if credentialStore(sc.lower, segs) >= 0 {
		sc.add(segs[0].start, end, "path")
		return end
	}
	return maskFrom(sc, segs, 0, end)
}

// credentialDirs and credentialFiles name where keys and passwords are
// kept; the-loop masks such paths (/etc/passwd, ~/.ssh/id_rsa): they say
// what an attacker would read.
var credentialDirs = map[string]bool{
	".ssh": true, ".aws": true, ".gnupg": true, ".kube": true, ".docker": true, ".azure": true, ".gcloud": true,
	"private": true,
}

var credentialFiles = map[string]bool{
	"passwd": true, "shadow": true, "gshadow": true, "sudoers": true, "master.passwd": true, ".netrc": true,
	".pgpass": true, ".git-credentials": true, ".npmrc": true, ".pypirc": true, "credentials": true,
	"credentials.json": true, ".htpasswd": true, "authorized_keys": true, "known_hosts": true,
}

// credentialStore returns the index of the segment that makes segs a path
// into a credential store, or -1.
func credentialStore(lower string, segs []seg) int {
	for k, sg := range segs {
		name := lower[sg.start:sg.end]
		last := k == len(segs)-1
		switch {
		case credentialDirs[name] && !last && name != "private":
			return k
		case name == "private" && k > 0 && lower[segs[k-1].start:segs[k-1].end] == "ssl":
			return k // /etc/ssl/private
		case last && credentialFiles[name]:
			return k
		case last && (strings.HasPrefix(name, "id_rsa") || strings.HasPrefix(name, "id_ed25519") || strings.HasPrefix(name, "id_ecdsa") || strings.HasPrefix(name, "id_dsa")):
			return k
		case last && (strings.HasSuffix(name, ".pem") || strings.HasSuffix(name, ".key") || strings.HasSuffix(name, ".p12") || strings.HasSuffix(name, ".pfx") || strings.HasSuffix(name, ".jks") || strings.HasSuffix(name, ".keystore")):
			return k
		}
	}
	return -1
}

// stateDirNames are the-loop's state root as its deployments name it
// (state.root's default .the-loop, /var/lib/the-loop); workDirNames the
// directories under it that hold one checkout per repository. The
// segment after a work directory is the repository: a private one's name
// is masked and the repository-relative tail stays.
var stateDirNames = map[string]bool{"the-loop": true, ".the-loop": true}

var workDirNames = map[string]bool{
	"work": true, "worktrees": true, "workspaces": true, "workspace": true, "repos": true, "clones": true, "checkouts": true,
}

// workTreeRepo returns the index of the segment naming a repository
// under the-loop's state root (by name, or one of roots), or 0.
func workTreeRepo(lower string, segs []seg, roots []string) int {
	for k := 0; k+2 < len(segs); k++ {
		if !workDirNames[lower[segs[k+1].start:segs[k+1].end]] {
			continue
		}
		if stateDirNames[lower[segs[k].start:segs[k].end]] {
			return k + 2
		}
		for _, r := range roots {
			if strings.HasSuffix(lower[:segs[k].end], r) && (len(r) == segs[k].end || lower[segs[k].end-len(r)-1] == '/' || lower[segs[k].end-len(r)] == '/') {
				return k + 2
			}
		}
	}
	return 0
}

// relativeStatePath handles a path relative to where the-loop runs
// (.the-loop/worktrees/repo-7/x.py, state.root's default): the word
// before the separator at p is the state directory.
func relativeStatePath(sc *scan, p int) int {
	ws := p
	for ws > 0 && pathSegChar(sc.s[ws-1]) {
		ws--
	}
	if !stateDirNames[sc.lower[ws:p]] || !pathStartOK(sc.s, ws) {
		return p + 1
	}
	buf := [16]seg{{ws, p}}
	segs, end := segments(sc.s, p, buf[:1])
	if k := workTreeRepo(sc.lower, segs, nil); k > 0 {
		sc.add(segs[k].start, segs[k].end, "repo")
	}
	return end
}
