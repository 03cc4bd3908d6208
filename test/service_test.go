package test

import (
	"os"
	"strings"
	"testing"
)

// A typo in a rule (eror: for error:) stops the binary with exit 2 naming
// the file, line and key and the key meant; before, the rule loaded with no
// regex and settled real defects as environment failures.
func TestConfigTypoExitsTwo(t *testing.T) {
	d := newDeployment(t, nil, deployOpts{extra: "  environmentRules:\n    - name: vpn\n      eror: \"dial tcp\"\n      reason: vpn down\n"})
	res := d.run("run", "--dry-run")
	if res.code != 2 || !strings.Contains(res.stderr, d.config+":") ||
		!strings.Contains(res.stderr, "selfDiagnosis.environmentRules[0].eror: unknown key (did you mean error?)") {
		t.Fatalf("exit %d, want 2 and the key named\n%s", res.code, res.stderr)
	}
	// A misspelt section, appended after the good one.
	b, err := os.ReadFile(d.config)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(b), "selfDiagnosis:", "selfDiagnosys:", 1)
	if err := os.WriteFile(d.config, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	res = d.run("run", "--dry-run")
	if res.code != 2 || !strings.Contains(res.stderr, "selfDiagnosys: unknown section (did you mean selfDiagnosis?)") {
		t.Fatalf("exit %d, want 2 and the section named\n%s", res.code, res.stderr)
	}
	// Not valid YAML is a config error too.
	if err := os.WriteFile(d.config, []byte("selfDiagnosis: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if res = d.run("run", "--dry-run"); res.code != 2 {
		t.Fatalf("bad YAML: exit %d, want 2\n%s", res.code, res.stderr)
	}
}
