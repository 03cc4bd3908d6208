// Command the-loop-diagnose reads the-loop's event log, fingerprints its
// failures, diagnoses each new defect with an agent and files one GitHub
// issue per defect. See README.md.
package main

import "os"

func main() { os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
