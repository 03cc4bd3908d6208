package agent

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/the-loop/the-loop-diagnose/redact"
)

// The fake's planted secrets (fakes/agent: LeakedToken, LeakedKey).
const (
	leakedToken   = "ghp_Zq8VvX2mN4bR7tY1uK3wE6sA9dF0gH5jL2pQ"
	leakedKeyBody = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAABlwAAAAdzc2gtcn"
)

func leaks(s string) []string {
	var out []string
	for _, secret := range []string{leakedToken, leakedKeyBody, "b3BlbnNzaC1rZXkt"} {
		if strings.Contains(s, secret) {
			out = append(out, secret)
		}
	}
	return out
}

func TestAgentAnswerIsScrubbedWhereItEntersTheTool(t *testing.T) {
	red := redact.New(redact.Options{})
	for _, harness := range []string{"claude", "command"} {
		t.Run(harness, func(t *testing.T) {
			useFake(t, "compromised")
			cfg := Config{Harness: harness, Binary: fakeBinary, Scrub: red.Scrub}
			if harness == "command" {
				cfg.Command = []string{fakeBinary, "-p", "{prompt}"}
			}
			f := runAgent(t, cfg, testDossier("fp", "worker 7 crashed\n"))[0]
			if f.Answer == nil {
				t.Fatalf("no answer: %s", f.Failure)
			}
			all := strings.Join(append([]string{f.Answer.Title, f.Answer.Summary, f.Answer.RootCause, f.Answer.SuggestedFix}, f.Answer.Evidence...), "\n")
			if leaks := leaks(all); leaks != nil {
				t.Errorf("the answer kept %q unscrubbed", leaks)
			}
			if !strings.Contains(all, "-----BEGIN OPENSSH PRIVATE KEY-----") {
				t.Error("the key's armour should stay so a reader knows what was masked")
			}
		})
	}
}

func TestAgentStderrTailIsScrubbedEvenFromInsideAKey(t *testing.T) {
	useFake(t, "leak-exit")
	red := redact.New(redact.Options{})
	f := runAgent(t, Config{Harness: "claude", Binary: fakeBinary, Scrub: red.Scrub}, testDossier("fp", "d"))[0]
	if f.Failure == "" || !strings.Contains(f.Failure, "agent exited with exit status 2") {
		t.Fatalf("failure = %q", f.Failure)
	}
	if leaks := leaks(f.Failure); leaks != nil {
		t.Errorf("failure %q keeps %q", f.Failure, leaks)
	}
	if !strings.Contains(f.Failure, keyMask) {
		t.Errorf("failure %q does not show that a key was masked", f.Failure)
	}
}

// Whatever the chunking of the writes and wherever the tail's cut falls
// (before, inside or after the block, or inside its BEGIN line), no line of
// key material survives into the excerpt.
func TestAgentTailExcerptNeverShowsKeyMaterial(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 34))
	for i := 0; i < 3000; i++ {
		kinds := []string{"RSA PRIVATE KEY", "OPENSSH PRIVATE KEY", "EC PRIVATE KEY", "PRIVATE KEY"}
		kind := kinds[r.IntN(len(kinds))]
		nl := []string{"\n", "\r\n"}[r.IntN(2)]
		var body strings.Builder
		for l := 0; l < 1+r.IntN(40); l++ {
			fmt.Fprintf(&body, "KEYMATERIAL%04d%s%s", l, strings.Repeat("Q", r.IntN(60)), nl)
		}
		before := strings.Repeat(fmt.Sprintf("log line %d of host-%d%s", r.IntN(1000), r.IntN(99), nl), r.IntN(80))
		after := strings.Repeat("after the key"+nl, r.IntN(20))
		text := before + "-----BEGIN " + kind + "-----" + nl + body.String() + "-----END " + kind + "-----" + nl + after
		b := &tailBuffer{limit: 64 + r.IntN(4096)}
		for p := 0; p < len(text); {
			n := min(len(text)-p, 1+r.IntN(300))
			b.Write([]byte(text[p : p+n]))
			p += n
		}
		got := b.excerpt(20 + r.IntN(600))
		if strings.Contains(got, "KEYMATERIAL") {
			t.Fatalf("case %d: excerpt shows key material:\n%s", i, got)
		}
	}
}

func TestAgentTailExcerptKeepsOrdinaryStderr(t *testing.T) {
	b := &tailBuffer{limit: 4096}
	b.Write([]byte(strings.Repeat("x", 5000) + "\nError: quota exceeded for org acme\n"))
	if got := b.excerpt(40); got != "…xxxxxx quota exceeded for org acme " && !strings.HasSuffix(got, "quota exceeded for org acme ") {
		t.Errorf("excerpt = %q", got)
	}
	b = &tailBuffer{limit: 4096}
	b.Write([]byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\nthen: boom\n"))
	if got := b.excerpt(500); !strings.Contains(got, "then: boom") {
		t.Errorf("excerpt lost the text after a closed block: %q", got)
	}
}

// The failure reason quotes the last few hundred characters of stderr, cut
// after scrubbing: wherever the cut falls, a secret whose key stood before
// it is still masked.
func TestAgentStderrIsScrubbedBeforeItIsCut(t *testing.T) {
	secret := "Hunter2-" + strings.Repeat("q", 12)
	for pad := 0; pad < 40; pad++ {
		b := &tailBuffer{limit: stderrTail}
		// The cut lands around "password=": before the fix, the quoted
		// excerpt started with the bare value, and nothing named it.
		tailLen := stderrQuoted - len(secret) + pad - 20
		b.Write([]byte(strings.Repeat("noise ", 200) + "\nconnect failed: db password=" + secret + " " + strings.Repeat("y", max(tailLen, 0)) + "\n"))
		got := stderrSuffix(b, redact.New(redact.Options{}).Scrub)
		if strings.Contains(got, secret[:8]) {
			t.Fatalf("pad %d: the cut stopped the scrubber: %q", pad, got)
		}
		if n := len([]rune(got)); n > stderrQuoted+8 {
			t.Fatalf("pad %d: quoted %d characters", pad, n)
		}
	}
}

func FuzzAgentTailExcerptMasksKeys(f *testing.F) {
	f.Add("log line\n", "MIIEpAIBAAKCAQEA\nabc\n", "after\n", 100, 7, 50)
	f.Add("", "x", "", 1, 1, 1)
	f.Fuzz(func(t *testing.T, before, body, after string, limit, chunk, n int) {
		limit, chunk, n = 1+abs(limit)%5000, 1+abs(chunk)%512, 1+abs(n)%700
		if strings.Contains(body, "-----") || strings.Contains(before+after, "-----") {
			return
		}
		lines := strings.Split(body, "\n")
		for i := range lines {
			lines[i] = "KEYMATERIAL" + lines[i]
		}
		text := before + "-----BEGIN RSA PRIVATE KEY-----\n" + strings.Join(lines, "\n") + "\n-----END RSA PRIVATE KEY-----\n" + after
		b := &tailBuffer{limit: limit}
		for p := 0; p < len(text); p += chunk {
			b.Write([]byte(text[p:min(len(text), p+chunk)]))
		}
		if got := b.excerpt(n); strings.Contains(got, "KEYMATERIAL") {
			t.Fatalf("excerpt shows key material: %q", got)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
