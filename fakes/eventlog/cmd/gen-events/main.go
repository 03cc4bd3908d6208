// Command gen-events writes a deterministic, realistic the-loop event log
// (events.jsonl) for tests and benchmarks, optionally with its ground truth.
//
//	gen-events --lines 1000000 --seed 7 --out events.jsonl --truth truth.tsv
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/the-loop/the-loop-diagnose/fakes/eventlog"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, pflag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "gen-events:", err)
		}
		os.Exit(2)
	}
}

func run(args []string, stdout, stderr io.Writer) (err error) {
	fs := pflag.NewFlagSet("gen-events", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	var o eventlog.Options
	var out, truthPath, catalogPath, start string
	var quiet, deployment bool
	fs.IntVar(&o.Lines, "lines", 1000, "total lines to write, corrupt ones included")
	fs.Int64Var(&o.Seed, "seed", 1, "random seed: the same flags give byte-identical output")
	fs.Float64Var(&o.FailureRate, "failure-rate", eventlog.DefaultFailureRate, "fraction of lines that are failures (negative: none)")
	fs.IntVar(&o.Defects, "defects", eventlog.DefaultDefects, "distinct bugs (negative: none)")
	fs.Float64Var(&o.CorruptRate, "corrupt-rate", eventlog.DefaultCorruptRate, "fraction of corrupt lines (negative: none)")
	fs.IntVar(&o.Transients, "transients", 0, "defects that heal: a retried failure later succeeds")
	fs.IntVar(&o.Environment, "environment", 0, "operator-environment defects (missing executable, 401, EACCES, ENOSPC, DNS)")
	fs.StringVar(&start, "start", eventlog.DefaultStart.Format(time.RFC3339), "timestamp of the first line (RFC 3339)")
	fs.StringVar(&out, "out", "", "write the log to this file instead of stdout")
	fs.StringVar(&truthPath, "truth", "", "write line<TAB>defect for every failure line to this file")
	fs.StringVar(&catalogPath, "catalog", "", "write the defect catalogue as JSON lines to this file")
	fs.BoolVarP(&quiet, "quiet", "q", false, "do not print a summary to stderr")
	fs.BoolVar(&deployment, "deployment", false, "a log shaped like a real deployment's (varied identifiers, incidents ending in give-ups); uses --lines, --seed, --failure-rate, --defects, --start")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if o.Lines < 0 {
		return fmt.Errorf("--lines %d: must be >= 0", o.Lines)
	}
	if o.Start, err = time.Parse(time.RFC3339, start); err != nil {
		return fmt.Errorf("--start: %w", err)
	}
	// The flags show the defaults explicitly, so 0 here means "none", not
	// "default" as it does in Options.
	if fs.Changed("failure-rate") && o.FailureRate == 0 {
		o.FailureRate = -1
	}
	if fs.Changed("corrupt-rate") && o.CorruptRate == 0 {
		o.CorruptRate = -1
	}
	if fs.Changed("defects") && o.Defects == 0 {
		o.Defects = -1
	}

	logW := stdout
	if out != "" {
		f, err := os.Create(out)
		if err != nil {
			return err
		}
		defer closeInto(f, &err)
		logW = f
	}

	var truth func(int, string)
	if truthPath != "" {
		f, err := os.Create(truthPath)
		if err != nil {
			return err
		}
		defer closeInto(f, &err)
		tw := bufio.NewWriter(f)
		defer func() {
			if ferr := tw.Flush(); err == nil {
				err = ferr
			}
		}()
		var buf []byte
		truth = func(line int, id string) {
			buf = strconv.AppendInt(buf[:0], int64(line), 10)
			buf = append(buf, '\t')
			buf = append(buf, id...)
			buf = append(buf, '\n')
			tw.Write(buf) //nolint:errcheck // bufio keeps the error for Flush
		}
	}

	if catalogPath != "" {
		if err := writeCatalog(catalogPath, o); err != nil {
			return err
		}
	}

	began := time.Now()
	if deployment {
		d := eventlog.DeploymentOptions{Lines: o.Lines, Seed: o.Seed, Start: o.Start}
		if fs.Changed("failure-rate") {
			d.FailureRate = o.FailureRate
		}
		if fs.Changed("defects") {
			d.Defects = o.Defects
		}
		ds, err := eventlog.GenerateDeployment(logW, truth, d)
		if err == nil && !quiet {
			fmt.Fprintf(stderr, "gen-events: %d lines, %d failures from %d defects in %d incidents (%d give-ups, %d orphans, %d interleaved)\n",
				ds.Lines, ds.Failures, len(ds.DefectsUsed), ds.Incidents, ds.GiveUps, ds.Orphans, ds.Interleaved)
		}
		return err
	}
	stats, err := eventlog.GenerateWithTruth(logW, truth, o)
	if err != nil {
		return err
	}
	if !quiet {
		elapsed := time.Since(began)
		fmt.Fprintf(stderr, "gen-events: %d lines, %d failures from %d defects, %d corrupt, in %s (%.0f lines/s)\n",
			stats.Lines, stats.Failures, len(stats.DefectsUsed), stats.Corrupt,
			elapsed.Round(time.Millisecond), float64(stats.Lines)/elapsed.Seconds())
	}
	return nil
}

func writeCatalog(path string, o eventlog.Options) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer closeInto(f, &err)
	enc := json.NewEncoder(f)
	enc.SetEscapeHTML(false)
	for _, d := range eventlog.Catalog(o) {
		if err := enc.Encode(d); err != nil {
			return err
		}
	}
	return nil
}

// closeInto closes f and keeps its error if nothing failed before: a failed
// close can mean the data never reached the disk.
func closeInto(f *os.File, err *error) {
	if cerr := f.Close(); *err == nil {
		*err = cerr
	}
}
