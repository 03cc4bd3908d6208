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
// URL, a fraction (2/5) or a placeholder.
func pathStartOK(s string, i int) bool {
	if i == 0 {
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
			}
		case '~':
			if pathStartOK(s, p) && p+1 < len(s) && s[p+1] == '/' {
				off = maskPath(sc, p+1, 0)
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
	root := lower[segs[0].start:segs[0].end]
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
