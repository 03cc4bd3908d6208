package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/the-loop/the-loop-diagnose/fakes/eventlog"
)

func TestWritesTheLogTruthAndCatalogue(t *testing.T) {
	dir := t.TempDir()
	logPath, truthPath, catPath := filepath.Join(dir, "events.jsonl"), filepath.Join(dir, "truth.tsv"), filepath.Join(dir, "catalog.jsonl")
	var stdout, stderr bytes.Buffer
	err := run([]string{"--lines", "5000", "--seed", "3", "--failure-rate", "0.02", "--defects", "6",
		"--transients", "1", "--environment", "1", "--out", logPath, "--truth", truthPath, "--catalog", catPath}, &stdout, &stderr)
	if err != nil {
		t.Fatal(err, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("--out given, yet %d bytes went to stdout", stdout.Len())
	}
	if !strings.Contains(stderr.String(), "5000 lines, 100 failures from 8 defects") {
		t.Errorf("summary: %q", stderr.String())
	}

	// The CLI writes exactly what the package generates for the same options.
	var direct bytes.Buffer
	var truth []string
	if _, err := eventlog.GenerateWithTruth(&direct, func(line int, id string) {
		truth = append(truth, strconv.Itoa(line)+"\t"+id)
	}, eventlog.Options{Lines: 5000, Seed: 3, FailureRate: 0.02, Defects: 6, Transients: 1, Environment: 1}); err != nil {
		t.Fatal(err)
	}
	log, _ := os.ReadFile(logPath)
	if !bytes.Equal(log, direct.Bytes()) {
		t.Error("the CLI's log differs from Generate's for the same options")
	}
	gotTruth, _ := os.ReadFile(truthPath)
	if string(gotTruth) != strings.Join(truth, "\n")+"\n" {
		t.Errorf("truth file is not line<TAB>defect per failure:\n%.300s", gotTruth)
	}

	f, _ := os.Open(catPath)
	defer f.Close()
	sc := bufio.NewScanner(f)
	var kinds []string
	for sc.Scan() {
		var d eventlog.Defect
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, d.Kind)
	}
	if strings.Join(kinds, ",") != "bug,bug,bug,bug,bug,bug,transient,environment" {
		t.Errorf("catalogue kinds: %v", kinds)
	}
}

func TestStdoutAndZeroMeansNone(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run([]string{"--lines", "3000", "--failure-rate", "0", "--corrupt-rate", "0", "-q"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if stderr.Len() != 0 {
		t.Errorf("--quiet still printed %q", stderr.String())
	}
	lines := bytes.Split(bytes.TrimSuffix(stdout.Bytes(), []byte("\n")), []byte("\n"))
	if len(lines) != 3000 {
		t.Fatalf("%d lines on stdout, want 3000", len(lines))
	}
	for i, l := range lines {
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("line %d corrupt with --corrupt-rate 0: %q", i+1, l)
		}
		if m["level"] == "error" {
			t.Fatalf("line %d is a failure with --failure-rate 0: %q", i+1, l)
		}
	}
}

func TestBadFlagsAreErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--lines", "-5"},
		{"--lines", "ten"},
		{"--start", "yesterday"},
		{"--failure-rate", "0.9", "--corrupt-rate", "0.2"},
		{"extra"},
		{"--out", "/nonexistent-dir/events.jsonl"},
	} {
		var stdout, stderr bytes.Buffer
		if err := run(args, &stdout, &stderr); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
