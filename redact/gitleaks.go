package redact

import (
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	ahocorasick "github.com/BobuSumisu/aho-corasick"
	"github.com/spf13/viper"
	"github.com/zricethezav/gitleaks/v8/config"
)

// Provider credentials come from the community's catalogue: gitleaks'
// default rule set (its rules, keywords, entropy thresholds and
// allow-lists), loaded from the gitleaks module's embedded config. Its
// detect package is not used: it pulls archive formats, terminal styling
// and template libraries (≈60 modules) into a redactor that needs none of
// them, and reports a secret's text, not where it stands. The loop below
// is detect's per-rule loop (keyword prefilter, regex, secret group,
// entropy, global and rule allow-lists) returning byte spans instead.

type glRule struct {
	config.Rule
	wholeText bool // the pattern can span lines: run on the whole text, not per line
	// value is set for gitleaks' semi-generic rules, "a name holding the
	// keyword, up to 20 more name characters, an assignment operator, a
	// value": the rule's pattern from the operator on, anchored. The name
	// part is checked in code (assignmentAfter) and only this part runs,
	// once, at the operator: the whole pattern, unanchored, cost 100 µs per
	// keyword in Go's regexp (its counted repetitions make a large program).
	value      *regexp.Regexp
	valueGroup int // the secret's group in value
	// caseName is the name part, kept for the few rules whose keyword is
	// case-sensitive ((?-i:ETSY|[Ee]tsy)): the code's name check reads the
	// lower-cased text, so SetSysctl would hold "etsy".
	caseName *regexp.Regexp
	minValue int // the shortest value run its pattern takes
	// wordStart: the pattern opens with \b and one of its keywords
	// (\b(ey…): a keyword inside a word (key, they) cannot start a match.
	wordStart bool
}

// semiGenericName is what gitleaks' semi-generic rules put between the
// keyword and the operator.
const semiGenericName = `(?:[ \t\w.-]{0,20})[\s'"]{0,3}`

const semiGenericOperator = `(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)`

type glCatalogue struct {
	rules  []glRule
	noKey  []int               // rules without keywords: run on every text
	byKey  map[string][]int    // keyword → rules
	words  []string            // trie pattern number → keyword
	trie   *ahocorasick.Trie   // every keyword, matched on lower-cased text
	global []*config.Allowlist // gitleaks' global allow-list
	// providerNames: the words that name a rule's provider in a key
	// (its keywords of four or more letters, its id's first word), for
	// rulesNamedBy.
	providerNames []providerName
	// coveredPrefix[i]: prefixRules[i] is a prefix gitleaks has a rule
	// for (one of its keywords starts it), so tokens.go leaves it alone.
	coveredPrefix []bool
}

// providerName is a word naming rule's provider.
type providerName struct {
	name string
	rule int // index in glCatalogue.rules
}

var (
	glOnce sync.Once
	glCat  *glCatalogue
)

// gitleaksSkip are rules this package's own detectors cover with more
// context: a private key block is keys.go's, which also masks a block cut
// short by the log line's limit.
var gitleaksSkip = map[string]bool{"private-key": true}

// pathFree are rules gitleaks runs only on files of one kind whose text
// reaches logs as it is: a Kubernetes Secret's YAML printed by kubectl
// or a failed apply, a NuGet.Config's <add key="ClearTextPassword"> in a
// restore's output (its allow-list names the documentation's examples).
var pathFree = map[string]bool{"kubernetes-secret-yaml": true, "nuget-config-password": true}

// gitleaks compiles the default rule set once, on first use: a process that
// never scrubs (a scan with nothing new) pays nothing for it.
func gitleaks() *glCatalogue {
	glOnce.Do(func() {
		v := viper.New()
		v.SetConfigType("toml")
		if err := v.ReadConfig(strings.NewReader(config.DefaultConfig)); err != nil {
			panic("redact: gitleaks default config: " + err.Error())
		}
		var vc config.ViperConfig
		if err := v.Unmarshal(&vc); err != nil {
			panic("redact: gitleaks default config: " + err.Error())
		}
		cfg, err := vc.Translate()
		if err != nil {
			panic("redact: gitleaks default config: " + err.Error())
		}
		c := &glCatalogue{byKey: map[string][]int{}, global: cfg.Allowlists}
		for _, r := range cfg.GetOrderedRules() {
			if r.Regex == nil || r.Path != nil && !pathFree[r.RuleID] || gitleaksSkip[r.RuleID] {
				continue
			}
			src := r.Regex.String()
			i := len(c.rules)
			gr := glRule{Rule: r, wordStart: keywordOpens(src, r.Keywords), wholeText: strings.Contains(src, `\n`) || strings.Contains(src, "(?s") || strings.Contains(src, `[\s\S]`)}
			if k := strings.Index(src, semiGenericName+semiGenericOperator); k >= 0 && strings.HasPrefix(src, "(?i)") {
				head := regexp.MustCompile(src[:k+len(semiGenericName)])
				if strings.Contains(src[:k], "(?-i:") {
					gr.caseName = regexp.MustCompile(src[:k+len(semiGenericName)] + "$")
				}
				gr.value = regexp.MustCompile("(?i)^" + src[k+len(semiGenericName):])
				gr.valueGroup = r.SecretGroup - head.NumSubexp()
				gr.minValue = 6 // every catalogue value pattern takes six or more
				if r.RuleID == "generic-api-key" {
					gr.minValue = 10 // ([\w.=-]{10,150}|[a-z0-9][a-z0-9+/]{11,}={0,3})
				}
				if r.SecretGroup == 0 {
					gr.valueGroup = 0 // the first non-empty group, as detect does
				}
			}
			c.rules = append(c.rules, gr)
			if len(r.Keywords) == 0 {
				c.noKey = append(c.noKey, i)
			}
			for _, k := range r.Keywords {
				k = strings.ToLower(k)
				if _, ok := c.byKey[k]; !ok {
					c.words = append(c.words, k)
				}
				c.byKey[k] = append(c.byKey[k], i)
			}
		}
		c.trie = ahocorasick.NewTrieBuilder().AddStrings(c.words).Build()
		for i, r := range c.rules {
			if r.RuleID == "generic-api-key" {
				continue
			}
			if p, _, _ := strings.Cut(r.RuleID, "-"); len(p) >= 4 && !genericKeywords[p] {
				c.providerNames = append(c.providerNames, providerName{p, i})
			}
			for _, k := range r.Keywords {
				if len(k) >= 4 && !genericKeywords[k] && strings.Trim(k, "abcdefghijklmnopqrstuvwxyz") == "" {
					c.providerNames = append(c.providerNames, providerName{k, i})
				}
			}
		}
		c.coveredPrefix = make([]bool, len(prefixRules))
		for i, pr := range prefixRules {
			p := strings.ToLower(pr.prefix)
			for _, k := range c.words {
				if len(k) >= 3 && strings.HasPrefix(p, k) {
					c.coveredPrefix[i] = true
				}
			}
		}
		glCat = c
	})
	return glCat
}

// window is a range of the text a rule runs on.
type window struct {
	start, end int
	op         int // a semi-generic rule's operator (value != nil)
}

// A rule's pattern reads the keyword's line from ruleLead bytes before the
// keyword to ruleTail bytes after it: gitleaks' patterns hold their keyword
// and reach at most a key's length before it ([\w.-]{0,50} and a few
// separators) and a value's after it ({10,150} and the like). Reading the
// whole line once per keyword made scrubbing ten times slower.
const (
	ruleLead       = 96
	ruleTail       = 320
	maxRuleWindow  = 4096 // lineWindow's reach
	allowLineReach = 256  // how much of the line around a match an allow-list reads
)

// findGitleaks reports gitleaks' findings as spans labelled with the rule.
func findGitleaks(sc *scan) {
	c := gitleaks()
	s := sc.s
	perRule := map[int][]window{}
	// A keyword inside a placeholder (<redacted:token>) is this package's
	// word, not the text's: reading it would make a second scrub find
	// what the first did not.
	var masks [][2]int
	if strings.Contains(s, placeholderPrefix) {
		masks = placeholderRanges(s)
	}
	mi := 0
	c.trie.Walk([]byte(sc.lower), func(end, n, pattern int64) bool {
		pos := int(end - n + 1)
		for mi < len(masks) && masks[mi][1] <= pos {
			mi++
		}
		if mi < len(masks) && masks[mi][0] <= pos {
			return true
		}
		// The windows depend on the hit, not the rule: worked out once, on
		// the first rule that needs them.
		var kw, vw window
		kwDone, opDone, vwDone := false, false, false
		op, run := -1, 0
		for _, ri := range c.byKey[c.words[pattern]] {
			if c.rules[ri].wordStart && pos > 0 && (isAlnum(s[pos-1]) || s[pos-1] == '_') {
				continue
			}
			if c.rules[ri].wholeText {
				perRule[ri] = []window{{start: 0, end: len(s)}}
				continue
			}
			if !kwDone {
				kw, kwDone = keywordWindow(s, pos, int(end)+1), true
			}
			w := kw
			if c.rules[ri].value != nil {
				if !opDone {
					op, opDone = assignmentAfter(s, int(end)+1), true
					if op >= 0 {
						run = valueRun(s, op)
					}
				}
				if op < 0 || run < c.rules[ri].minValue {
					continue
				}
				if !vwDone {
					ks := pos
					for ks > kw.start && pos-ks < 50 && keyChar(s[ks-1]) {
						ks--
					}
					// start: the name; end: the line's end, which the value's
					// pattern may need ($), or valueReach past the operator:
					// the regex engine clears state in proportion to its input.
					vw, vwDone = window{start: ks, end: min(lineWindow(s, op, op).end, op+valueReach), op: op}, true
				}
				w = vw
			}
			ws := perRule[ri]
			if n := len(ws); n > 0 && ws[n-1].start <= w.start && w.end <= ws[n-1].end && ws[n-1].op == w.op {
				continue // this keyword's window lies in the last one
			}
			perRule[ri] = append(ws, w)
		}
		return true
	})
	for _, ri := range c.noKey {
		perRule[ri] = []window{{start: 0, end: len(s)}}
	}
	rules := make([]int, 0, len(perRule))
	for ri := range perRule {
		rules = append(rules, ri)
	}
	sort.Ints(rules) // deterministic span order
	for _, ri := range rules {
		for _, w := range perRule[ri] {
			c.run(sc, &c.rules[ri], w)
		}
	}
}

// providerRejected reports whether rules (a provider's, never
// generic-api-key) is not empty and none of them takes v written plainly
// after lead (lead+v: "meraki_token = "+v, "="+run): v is not in the
// format the community's catalogue gives that provider's credential, or
// its entropy is below the rule's threshold. That is evidence the value
// is not one (a Telegram token of the wrong length after
// telegram_api_token=, a sk-ant- string not in Anthropic's format), and
// this package's looser detectors defer to it. The value is judged
// written plainly, not where it stands, so a rule's terminator does not
// reject a real key followed by ':' or ')'.
func providerRejected(rules []int, lead, v string) bool {
	if len(rules) == 0 {
		return false
	}
	c := gitleaks()
	text := lead + v
	for _, i := range rules {
		r := &c.rules[i]
		for _, m := range r.Regex.FindAllStringSubmatchIndex(text, -1) {
			ss, se := secretOf(m, r.SecretGroup, m[0], m[1])
			if ss >= 0 && se > ss && (r.Entropy == 0 || shannonEntropy(text[ss:se]) > r.Entropy) {
				return false
			}
		}
	}
	return true
}

// genericKeywords are generic-api-key's keywords: words any key holds,
// which name no provider.
var genericKeywords = map[string]bool{"access": true, "api": true, "auth": true, "key": true,
	"credential": true, "creds": true, "passwd": true, "password": true, "secret": true, "token": true}

// rulesNamedBy returns the rules a key name names as a token's: each of
// its words but "API key" or "access token" words holds one of the
// rule's keywords of four or more letters (meraki, telegr, sumo) or the
// provider word its id opens with (databricks-api-token). STRIPE_PW or
// stripeRefreshToken name another of the provider's credentials, whose
// format the catalogue does not give.
func rulesNamedBy(key string) []int {
	var buf [8]string
	c := gitleaks()
	var rules []int
	named := false
	for _, w := range splitWords(key, buf[:0]) {
		if tokenWords[w] {
			continue
		}
		if _, ok := strongWords[w]; ok {
			return nil // password, secret: no provider's token format
		}
		var these []int
		for _, pn := range c.providerNames {
			if strings.Contains(w, pn.name) && !slices.Contains(these, pn.rule) {
				these = append(these, pn.rule)
			}
		}
		if !named {
			rules, named = these, true
		} else {
			rules = slices.DeleteFunc(rules, func(r int) bool { return !slices.Contains(these, r) })
		}
		if len(rules) == 0 {
			return nil
		}
	}
	return rules
}

// tokenWords are the words a key naming a provider's API token may hold
// besides the provider's name.
var tokenWords = map[string]bool{"api": true, "access": true, "key": true, "token": true, "apikey": true, "bot": true}

// rulesOpening returns the rules one of whose keywords opens run
// (sk-ant-api03, sntryu_, xoxb): the run itself names the provider.
func rulesOpening(run string) []int {
	c := gitleaks()
	lower := asciiLower(run[:min(len(run), 32)])
	var rules []int
	for _, w := range c.words {
		if len(w) >= 3 && strings.HasPrefix(lower, w) {
			for _, i := range c.byKey[w] {
				if c.rules[i].RuleID != "generic-api-key" {
					rules = append(rules, i)
				}
			}
		}
	}
	return rules
}

// rulesWithID returns the rules whose id opens with prefix.
func rulesWithID(prefix string) []int {
	c := gitleaks()
	var rules []int
	for i := range c.rules {
		if strings.HasPrefix(c.rules[i].RuleID, prefix) {
			rules = append(rules, i)
		}
	}
	return rules
}

// valueReach is how far past a semi-generic rule's operator its value can
// end: the operator, five quotes or spaces, 150 characters, the end.
const valueReach = 200

// valueRun is the length of the value after the operator at op: past
// the operator and up to five quotes or spaces, the characters a value
// pattern takes.
func valueRun(s string, op int) int {
	j := op
	for j < len(s) && j-op < 4 && strings.IndexByte("=>:|?,", s[j]) >= 0 {
		j++
	}
	for k := 0; k < 5 && j < len(s) && strings.IndexByte("`'\" \t\n\r=", s[j]) >= 0; k++ {
		j++
	}
	v := j
	for j < len(s) && j-v < 16 && s[j] > ' ' && strings.IndexByte("`'\";,<>", s[j]) < 0 {
		j++
	}
	return j - v
}

// assignmentAfter checks a semi-generic rule's name part after the
// keyword ending at i: up to 20 name characters, up to 3 quotes or
// spaces, then an operator, whose index it returns (-1 if none).
func assignmentAfter(s string, i int) int {
	j := i
	for j < len(s) && j-i < 20 && (isAlnum(s[j]) || s[j] == '_' || s[j] == '.' || s[j] == '-' || s[j] == ' ' || s[j] == '\t') {
		j++
	}
	for k := 0; k < 3 && j < len(s) && (s[j] == '"' || s[j] == '\'' || s[j] == ' ' || s[j] == '\t' || s[j] == '\n' || s[j] == '\r'); k++ {
		j++
	}
	if j >= len(s) || strings.IndexByte("=>:|,?", s[j]) < 0 {
		return -1
	}
	return j
}

// keywordWindow is the part of the keyword's line a rule reads: from a
// word's start at most ruleLead bytes before it to ruleTail bytes after.
func keywordWindow(s string, start, end int) window {
	w := lineWindow(s, start, end)
	if lo := start - ruleLead; lo > w.start {
		// Start between words, so a pattern's \b does not hold mid-word.
		for k := 0; k < 64 && lo > w.start && (isAlnum(s[lo-1]) || s[lo-1] == '_'); k++ {
			lo--
		}
		w.start = lo
	}
	if hi := end + ruleTail; hi < w.end {
		w.end = hi
	}
	return w
}

// lineWindow is the line holding [start,end), at most maxRuleWindow bytes
// either side of it.
func lineWindow(s string, start, end int) window {
	lo := max(0, start-maxRuleWindow)
	if i := strings.LastIndexByte(s[lo:start], '\n'); i >= 0 {
		lo += i + 1
	}
	hi := min(len(s), end+maxRuleWindow)
	if i := strings.IndexByte(s[end:hi], '\n'); i >= 0 {
		hi = end + i
	}
	return window{start: lo, end: hi}
}

func (c *glCatalogue) run(sc *scan, r *glRule, w window) {
	s := sc.s
	text := s[w.start:w.end]
	matches := [][]int(nil)
	if r.value != nil {
		// One anchored match at the operator, as indexes of the window
		// (the name before it is the match's start).
		m := r.value.FindStringSubmatchIndex(s[w.op:w.end])
		if m == nil || r.caseName != nil && !r.caseName.MatchString(s[w.start:w.op]) {
			return
		}
		off := w.op - w.start
		for k := range m {
			if m[k] >= 0 {
				m[k] += off
			}
		}
		m[0] = 0
		if g := r.valueGroup; g > 0 && 2*g+1 < len(m) {
			m = []int{m[0], m[1], m[2*g], m[2*g+1]} // the secret as group 1
		}
		matches = [][]int{m}
	} else {
		matches = r.Regex.FindAllStringSubmatchIndex(text, -1)
	}
	for _, m := range matches {
		ms, me := m[0], m[1]
		// detect trims a match's newlines (a pattern ending in \n).
		for me > ms && text[me-1] == '\n' {
			me--
		}
		for ms < me && text[ms] == '\n' {
			ms++
		}
		sc.glSeen = append(sc.glSeen, window{start: w.start + ms, end: w.start + me})
		ss, se := secretOf(m, r.SecretGroup, ms, me)
		if ss < 0 || se <= ss {
			continue
		}
		secret := text[ss:se]
		if r.Entropy != 0 && shannonEntropy(secret) <= r.Entropy {
			continue
		}
		if r.RuleID == "generic-api-key" && !genericKeyNamesSecret(text[ms:ss], secret) {
			continue
		}
		sc.glFound = append(sc.glFound, glFinding{rule: r, ms: w.start + ms, me: w.start + me, ss: w.start + ss, se: w.start + se})
	}
}

// secretOf is the secret in match m, as detect takes it: the rule's
// secret group, else the first non-empty group, else the match [ms,me).
func secretOf(m []int, group, ms, me int) (int, int) {
	if len(m) < 4 {
		return ms, me
	}
	if group > 0 && 2*group+1 < len(m) {
		return m[2*group], m[2*group+1]
	}
	for g := 1; 2*g+1 < len(m); g++ {
		if m[2*g] >= 0 && m[2*g+1] > m[2*g] {
			return m[2*g], m[2*g+1]
		}
	}
	return ms, me
}

// glFinding is a gitleaks match waiting for its allow-lists.
type glFinding struct {
	rule           *glRule
	ms, me, ss, se int // the match and the secret in the text
}

// allowGitleaks adds the findings no allow-list excuses. It runs after
// this package's detectors and skips a finding one of them already
// masks: allow-lists are the costly part (large joined patterns, 100 µs
// a finding) and a masked value needs no second opinion.
func allowGitleaks(sc *scan, own []span) {
	if len(sc.glFound) == 0 {
		return
	}
	own = slices.Clone(own)
	slices.SortFunc(own, func(a, b span) int { return a.start - b.start })
	c := gitleaks()
	s := sc.s
	var excused []window
	for _, f := range sc.glFound {
		generic := f.rule.RuleID == "generic-api-key"
		// An allow-list that reads "the line" reads it near the match: a
		// log line may be megabytes.
		lw := lineWindow(s, f.ms, f.me)
		line := s[max(lw.start, f.ms-allowLineReach):min(lw.end, f.me+allowLineReach)]
		secret, match := s[f.ss:f.se], s[f.ms:f.me]
		if covered(own, f.ss, f.se) {
			// Masked already: only an excuse matters, by a pattern naming
			// a placeholder or an example — not by generic-api-key's stop
			// words, which excuse any value holding a common word.
			if allowed(c.global, secret, match, line, false) || !generic && allowed(f.rule.Allowlists, secret, match, line, true) {
				excused = append(excused, window{start: f.ss, end: f.se})
			}
			continue
		}
		if allowed(c.global, secret, match, line, true) || allowed(f.rule.Allowlists, secret, match, line, true) {
			if !generic || allowed(c.global, secret, match, line, false) {
				excused = append(excused, window{start: f.ss, end: f.se})
			}
			continue
		}
		if generic && providerRejected(rulesNamedBy(s[f.ms:f.ss]), s[f.ms:f.ss], secret) {
			continue // meraki_token = <not Meraki's format>: Meraki's rule decided
		}
		sc.add(f.ss, f.se, f.rule.RuleID)
	}
	if len(excused) == 0 {
		return
	}
	// A value gitleaks' allow-lists excuse (a documented example, a
	// placeholder, a variable reference) is kept even where this
	// package's key context would mask it: the community's list of what
	// is not a secret is longer than ours.
	kept := sc.spans[:0]
	for _, sp := range sc.spans {
		drop := false
		if !notRecurring[sp.label] {
			for _, e := range excused {
				if e.start <= sp.start && sp.end <= e.end {
					drop = true
					break
				}
			}
		}
		if !drop {
			kept = append(kept, sp)
		}
	}
	sc.spans = kept
}

// covered reports whether a span of own (sorted by start) holds [start,end).
func covered(own []span, start, end int) bool {
	i, _ := slices.BinarySearchFunc(own, start+1, func(a span, t int) int { return a.start - t })
	for k := i - 1; k >= 0 && k >= i-8; k-- {
		if own[k].start <= start && end <= own[k].end {
			return true
		}
	}
	return false
}

// allowed is detect's allow-list check for text with no path or commit: an
// AND list that also names paths or commits never matches here.
func allowed(lists []*config.Allowlist, secret, match, line string, stopWords bool) bool {
	for _, a := range lists {
		target := secret
		switch a.RegexTarget {
		case "match":
			target = match
		case "line":
			target = line
		}
		regex := a.RegexAllowed(target)
		stop := false
		if stopWords {
			stop, _ = a.ContainsStopWord(secret)
		}
		if a.MatchCondition == config.AllowlistMatchAnd {
			if len(a.Commits) > 0 || len(a.Paths) > 0 {
				continue
			}
			if (len(a.Regexes) == 0 || regex) && (len(a.StopWords) == 0 || stop) && (len(a.Regexes) > 0 || len(a.StopWords) > 0) {
				return true
			}
			continue
		}
		if regex || stop {
			return true
		}
	}
	return false
}

// shannonEntropy is gitleaks' measure, bits per character.
func shannonEntropy(data string) float64 {
	if data == "" {
		return 0
	}
	inv := 1.0 / float64(len(data))
	e := 0.0
	// ASCII, the common case, counts bytes in an array: no map per call
	// on the hot path, and the same counts as the map's.
	var counts [utf8.RuneSelf]int
	i := 0
	for ; i < len(data) && data[i] < utf8.RuneSelf; i++ {
		counts[data[i]]++
	}
	if i == len(data) {
		for _, n := range counts {
			if n > 0 {
				f := float64(n) * inv
				e -= f * math.Log2(f)
			}
		}
		return e
	}
	runes := map[rune]int{}
	for _, c := range data {
		runes[c]++
	}
	for _, n := range runes {
		f := float64(n) * inv
		e -= f * math.Log2(f)
	}
	return e
}

// gitleaksSaw reports whether a gitleaks pattern matched text overlapping
// [start,end), whatever its entropy and allow-list then decided.
func (sc *scan) gitleaksSaw(start, end int) bool {
	for _, w := range sc.glSeen {
		if w.start < end && start < w.end {
			return true
		}
	}
	return false
}

// genericKeyNamesSecret judges gitleaks' generic-api-key finding by this
// package's key rule (classifyKey): gitleaks knows every assignment
// syntax, classifyKey knows which key names a secret — the key's last
// word, so request_id=… after "invalid_auth" or token_count=… stay. A
// weak key (cache_key, key_id) holding a UUID holds an identifier.
func genericKeyNamesSecret(prefix, secret string) bool {
	if trivialValue(secret) {
		return false // the placeholders this package keeps after any key
	}
	e := len(prefix)
	for e > 0 && !keyChar(prefix[e-1]) {
		e--
	}
	b := e
	for b > 0 && (keyChar(prefix[b-1]) || prefix[b-1] == ' ') {
		b--
	}
	// The key is the last identifier before the operator; "var api_token
	// string" and "<Password>" name it before a type or inside a tag.
	words := strings.Fields(prefix[b:e])
	if len(words) == 0 {
		return false
	}
	key := words[len(words)-1]
	if len(words) >= 2 && goTypes[key] {
		key = words[len(words)-2]
	}
	class, label := classifyKey(key)
	switch class {
	case keyNone:
		// some_api_token_123, todo_secret_do_not_commit: a strong secret
		// word inside the name, and a value shaped like a credential.
		var buf [8]string
		words := splitWords(key, buf[:0])
		if namesNoCredential(words) {
			return false
		}
		for _, w := range words {
			if _, strong := strongWords[w]; strong && w != "pwd" && credentialShaped(secret) && !uuidShaped(secret) && !hexRest(secret) {
				return true
			}
		}
		return false
	case keyWeak:
		return !uuidShaped(secret) && looseValue(secret, true, class, label)
	}
	return true
}

var goTypes = map[string]bool{"string": true, "str": true, "[]byte": true, "String": true, "char": true}

func uuidShaped(v string) bool {
	if len(v) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		switch i {
		case 8, 13, 18, 23:
			if v[i] != '-' {
				return false
			}
		default:
			if !isHex(v[i]) {
				return false
			}
		}
	}
	return true
}

// keywordOpens reports whether the pattern src starts, after \b and an
// opening group, with a literal one of keywords begins (all keywords).
func keywordOpens(src string, keywords []string) bool {
	rest, ok := strings.CutPrefix(src, `\b`)
	if !ok || len(keywords) == 0 {
		return false
	}
	rest = strings.TrimPrefix(strings.TrimPrefix(rest, "(?:"), "(")
	for _, k := range keywords {
		if !strings.HasPrefix(rest, k) {
			return false
		}
	}
	return true
}
