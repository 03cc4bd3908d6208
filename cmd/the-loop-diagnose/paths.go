package main

import "path/filepath"

func dirOf(p string) string  { return filepath.Dir(p) }
func baseOf(p string) string { return filepath.Base(p) }
