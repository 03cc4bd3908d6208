package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every eventLog.format preset, end to end: a dry run over a log written
// the way that library writes it prints one would-be issue per defect,
// titled by the record's message and error, with the mapped fields in its
// records, and nothing for the lines that are not failures.
func TestEveryFormatPresetFilesItsFailuresInADryRun(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		format string
		titles []string // one per defect: what its title names
		fields []string // in the dossier's sample records
		absent []string // non-failure lines' words that must not be filed
	}{
		{"zap", []string{"charge failed: stripe: card_declined", "invariant violated: nil cart"},
			[]string{`"event":"charge failed"`, `"level":"error"`, `"logger":"payments"`, `"level":"fatal"`}, []string{"listening", "slow query", "charge succeeded"}},
		{"zerolog", []string{"reserve stock: pq: duplicate key", "cannot load config"},
			[]string{`"event":"reserve stock"`, `"level":"fatal"`}, []string{"cache miss", "starting"}},
		{"logrus", []string{"send failed: dial tcp"}, []string{`"event":"send failed"`, `"level":"error"`}, []string{"queue backlog", "send ok"}},
		{"slog", []string{"render template: template: "}, []string{`"event":"render template"`, `"level":"error"`}, []string{"retrying upstream", "http server up"}},
		{"pino", []string{"request errored: TypeError: Cannot read properties of undefined", "database unreachable, exiting"},
			[]string{`"event":"request errored"`, `"logger":"api"`, `"level":"fatal"`}, []string{"deprecated header", "incoming request"}},
		{"bunyan", []string{"invoice render failed: RangeError: Invalid time value"}, []string{`"logger":"billing"`, `"level":"error"`}, []string{"retrying webhook"}},
		{"docker", []string{"dispatch.failed: git push: remote rejected"}, []string{`"event":"dispatch.failed"`, `"source":"dispatch"`}, []string{"healthcheck", "comment_settled"}},
		{"otel", []string{"order push failed: requests.exceptions.HTTPError"}, []string{`"event":"order push failed"`, `"level":"error"`}, []string{"erp slow", "order sync"}},
	} {
		t.Run(c.format, func(t *testing.T) {
			t.Parallel()
			d := newDeployment(t, nil, deployOpts{harness: "builtin", eventLog: "  format: " + c.format + "\n"})
			b, err := os.ReadFile(filepath.Join("..", "testdata", "formats", c.format+".jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(d.log, b, 0o644); err != nil {
				t.Fatal(err)
			}
			res := d.run("run", "--dry-run")
			if res.code != 0 {
				t.Fatalf("exit %d\n%s", res.code, res.stderr)
			}
			if n := strings.Count(res.stdout, "--- would file on acme/widgets ---"); n != len(c.titles) {
				t.Fatalf("%d would-be issues, want %d\n%s", n, len(c.titles), res.stdout)
			}
			var titles []string
			for _, block := range strings.Split(res.stdout, "--- would file on acme/widgets ---\n")[1:] {
				titles = append(titles, strings.SplitN(block, "\n", 2)[0])
			}
			for _, want := range c.titles {
				found := false
				for _, title := range titles {
					found = found || strings.Contains(title, want)
				}
				if !found {
					t.Errorf("no title names %q: %q", want, titles)
				}
			}
			for _, f := range c.fields {
				if !strings.Contains(res.stdout, f) {
					t.Errorf("the dossier's records lack %s\n%s", f, res.stdout)
				}
			}
			for _, a := range c.absent {
				if strings.Contains(res.stdout, a) {
					t.Errorf("a line that is no failure was filed: %q\n%s", a, res.stdout)
				}
			}
		})
	}
}

// A format the tool does not know is a config error naming the key.
func TestAnUnknownFormatIsAConfigError(t *testing.T) {
	t.Parallel()
	d := newDeployment(t, nil, deployOpts{harness: "builtin", eventLog: "  format: log4j\n"})
	res := d.run("run", "--dry-run")
	if res.code != 2 || !strings.Contains(res.stderr, "eventLog.format") || !strings.Contains(res.stderr, "pino") {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	d = newDeployment(t, nil, deployOpts{harness: "builtin", eventLog: "  format: zap\n  mapping:\n    levl: severity\n"})
	res = d.run("run", "--dry-run")
	if res.code != 2 || !strings.Contains(res.stderr, "eventLog.mapping.levl") || !strings.Contains(res.stderr, "level") {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
}
