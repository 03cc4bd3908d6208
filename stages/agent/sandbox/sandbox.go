// Package sandbox confines an agent CLI, and every process it starts, by
// the kernel: Landlock limits the file system to what the run needs.
// No other process's /proc entries are in it: that rule is what keeps an
// agent out of the tool's environ when the tool runs as root (granted
// /proc, a confined root process read its parent's environ on kernel
// 6.18; sandbox_linux_test.go). The agent's supervisor starts
// the confining helper (Main), which applies the policy to itself and
// then execs the CLI, so the CLI inherits the restriction and can never
// shed it.
package sandbox

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
)

// HelperArg is the hidden first argument that makes a binary linking this
// package the confining helper (Main): `<exe> __agent-confine <spec JSON>`.
const HelperArg = "__agent-confine"

// Policy is what a confined process may reach of the file system: every
// path not beneath one of these is out of its reach (where Landlock is).
type Policy struct {
	// ReadWrite: read, write, create and remove beneath (the run's
	// directory, the CLI's own state under HOME).
	ReadWrite []string `json:"rw,omitempty"`
	// ReadOnly: read and execute beneath (the CLI's installation, the
	// system's libraries, certificates, locale and time zones).
	ReadOnly []string `json:"ro,omitempty"`
}

// Spec is one confined exec: what the helper runs, where, and under what.
// The environment is the helper's own, passed on as it is: it never goes
// on a command line, which any local user may read in /proc.
type Spec struct {
	Path   string   `json:"path"`
	Argv   []string `json:"argv"`
	Dir    string   `json:"dir"`
	Policy Policy   `json:"policy"`
}

// SystemReadOnly are the system paths every CLI reads: shared libraries
// and the dynamic loader, interpreters under /usr, TLS roots, name
// resolution, users and groups (no passwords: /etc/shadow is not here),
// locale and time-zone data, and the device files a runtime opens. A path
// missing on a host is skipped. /etc as a whole is not: /etc/hostname,
// the tool's config and whatever else an admin keeps there stay out.
var SystemReadOnly = []string{
	"/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin",
	"/etc/ssl", "/etc/ca-certificates", "/etc/pki", "/etc/ca-certificates.conf",
	"/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/host.conf", "/etc/gai.conf",
	"/etc/passwd", "/etc/group", "/etc/localtime", "/etc/timezone", "/etc/locale.alias", "/etc/locale.conf", "/etc/default/locale",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives", "/etc/os-release",
	"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/full",
	"/sys/devices/system/cpu", "/sys/fs/cgroup",
}

// SystemReadWrite are the device files a CLI writes to and that hold
// nothing of anyone's: /dev/null and its kin.
var SystemReadWrite = []string{"/dev/null", "/dev/zero", "/dev/full"}

// Installation is what running path needs read-only beyond the system's
// paths: path itself resolved, the package tree it belongs to (the
// outermost node_modules it lies in: an npm CLI's wrapper starts a native
// binary from a sibling package), else its directory, and the interpreter
// its #! line names (looked up on pathEnv for `/usr/bin/env X`), with the
// installation prefix that interpreter belongs to.
func Installation(path, pathEnv string) []string {
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		return []string{path}
	}
	out := []string{resolved, packageTree(resolved)}
	if interp := interpreter(resolved, pathEnv); interp != "" {
		if r, err := filepath.EvalSymlinks(interp); err == nil {
			out = append(out, r, prefixOf(r))
		}
	}
	return out
}

// packageTree is the outermost node_modules directory above file, or
// file's directory when it lies in none.
func packageTree(file string) string {
	parts := strings.Split(file, string(filepath.Separator))
	for i, p := range parts {
		if p == "node_modules" {
			return strings.Join(parts[:i+1], string(filepath.Separator))
		}
	}
	return prefixOf(file)
}

// prefixOf is the installation prefix of an executable: the parent of its
// directory when that is a bin directory (~/.nvm/versions/node/v20, not
// only its bin), else its directory.
func prefixOf(exe string) string {
	dir := filepath.Dir(exe)
	if filepath.Base(dir) == "bin" && filepath.Dir(dir) != "/" && filepath.Dir(dir) != "/usr" {
		return filepath.Dir(dir)
	}
	return dir
}

// interpreter is the program file's #! line names, "" for none.
func interpreter(file, pathEnv string) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	if !strings.HasPrefix(line, "#!") {
		return ""
	}
	fields := strings.Fields(line[2:])
	if len(fields) == 0 {
		return ""
	}
	if filepath.Base(fields[0]) != "env" {
		return fields[0]
	}
	for _, a := range fields[1:] {
		if strings.HasPrefix(a, "-") || strings.Contains(a, "=") {
			continue
		}
		for _, dir := range filepath.SplitList(pathEnv) {
			if c := filepath.Join(dir, a); filepath.IsAbs(c) && isExecutable(c) {
				return c
			}
		}
		return ""
	}
	return ""
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}
