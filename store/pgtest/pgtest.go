// Package pgtest runs a throwaway PostgreSQL cluster for tests: initdb into
// a temporary directory, the server on a Unix socket only (no TCP port),
// fsync off, stopped at the end. One cluster serves a whole test binary;
// each test gets a fresh database in it.
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//	func TestX(t *testing.T) { url := pgtest.Start(t); ... }
//
// A test that needs PostgreSQL skips, saying so, when the server binaries
// are absent — but fails instead when CI is set: CI installs them.
package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// Cluster is a running throwaway PostgreSQL server.
type Cluster struct {
	Dir      string // holds data/ and the socket
	BinDir   string // where initdb, pg_ctl and postgres were found
	SockDir  string
	data     string
	cred     *syscall.Credential // the unprivileged user the server runs as; nil: as ourselves
	proc     *exec.Cmd
	exited   chan struct{}
	logPath  string
	stopOnce sync.Once
}

// ErrNoServer means the PostgreSQL server binaries are not installed.
var ErrNoServer = errors.New("PostgreSQL server binaries (initdb, pg_ctl, postgres) not found in PATH or /usr/lib/postgresql/*/bin; install Debian's postgresql package")

var (
	sharedOnce sync.Once
	shared     *Cluster
	sharedErr  error
)

// Shared starts the test binary's cluster on first use and returns it.
// Main stops it; a test binary without Main leaves its server to die with
// the process (it is started with a parent-death signal).
func Shared() (*Cluster, error) {
	sharedOnce.Do(func() { shared, sharedErr = NewCluster() })
	return shared, sharedErr
}

// Main runs the tests and then stops the shared cluster, if one started.
func Main(m *testing.M) int {
	code := m.Run()
	StopShared()
	return code
}

// StopShared stops the shared cluster if one started (a TestMain that
// does more than Main calls it after m.Run).
func StopShared() {
	if shared != nil {
		if err := shared.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
		}
	}
}

// Start returns the URL of a fresh, empty database on the shared cluster,
// over its Unix socket. Without server binaries the test skips (fails
// when CI is set).
func Start(t testing.TB) string {
	t.Helper()
	c, err := Shared()
	skipOrFail(t, err)
	u, err := c.CreateDatabase(context.Background())
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return u
}

// Own starts a cluster of the test's own (one it may stop mid-test: a
// server going away), stopped at the test's end. It skips or fails as
// Start does.
func Own(t testing.TB) *Cluster {
	t.Helper()
	c, err := NewCluster()
	skipOrFail(t, err)
	t.Cleanup(func() { c.Stop() })
	return c
}

// skipOrFail ends t when the cluster could not start: a skip, saying so,
// without server binaries — a failure when CI is set, which installs them.
func skipOrFail(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, ErrNoServer) {
		if os.Getenv("CI") != "" {
			t.Fatalf("pgtest: %v (CI is set, so this fails rather than skips)", err)
		}
		t.Skipf("pgtest: skipping, %v", err)
	}
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
}

// FindBinaries returns the directory holding initdb, pg_ctl and postgres:
// initdb's in PATH (links followed, Debian links them from elsewhere),
// else the newest /usr/lib/postgresql/N/bin.
func FindBinaries() (string, error) {
	var dirs []string
	if p, err := exec.LookPath("initdb"); err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		dirs = append(dirs, filepath.Dir(p))
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(found, func(i, j int) bool { return versionOf(found[i]) > versionOf(found[j]) })
	dirs = append(dirs, found...)
	for _, d := range dirs {
		ok := true
		for _, b := range []string{"initdb", "pg_ctl", "postgres"} {
			if fi, err := os.Stat(filepath.Join(d, b)); err != nil || fi.Mode()&0o111 == 0 {
				ok = false
			}
		}
		if ok {
			return d, nil
		}
	}
	return "", ErrNoServer
}

func versionOf(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// NewCluster initialises and starts a cluster of its own (most tests want
// Start or Shared instead). Stop it with Stop.
func NewCluster() (*Cluster, error) {
	bin, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, BinDir: bin, SockDir: dir, data: filepath.Join(dir, "data"), logPath: filepath.Join(dir, "server.log")}
	// initdb and postgres refuse to run as root, and tests here and in CI
	// run as root: the server runs as an unprivileged user owning its
	// directory.
	if os.Geteuid() == 0 {
		cred, err := unprivileged()
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		c.cred = cred
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if err := c.initdb(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := c.start(); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// unprivileged is Debian's postgres user if there is one, else nobody.
func unprivileged() (*syscall.Credential, error) {
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
	}
	return nil, errors.New("running as root and neither a postgres nor a nobody user exists to run the server as")
}

func (c *Cluster) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(c.BinDir, name), args...)
	cmd.Dir = c.Dir // the unprivileged user may not be able to enter ours
	env := []string{"LC_ALL=C", "LANG=C", "TZ=UTC", "PATH=" + os.Getenv("PATH")}
	if c.cred != nil {
		env = append(env, "HOME="+c.Dir)
	} else if h := os.Getenv("HOME"); h != "" {
		env = append(env, "HOME="+h)
	}
	cmd.Env = env // no PG* variables of the caller's leak into the cluster
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	return cmd
}

func (c *Cluster) initdb() error {
	cmd := c.command("initdb", "-D", c.data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %v\n%s", err, out)
	}
	return nil
}

// start runs postgres as our child, not through pg_ctl start (which would
// detach it): if the test binary dies the server gets SIGKILL from the
// parent-death signal, and its backends follow the postmaster out.
func (c *Cluster) start() error {
	logf, err := os.OpenFile(c.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := c.command("postgres", "-D", c.data,
		"-c", "listen_addresses=",
		"-c", "unix_socket_directories="+c.SockDir,
		"-c", "fsync=off",
		"-c", "synchronous_commit=off",
		"-c", "full_page_writes=off",
		"-c", "max_connections=300",
		"-c", "shared_buffers=32MB",
		"-c", "log_min_messages=warning",
	)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	c.exited = make(chan struct{})
	started := make(chan error, 1)
	// The parent-death signal fires when the thread that forked the child
	// exits, not the process: fork from a thread that stays alive.
	go func() {
		runtime.LockOSThread() // never unlocked: the thread lives as long as the server
		err := cmd.Start()
		started <- err
		if err == nil {
			cmd.Wait()
		}
		// The goroutine returns only once the server is gone; its thread
		// exits with it (a locked thread is not reused).
		close(c.exited)
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	c.proc = cmd
	deadline := time.Now().Add(60 * time.Second)
	for {
		db, err := sql.Open("pgx", c.url("postgres"))
		if err == nil {
			err = db.Ping()
			db.Close()
		}
		if err == nil {
			return nil
		}
		select {
		case <-c.exited:
			return fmt.Errorf("postgres exited at start: %s", c.tailLog())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres not ready after 60 s: %v\n%s", err, c.tailLog())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *Cluster) tailLog() string {
	b, _ := os.ReadFile(c.logPath)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// url is a libpq-style URL for database name over the socket.
func (c *Cluster) url(name string) string {
	q := url.Values{"host": {c.SockDir}, "sslmode": {"disable"}}
	return "postgres://postgres@/" + name + "?" + q.Encode()
}

// URL is the URL of database name on this cluster.
func (c *Cluster) URL(name string) string { return c.url(name) }

// CreateDatabase creates a fresh database t_<random> and returns its URL.
func (c *Cluster) CreateDatabase(ctx context.Context) (string, error) {
	var b [6]byte
	rand.Read(b[:])
	name := "t_" + hex.EncodeToString(b[:])
	db, err := sql.Open("pgx", c.url("postgres"))
	if err != nil {
		return "", err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return c.url(name), nil
}

// Stop stops the server (pg_ctl stop -m immediate: the data is thrown away)
// and removes its directory.
func (c *Cluster) Stop() error {
	var err error
	c.stopOnce.Do(func() { err = c.stop() })
	return err
}

func (c *Cluster) stop() error {
	var err error
	if c.proc != nil {
		out, e := c.command("pg_ctl", "stop", "-D", c.data, "-m", "immediate", "-w").CombinedOutput()
		if e != nil {
			err = fmt.Errorf("pg_ctl stop: %v: %s", e, strings.TrimSpace(string(out)))
			c.proc.Process.Kill()
		}
		select {
		case <-c.exited:
		case <-time.After(30 * time.Second):
			c.proc.Process.Kill()
			<-c.exited
		}
	}
	if e := os.RemoveAll(c.Dir); e != nil && err == nil {
		err = e
	}
	return err
}
