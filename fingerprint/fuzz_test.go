package fingerprint

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzNormalize(f *testing.F) {
	for _, p := range volatilePairs {
		f.Add(p.a)
	}
	for _, p := range identityPairs {
		f.Add(p.a)
	}
	f.Add(pyTrace)
	f.Add(goPanicText)
	f.Add(javaTrace)
	f.Add("\"unterminated 'quote `x` =(=) ::: [[[ )))")
	f.Add("Traceback (most recent call last):\n  File \"")
	f.Add("panic: x\ngoroutine 1 [running]:\n\t")
	f.Fuzz(func(t *testing.T, s string) {
		a := Normalize(s)
		if b := Normalize(s); a != b {
			t.Fatalf("not deterministic: %q then %q", a, b)
		}
		if len(a) > maxTemplate {
			t.Fatalf("template of %d bytes exceeds the cap", len(a))
		}
		if utf8.ValidString(s) && !utf8.ValidString(a) {
			t.Fatalf("valid input gave an invalid UTF-8 template %q", a)
		}
		r := Compute(Input{Event: "e", Error: s, Fields: MapFields{"source": s}})
		if r.Fingerprint != Compute(Input{Event: "e", Error: s, Fields: MapFields{"source": s}}).Fingerprint {
			t.Fatal("Compute not deterministic")
		}
		if len(r.Aliases) == 0 || r.Aliases[0] != Legacy("e", s) {
			t.Fatal("legacy alias missing")
		}
	})
}

// volatileKinds generate a random value of each kind the normalizer must
// mask; every value is written as a word of its own.
var volatileKinds = []func(r *rand.Rand) string{
	func(r *rand.Rand) string { return fmt.Sprint(1000 + r.Intn(4_000_000)) }, // pid, count
	func(r *rand.Rand) string { // uuid
		return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", r.Uint32(), r.Intn(1<<16), r.Intn(1<<16), r.Intn(1<<16), r.Int63n(1<<48))
	},
	func(r *rand.Rand) string { // RFC 3339
		return fmt.Sprintf("%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", 2000+r.Intn(40), 1+r.Intn(12), 1+r.Intn(28), r.Intn(24), r.Intn(60), r.Intn(60), r.Intn(1000))
	},
	func(r *rand.Rand) string { // syslog-style
		months := []string{"Jan", "Feb", "Mar", "Jun", "Jul", "Dec"}
		days := []string{"Mon", "Tue", "Sun"}
		return fmt.Sprintf("%s %s %2d %02d:%02d:%02d %d", days[r.Intn(3)], months[r.Intn(6)], 1+r.Intn(28), r.Intn(24), r.Intn(60), r.Intn(60), 2000+r.Intn(30))
	},
	func(r *rand.Rand) string { // ipv4:port
		return fmt.Sprintf("%d.%d.%d.%d:%d", r.Intn(256), r.Intn(256), r.Intn(256), r.Intn(256), 1+r.Intn(65535))
	},
	func(r *rand.Rand) string { // ipv6
		return fmt.Sprintf("2001:db8:%x::%x", r.Intn(1<<16), 1+r.Intn(1<<16))
	},
	func(r *rand.Rand) string { // full sha
		return fmt.Sprintf("%016x%016x%08x", r.Uint64(), r.Uint64(), r.Uint32())
	},
	func(r *rand.Rand) string { // short sha with at least one digit
		return fmt.Sprintf("%d%06x", r.Intn(10), r.Intn(1<<24))
	},
	func(r *rand.Rand) string { // hex address
		return fmt.Sprintf("0x%x", 1+r.Int63n(1<<47))
	},
	func(r *rand.Rand) string { // duration
		units := []string{"ms", "s", "µs", "m", "h"}
		return fmt.Sprintf("%d.%d%s", r.Intn(1000), r.Intn(10), units[r.Intn(len(units))])
	},
	func(r *rand.Rand) string { // size with a unit word
		units := []string{"B", "KB", "MB", "GiB", "bytes"}
		return fmt.Sprintf("%d %s", r.Intn(100000), units[r.Intn(len(units))])
	},
	func(r *rand.Rand) string { // host name
		return fmt.Sprintf("node-%d.build%d.example.com", r.Intn(500), r.Intn(9))
	},
	func(r *rand.Rand) string { // temp dir
		return fmt.Sprintf("/tmp/run-%d/x%07d/work", r.Intn(1<<20), r.Intn(1<<20))
	},
	func(r *rand.Rand) string { // e-mail address
		names := []string{"alice", "bob.k", "carol+loop", "x_y"}
		return fmt.Sprintf("%s%d@%s.example.org", names[r.Intn(len(names))], r.Intn(100), names[r.Intn(2)][:3])
	},
	func(r *rand.Rand) string { // per-run branch named after an issue
		slugs := []string{"fix-flaky-login", "bump-deps", "docs-typo", "retry"}
		return fmt.Sprintf("the-loop/%d-%s-%06x", 1+r.Intn(9999), slugs[r.Intn(len(slugs))], r.Intn(1<<24))
	},
	func(r *rand.Rand) string { // short sha, sometimes of letters only
		b := make([]byte, 7)
		for i := range b {
			b[i] = "abcdef0123456789"[r.Intn(6+10*r.Intn(2))]
		}
		return string(b)
	},
	func(r *rand.Rand) string { // quoted model or version value
		models := []string{"gpt-5.1-codex", "claude-opus-4-1", "composer-1", "v1.4.2-rc1"}
		return "'" + models[r.Intn(len(models))] + "'"
	},
}

// FuzzVolatileSubstitution builds a message from fuzzed prose words with
// volatile values between them and checks that two random draws of those
// values give one fingerprint.
func FuzzVolatileSubstitution(f *testing.F) {
	f.Add("worker crashed while dispatching job", uint64(1), uint8(0))
	f.Add("lease lost: renew failed, giving up", uint64(7), uint8(3))
	f.Add("connect (retrying) to", uint64(99), uint8(4))
	f.Add("sent to peer then closed", uint64(5), uint8(10))
	f.Fuzz(func(t *testing.T, prose string, seed uint64, kind uint8) {
		words := proseWords(prose)
		if len(words) == 0 {
			return
		}
		gen := volatileKinds[int(kind)%len(volatileKinds)]
		build := func(r *rand.Rand) string {
			var b strings.Builder
			for i, w := range words {
				b.WriteString(w)
				b.WriteByte(' ')
				if i%2 == 0 {
					b.WriteString(gen(r))
					b.WriteByte(' ')
				}
			}
			return b.String()
		}
		a := build(rand.New(rand.NewSource(int64(seed))))
		b := build(rand.New(rand.NewSource(int64(seed) + 1)))
		if fa, fb := fp("e", a), fp("e", b); fa != fb {
			t.Fatalf("volatile values split a defect:\n  %q -> %q\n  %q -> %q", a, Normalize(a), b, Normalize(b))
		}
	})
}

// proseWords keeps fuzzed words made of letters and light punctuation,
// leaving out the keywords after which a number is identity by design
// (status, exit, HTTP ...) and tokens that form paths or key=value pairs.
func proseWords(s string) []string {
	var out []string
	for _, w := range strings.Fields(s) {
		ok := true
		for i := 0; i < len(w); i++ {
			c := w[i]
			if !isASCIILetter(c) && !strings.ContainsRune(".,:;()-", rune(c)) {
				ok = false
				break
			}
		}
		core := strings.ToLower(strings.Trim(w, ".,:;()-"))
		if !ok || core == "" || isCodeKey(core) || userWords.hasFold(core) || httpMethods[strings.ToUpper(core)] ||
			reasonPhrase[strings.Trim(w, ",.:;()")] || isMonthOrDay(core) || units[core] {
			continue
		}
		out = append(out, w)
		if len(out) == 12 {
			break
		}
	}
	return out
}

// FuzzNormalizeV3: no panic, the cap holds, valid UTF-8 stays valid, and —
// as FuzzVolatileSubstitution checks for v2 — two draws of volatile values
// between fuzzed prose words give one template; a digit run replaced by
// another of the same length, outside the values v3 keeps (assertion
// operands), gives one template too.
func FuzzNormalizeV3(f *testing.F) {
	for _, p := range volatilePairs {
		f.Add(p.a, uint64(1), uint8(0))
	}
	for _, g := range v3Same {
		f.Add(g.texts[len(g.texts)-1], uint64(2), uint8(3))
	}
	f.Add(pyTrace, uint64(3), uint8(5))
	f.Add(javaTrace, uint64(4), uint8(7))
	f.Add("0/5 nodes are available: 4 node(s) had untolerated taint {a: }, 1 Insufficient cpu. preemption: 0/5", uint64(5), uint8(1))
	f.Add("/x/y.sh: line 3: z: not found\nLINE 1: SELECT\n ^\n=== 1 failed in 2s ===", uint64(6), uint8(2))
	f.Fuzz(func(t *testing.T, s string, seed uint64, kind uint8) {
		a := NormalizeV3(s)
		if len(a) > maxTemplate {
			t.Fatalf("template of %d bytes exceeds the cap", len(a))
		}
		if utf8.ValidString(s) && !utf8.ValidString(a) {
			t.Fatalf("valid input gave an invalid UTF-8 template %q", a)
		}
		words := proseWordsV3(s)
		if len(words) == 0 {
			return
		}
		gen := volatileKinds[int(kind)%len(volatileKinds)]
		build := func(r *rand.Rand) string {
			var b strings.Builder
			for i, w := range words {
				b.WriteString(w)
				b.WriteByte(' ')
				if i%2 == 0 {
					b.WriteString(gen(r))
					b.WriteByte(' ')
				}
			}
			return b.String()
		}
		x := build(rand.New(rand.NewSource(int64(seed))))
		y := build(rand.New(rand.NewSource(int64(seed) + 1)))
		if tx, ty := NormalizeV3(x), NormalizeV3(y); tx != ty {
			t.Fatalf("volatile values split a defect:\n  %q -> %q\n  %q -> %q", x, tx, y, ty)
		}
		if z := substituteDigitRun(x, seed); z != x {
			if tx, tz := NormalizeV3(x), NormalizeV3(z); tx != tz {
				t.Fatalf("a digit run of the same length split a defect:\n  %q -> %q\n  %q -> %q", x, tx, z, tz)
			}
		}
	})
}

// proseWordsV3 is proseWords without the words after which v3 keeps a
// number (assertion and comparison words) or masks the next name (thread,
// namespace, host, resolver words).
func proseWordsV3(s string) []string {
	var out []string
	for _, w := range proseWords(s) {
		core := strings.ToLower(strings.Trim(w, ".,:;()-"))
		if assertWords.hasFold(core) || threadWords.hasFold(core) || namespaceWords.hasFold(core) ||
			hostWords.hasFold(core) || resolverWords.hasFold(core) || strings.HasPrefix(core, "assert") {
			continue
		}
		out = append(out, w)
	}
	return out
}

// substituteDigitRun replaces one run of digits (chosen by seed) with
// another of the same length.
func substituteDigitRun(s string, seed uint64) string {
	var runs [][2]int
	for i := 0; i < len(s); {
		if !isDigit(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		runs = append(runs, [2]int{i, j})
		i = j
	}
	if len(runs) == 0 {
		return s
	}
	r := runs[seed%uint64(len(runs))]
	b := []byte(s)
	for k := r[0]; k < r[1]; k++ {
		b[k] = '0' + (b[k]-'0'+1+byte(seed%9))%10
	}
	return string(b)
}
