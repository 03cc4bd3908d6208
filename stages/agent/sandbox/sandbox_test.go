package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// An npm-installed CLI (a symlink into a package, a `#!/usr/bin/env node`
// script, node under an nvm-like prefix) needs its package tree and its
// interpreter's whole prefix, and nothing around them.
func TestInstallationOfAnNpmCLI(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mk := func(path, content string, mode os.FileMode) {
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	cli := filepath.Join(dir, "prefix", "lib", "node_modules", "@acme", "cli", "bin", "cli.js")
	mk(cli, "#!/usr/bin/env node\nconsole.log(1)\n", 0o755)
	node := filepath.Join(dir, "nvm", "v20", "bin", "node")
	mk(node, "", 0o755)
	link := filepath.Join(dir, "prefix", "bin", "cli")
	os.MkdirAll(filepath.Dir(link), 0o755)
	if err := os.Symlink("../lib/node_modules/@acme/cli/bin/cli.js", link); err != nil {
		t.Fatal(err)
	}
	got := Installation(link, filepath.Join(dir, "empty")+string(filepath.ListSeparator)+filepath.Dir(node))
	want := []string{cli, filepath.Join(dir, "prefix", "lib", "node_modules"), node, filepath.Join(dir, "nvm", "v20")}
	if !slices.Equal(got, want) {
		t.Errorf("Installation = %q\nwant %q", got, want)
	}
	// A native binary outside any package: itself and its directory.
	bin := filepath.Join(dir, "opt", "tool", "claude")
	mk(bin, "\x7fELF", 0o755)
	if got := Installation(bin, ""); !slices.Equal(got, []string{bin, filepath.Dir(bin)}) {
		t.Errorf("Installation of a native binary = %q", got)
	}
}
