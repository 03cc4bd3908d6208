package evidence

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// evidenceDossier renders a dossier shaped like the dossier stage's: a
// header, the normalized error and JSON records, with the names a real
// deployment varies (users, hosts, paths, repositories).
func evidenceDossier(r *rand.Rand) (dossier, errText string) {
	users := []string{"runner", "ci-bot", "alice", "build_42", "svc-loop"}
	hosts := []string{"db.internal", "10.0.3.7", "pg-primary.prod.example.net", "localhost"}
	dirs := []string{"/var/lib/the-loop/cache", `C:\Users\bob\AppData\Local\loop`, "/home/" + users[r.IntN(len(users))] + "/work dir/src", "/tmp/x"}
	errs := []string{
		fmt.Sprintf("write %s/blob-%d: no space left on device", dirs[r.IntN(len(dirs))], r.IntN(9999)),
		fmt.Sprintf("dial tcp %s:5432: connect: connection refused", hosts[r.IntN(len(hosts))]),
		fmt.Sprintf(`open "%s/config.yaml": permission denied`, dirs[r.IntN(len(dirs))]),
		fmt.Sprintf("exec: \"claude\": executable file not found in $PATH (user %s)", users[r.IntN(len(users))]),
		fmt.Sprintf("git push origin feature/%s-%d: rejected (non-fast-forward)\ttab and\nnewline", users[r.IntN(len(users))], r.IntN(99)),
	}
	errText = errs[r.IntN(len(errs))]
	rec, _ := json.Marshal(map[string]any{"error": errText, "event": "dispatch.failed", "level": "error", "line": r.IntN(5000), "source": "webhook"})
	dossier = fmt.Sprintf("- Fingerprint: `v2:%016x`\n- Event: `dispatch.failed`\n\nNormalized error:\n\n```\n%s\n```\n\nRecords (allow-listed fields, newest first):\n\n```\n%s\n```\n", r.Uint64(), "<*> failed", rec)
	return dossier, errText
}

// evidenceRewrap is what an agent does to a quote without changing it:
// other line breaks, other spaces (NBSP, U+3000, tabs), other case, a
// zero-width character.
func evidenceRewrap(r *rand.Rand, s string) string {
	spaces := []string{" ", "\n", "\u00a0", "\u3000", "\t", "  ", "\r\n"}
	words := strings.Fields(s)
	var b strings.Builder
	for i, w := range words {
		if i > 0 {
			b.WriteString(spaces[r.IntN(len(spaces))])
		}
		switch r.IntN(4) {
		case 0:
			w = strings.ToUpper(w)
		case 1:
			if len(w) > 2 {
				w = w[:1] + "\u200b" + w[1:]
			}
		}
		b.WriteString(w)
	}
	return b.String()
}

func TestVerifyEvidence(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for i := 0; i < 500; i++ {
		dossier, errText := evidenceDossier(r)
		runes := []rune(errText)
		start := r.IntN(len(runes) - MinQuote)
		quote := strings.TrimSpace(string(runes[start : start+MinQuote+r.IntN(len(runes)-start-MinQuote+1)]))
		if utf8.RuneCountInString(normalize(quote)) < MinQuote {
			continue
		}
		quote = evidenceRewrap(r, quote)
		pass := [][]string{
			{"`" + quote + "`"},
			{"line 12: `" + quote + "` shows the disk is full"},
			{"``" + quote + "``"},
			{"`" + quote + "` again", "`" + quote + "`"},
		}
		if !strings.ContainsAny(quote, "\"`") { // a quote holding quotes is not one quote
			pass = append(pass, []string{`the error says "` + quote + `"`}, []string{"“" + quote + "”, so it is the host"}, []string{quote})
		}
		for _, items := range pass {
			if _, why := Verify(items, dossier); why != "" {
				t.Fatalf("verbatim quote %q refused (%s) in\n%s", items, why, dossier)
			}
		}
		fabricated := [][]string{
			nil,
			{},
			{"`ENOSPC: no space left on device while writing /var/lib/runner/cache-fabricated`"},
			{"`" + quote + "`", "`the operator's VPN dropped the connection`"},
			{"`" + quote + "` and `" + quote + " plus invented words`"},
			{"`full`"},              // too short to count
			{"`" + quote[:1] + "`"}, // too short
			{"I checked and it is the environment"},
			{"   "},
		}
		for _, items := range fabricated {
			if q, why := Verify(items, dossier); why == "" {
				t.Fatalf("unverifiable evidence %q accepted (quotes %q) for\n%s", items, q, dossier)
			}
		}
	}
}

func TestVerifyEvidenceReadsTheRecordsJSONBothWays(t *testing.T) {
	rec, _ := json.Marshal(map[string]string{"error": `open "/srv/app/config.yaml": permission denied` + "\n\tat loader.go:12"})
	dossier := "Records:\n\n```\n" + string(rec) + "\n```\n"
	for _, q := range []string{`open "/srv/app/config.yaml": permission denied`, `open \"/srv/app/config.yaml\": permission denied`, "permission denied at loader.go:12"} {
		if _, why := Verify([]string{"`" + q + "`"}, dossier); why != "" {
			t.Errorf("%q: %s", q, why)
		}
	}
}

func FuzzVerifyEvidence(f *testing.F) {
	f.Add("write /var/lib/x: no space left on device", "`no space left on device`", 3)
	f.Add("open \\\"/a b\\\": permission denied", "\"permission denied\"", 0)
	f.Add("日本語のエラー: ディスクがいっぱいです。", "“ディスクがいっぱいです。日本語の”", 1)
	f.Add("", "``` ``` `", 5)
	f.Fuzz(func(t *testing.T, dossier, item string, start int) {
		quotes, why := Verify([]string{item}, dossier)
		hay := normalize(dossier) + "\x00" + normalize(unescapeJSON(dossier))
		if why == "" {
			long := false
			for _, q := range quotes {
				n := normalize(q)
				if !strings.Contains(hay, n) {
					t.Fatalf("verified quote %q is not in the dossier %q", q, dossier)
				}
				long = long || utf8.RuneCountInString(n) >= MinQuote
			}
			if !long {
				t.Fatalf("verified %q with no quote of %d characters", item, MinQuote)
			}
		}
		// Any stretch of the dossier without quoting marks, long enough,
		// quoted bare, verifies.
		runes := []rune(strings.ToValidUTF8(dossier, "\uFFFD"))
		if len(runes) == 0 {
			return
		}
		if start < 0 {
			start = -start
		}
		s := start % len(runes)
		sub := string(runes[s:min(len(runes), s+40)])
		if strings.ContainsAny(sub, "`\"“”") || utf8.RuneCountInString(normalize(sub)) < MinQuote {
			return
		}
		if _, why := Verify([]string{sub}, dossier); why != "" {
			t.Fatalf("a stretch %q of the dossier %q did not verify: %s", sub, dossier, why)
		}
	})
}

// BenchmarkVerifyEvidence checks five quotes against a dossier at the
// size cap's order (256 KiB of JSON records).
func BenchmarkVerifyEvidence(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	var d strings.Builder
	for d.Len() < 256<<10 {
		one, _ := evidenceDossier(r)
		d.WriteString(one)
	}
	dossier := d.String()
	_, errText := evidenceDossier(r)
	dossier += errText
	items := []string{"`" + errText[:20] + "`", "`" + errText[len(errText)-15:] + "`", errText, "`" + errText[5:25] + "`", "“" + errText[2:18] + "”"}
	b.SetBytes(int64(len(dossier)))
	for b.Loop() {
		if _, why := Verify(items, dossier); why != "" {
			b.Fatal(why)
		}
	}
}
