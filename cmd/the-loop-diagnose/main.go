// Command the-loop-diagnose reads the-loop's event log, fingerprints its
// failures, diagnoses each new defect with an agent and files one GitHub
// issue per defect. See README.md.
package main

import (
	"os"

	"github.com/the-loop/the-loop-diagnose/stages/agent/supervise"
)

func main() {
	// First: this binary, re-executed, is also the agent's supervisor and
	// its confining helper; Main takes those roles and exits.
	supervise.Main(os.Args)
	os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
