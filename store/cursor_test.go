package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func cursorAfter(t *testing.T, path string, offset, line int64) Cursor {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pos, err := Resume(f, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := pos.Cursor
	c.Offset, c.Line = offset, line
	return c
}

func resumeAt(t *testing.T, path string, prev *Cursor) Position {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pos, err := Resume(f, path, prev)
	if err != nil {
		t.Fatal(err)
	}
	return pos
}

func TestResumeFindsTheRotatedFileByIdentity(t *testing.T) {
	for _, rotatedName := range []string{"events.jsonl.1", "events-2026-11-28.jsonl"} {
		dir := t.TempDir()
		path := filepath.Join(dir, "events.jsonl")
		os.WriteFile(path, []byte("one\ntwo\n"), 0o644)
		cur := cursorAfter(t, path, 8, 2)
		// More lines after the last scan, then rotation: rename, new file.
		f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString("three\n")
		f.Close()
		if err := os.Rename(path, filepath.Join(dir, rotatedName)); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(path, []byte("four\n"), 0o644)

		pos := resumeAt(t, path, &cur)
		if pos.Warning != "" || pos.Offset != 0 || pos.Rotated == nil {
			t.Fatalf("%s: %+v, want the rotated file found and the new one read from 0", rotatedName, pos)
		}
		r := pos.Rotated
		if filepath.Base(r.Path) != rotatedName || r.Offset != 8 || r.Line != 2 || r.Size != 14 {
			t.Fatalf("%s: rotated = %+v", rotatedName, r)
		}
		if r.Cursor.Inode != cur.Inode || r.Cursor.Path != path {
			t.Fatalf("the rotated file's cursor must keep its identity under the live path: %+v", r.Cursor)
		}
		// A cursor left in the rotated file (a scan stopped before the new
		// one) finds it again next time.
		again := r.Cursor
		again.Offset = 14
		if pos := resumeAt(t, path, &again); pos.Rotated == nil || pos.Rotated.Offset != 14 {
			t.Fatalf("resuming inside the rotated file: %+v", pos)
		}
	}
}

func TestResumeWarnsWhenTheRotatedFileIsGone(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "events.jsonl")
	os.WriteFile(path, []byte("one\ntwo\n"), 0o644)
	cur := cursorAfter(t, path, 8, 2)
	os.Rename(path, filepath.Join(dir, "events.jsonl.1"))
	os.WriteFile(path, []byte("three\n"), 0o644)
	os.Remove(filepath.Join(dir, "events.jsonl.1")) // rotated and compressed away
	pos := resumeAt(t, path, &cur)
	if pos.Rotated != nil || pos.Offset != 0 || !strings.Contains(pos.Warning, "replaced") {
		t.Fatalf("%+v", pos)
	}
}

func TestResumeIgnoresARotatedFileThatShrankOrChanged(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "events.jsonl")
	old := filepath.Join(dir, "events.jsonl.1")
	os.WriteFile(path, []byte("one\ntwo\n"), 0o644)
	cur := cursorAfter(t, path, 8, 2)
	os.Rename(path, old)
	os.WriteFile(path, []byte("three\n"), 0o644)

	os.Truncate(old, 4)
	if pos := resumeAt(t, path, &cur); pos.Rotated != nil || !strings.Contains(pos.Warning, "shrank") {
		t.Fatalf("shrunk rotated file: %+v", pos)
	}
	// Same inode, other first bytes: not the file the cursor was in.
	os.WriteFile(old, []byte("ONE\nTWO\n"), 0o644)
	if pos := resumeAt(t, path, &cur); pos.Rotated != nil || !strings.Contains(pos.Warning, "replaced") {
		t.Fatalf("rewritten rotated file: %+v", pos)
	}
}

// copytruncate: the log is copied to a sibling and truncated in place (same
// inode). Whether or not it has grown past the old cursor again, the copy
// is finished from the cursor, then the live file is read from 0.
func TestResumeFinishesACopytruncateCopy(t *testing.T) {
	for name, regrown := range map[string]string{
		"not regrown":       "three\n",
		"regrown past it":   "three\nfour\nfive\n",
		"regrown, new head": "THREE\nfo\n",
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, "events.jsonl")
		os.WriteFile(path, []byte("one\ntwo\n"), 0o644)
		cur := cursorAfter(t, path, 8, 2)
		f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString("2.5\n")
		f.Close()
		b, _ := os.ReadFile(path)
		os.WriteFile(filepath.Join(dir, "events.jsonl-20261202"), b, 0o644)
		os.WriteFile(filepath.Join(dir, "events.jsonl.2"), []byte("older\nrotation\n"), 0o644) // another head: not it
		os.Truncate(path, 0)
		f, _ = os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString(regrown)
		f.Close()

		pos := resumeAt(t, path, &cur)
		if pos.Warning != "" || pos.Offset != 0 || pos.Rotated == nil {
			t.Fatalf("%s: %+v, want the copy finished and the log read from 0", name, pos)
		}
		if r := pos.Rotated; filepath.Base(r.Path) != "events.jsonl-20261202" || r.Offset != 8 || r.Line != 2 || r.Size != 12 {
			t.Fatalf("%s: rotated = %+v", name, r)
		}
		if pos.Cursor.Inode != cur.Inode {
			t.Fatalf("%s: the live file's cursor lost its inode: %+v", name, pos.Cursor)
		}
	}
}

// Rewritten in place with no copy of the old bytes anywhere (or only a
// sibling with other first bytes, or one too short to hold the cursor): read
// from 0, and the warning names the file and says lines may have been lost.
func TestResumeWarnsWhenNoCopyHoldsTheOldBytes(t *testing.T) {
	for name, sibling := range map[string]string{
		"no sibling":        "",
		"other first bytes": "ONE\nTWO\n2.5\n",
		"too short a copy":  "one\n",
		"not named like it": "one\ntwo\n2.5\n",
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, "events.jsonl")
		os.WriteFile(path, []byte("one\ntwo\n"), 0o644)
		cur := cursorAfter(t, path, 8, 2)
		switch name {
		case "not named like it":
			os.WriteFile(filepath.Join(dir, "backup.jsonl"), []byte(sibling), 0o644)
		case "no sibling":
		default:
			os.WriteFile(filepath.Join(dir, "events.jsonl.1"), []byte(sibling), 0o644)
		}
		os.Truncate(path, 0)
		f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString("three\nfour\nfive\n")
		f.Close()

		pos := resumeAt(t, path, &cur)
		if pos.Rotated != nil || pos.Offset != 0 {
			t.Fatalf("%s: %+v, want the live file from 0 and nothing else", name, pos)
		}
		for _, want := range []string{path, "replaced in place", "may have been missed"} {
			if !strings.Contains(pos.Warning, want) {
				t.Fatalf("%s: warning %q lacks %q", name, pos.Warning, want)
			}
		}
	}
}
