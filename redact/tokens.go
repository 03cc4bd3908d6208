package redact

import "strings"

// Provider tokens recognised by their published prefixes. A prefix alone is
// not enough: the rest must be long enough and, for short or generic
// prefixes, random-looking, so "sk-learn" or "key-value" stay.

type prefixRule struct {
	prefix  string
	minRest int    // minimum characters after the prefix
	label   string // placeholder label
	rest    func(string) bool
}

func anyRest(string) bool { return true }

func hexRest(v string) bool {
	for i := 0; i < len(v); i++ {
		if !isHex(v[i]) {
			return false
		}
	}
	return true
}

func upperAlnumRest(v string) bool {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !('A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// mixedRest wants letters and digits: random, not a hyphenated name.
func mixedRest(v string) bool {
	cc := countClasses(v)
	return cc.digit > 0 && cc.lower+cc.upper > 0
}

// prefixRules is ordered so that a longer prefix is tried before a shorter
// one it extends (sk-ant- before sk-).
var prefixRules = []prefixRule{
	// Cloud providers.
	{"AKIA", 16, "aws-access-key-id", upperAlnumRest},
	{"ASIA", 16, "aws-access-key-id", upperAlnumRest},
	{"ABIA", 16, "aws-access-key-id", upperAlnumRest},
	{"ACCA", 16, "aws-access-key-id", upperAlnumRest},
	{"AIza", 30, "google-api-key", anyRest},
	{"GOCSPX-", 20, "google-client-secret", anyRest},
	{"AccountKey", 0, "", nil}, // handled by key=value; listed to stop the AKIA-style checks
	{"LTAI", 12, "alibaba-access-key", mixedRest},
	{"AKID", 30, "tencent-secret-id", mixedRest},
	{"dop_v1_", 40, "digitalocean-token", anyRest},
	{"doo_v1_", 40, "digitalocean-token", anyRest},
	{"dor_v1_", 40, "digitalocean-token", anyRest},
	{"HRKU-", 30, "heroku-key", anyRest},
	{"fo1_", 30, "flyio-token", anyRest},
	{"dapi", 32, "databricks-token", hexRest},
	{"pul-", 40, "pulumi-token", hexRest},
	// Version control and CI.
	{"ghp_", 30, "github-token", anyRest},
	{"gho_", 30, "github-token", anyRest},
	{"ghu_", 30, "github-token", anyRest},
	{"ghs_", 30, "github-token", anyRest},
	{"ghr_", 30, "github-token", anyRest},
	{"github_pat_", 22, "github-token", anyRest},
	{"glpat-", 20, "gitlab-token", anyRest},
	{"gldt-", 20, "gitlab-token", anyRest},
	{"glptt-", 20, "gitlab-token", anyRest},
	{"glrt-", 20, "gitlab-token", anyRest},
	{"glcbt-", 20, "gitlab-token", anyRest},
	{"glimt-", 20, "gitlab-token", anyRest},
	{"glft-", 20, "gitlab-token", anyRest},
	{"glsoat-", 20, "gitlab-token", anyRest},
	{"GR1348941", 20, "gitlab-token", anyRest},
	{"ATBB", 28, "bitbucket-token", mixedRest},
	{"ATATT", 30, "atlassian-token", mixedRest},
	{"bkua_", 30, "buildkite-token", anyRest},
	{"CCIPAT_", 30, "circleci-token", anyRest},
	// Chat and notifications.
	{"xoxb-", 10, "slack-token", mixedRest},
	{"xoxp-", 10, "slack-token", mixedRest},
	{"xoxa-", 10, "slack-token", mixedRest},
	{"xoxo-", 10, "slack-token", mixedRest},
	{"xoxs-", 10, "slack-token", mixedRest},
	{"xoxr-", 10, "slack-token", mixedRest},
	{"xoxe-", 10, "slack-token", mixedRest},
	{"xapp-", 10, "slack-token", mixedRest},
	{"xkeysib-", 40, "brevo-key", anyRest},
	// Payments and commerce.
	{"sk_live_", 10, "stripe-key", anyRest},
	{"sk_test_", 10, "stripe-key", anyRest},
	{"rk_live_", 10, "stripe-key", anyRest},
	{"rk_test_", 10, "stripe-key", anyRest},
	{"whsec_", 20, "stripe-webhook-secret", anyRest},
	{"shpat_", 20, "shopify-token", anyRest},
	{"shpss_", 20, "shopify-token", anyRest},
	{"shpca_", 20, "shopify-token", anyRest},
	{"shppa_", 20, "shopify-token", anyRest},
	{"sq0atp-", 20, "square-token", anyRest},
	{"sq0csp-", 20, "square-token", anyRest},
	{"EAAA", 56, "square-token", mixedRest},
	// LLM and ML providers.
	{"sk-ant-", 20, "anthropic-key", anyRest},
	{"sk-proj-", 20, "openai-key", anyRest},
	{"sk-svcacct-", 20, "openai-key", anyRest},
	{"sk-admin-", 20, "openai-key", anyRest},
	{"sk-or-", 20, "openrouter-key", anyRest},
	{"sk-", 20, "api-key", mixedRest},
	{"hf_", 30, "huggingface-token", anyRest},
	{"r8_", 30, "replicate-token", anyRest},
	{"gsk_", 40, "groq-key", anyRest},
	{"pplx-", 40, "perplexity-key", anyRest},
	{"xai-", 40, "xai-key", anyRest},
	// Package registries.
	{"npm_", 30, "npm-token", anyRest},
	{"pypi-", 40, "pypi-token", anyRest},
	{"rubygems_", 40, "rubygems-token", hexRest},
	{"oy2", 40, "nuget-key", mixedRest},
	{"dckr_pat_", 20, "docker-token", anyRest},
	{"cio", 32, "crates-token", mixedRest},
	{"AKCp", 60, "artifactory-key", mixedRest},
	// SaaS and observability.
	{"lin_api_", 30, "linear-key", anyRest},
	{"ntn_", 40, "notion-token", anyRest},
	{"secret_", 40, "notion-token", mixedRest},
	{"PMAK-", 40, "postman-key", anyRest},
	{"NRAK-", 20, "newrelic-key", anyRest},
	{"NRII-", 20, "newrelic-key", anyRest},
	{"sntrys_", 40, "sentry-token", anyRest},
	{"sntryu_", 40, "sentry-token", anyRest},
	{"glc_", 30, "grafana-token", anyRest},
	{"glsa_", 30, "grafana-token", anyRest},
	{"figd_", 30, "figma-token", anyRest},
	{"sbp_", 30, "supabase-token", anyRest},
	{"key-", 32, "mailgun-key", mixedRest},
	{"SK", 32, "twilio-key", hexRest},
	{"AGE-SECRET-KEY-1", 40, "age-key", anyRest},
	{"b3BlbnNzaC1rZXktdjE", 0, "private-key", anyRest}, // base64 of "openssh-key-v1"
}

// runChar is the alphabet of a token run: letters, digits, '_' and '-'.
func runChar(c byte) bool {
	return isAlnum(c) || c == '_' || c == '-'
}

// findTokens walks the maximal runs of token characters and masks those
// that carry a provider prefix gitleaks has no rule for (or whose rule did
// not read the run), JWTs and dotted provider tokens.
func findTokens(sc *scan) {
	s := sc.s
	for i := 0; i < len(s); {
		if !runChar(s[i]) {
			i++
			continue
		}
		start := i
		for i < len(s) && runChar(s[i]) {
			i++
		}
		end := i
		if end-start < 8 && !(end < len(s) && s[end] == '.') {
			continue
		}
		if next, ok := dottedToken(sc, start, end); ok {
			i = next
			continue
		}
		run := s[start:end]
		if mailchimpKey(run) {
			sc.add(start, end, "mailchimp-key")
			continue
		}
		if label, covered := matchPrefix(run); label != "" {
			if covered && sc.gitleaksSaw(start, end) || providerRejected(rulesOpening(run), "=", run) {
				// gitleaks' rule for this prefix read the run and decided
				// (its allow-list knows placeholders and published examples;
				// its pattern, the provider's format).
				continue
			}
			if label == "private-key" {
				sc.add(start, base64BlockEnd(s, start), label)
				i = base64BlockEnd(s, start)
				continue
			}
			sc.add(start, end, label)
			continue
		}
		// A random-looking run alone is no evidence of a secret (a document
		// id, a selector, a hash): the words around it decide, in
		// findKeyValues and gitleaks' rules.
	}
}

func blobChar(c byte) bool { return isAlnum(c) || c == '_' || c == '-' }

// afterPublicKeyType reports whether the blob at i is an SSH public key
// ("ssh-ed25519 AAAA..."), which is meant to be shared.
func afterPublicKeyType(s string, i int) bool {
	j := i
	for j > 0 && s[j-1] == ' ' {
		j--
	}
	k := j
	for k > 0 && (runChar(s[k-1]) || s[k-1] == '@' || s[k-1] == '.') {
		k--
	}
	t := s[k:j]
	return strings.HasPrefix(t, "ssh-") || strings.HasPrefix(t, "ecdsa-") || strings.HasPrefix(t, "sk-ssh-") || strings.HasPrefix(t, "sk-ecdsa-")
}

// mailchimpKey: 32 hex characters and a datacenter suffix, "-us12".
func mailchimpKey(run string) bool {
	if len(run) < 36 || len(run) > 38 || !hexRest(run[:32]) || run[32:35] != "-us" {
		return false
	}
	for i := 35; i < len(run); i++ {
		if !isDigit(run[i]) {
			return false
		}
	}
	return true
}

func isPlaceholderNear(s string, i int) bool {
	return i > 0 && s[i-1] == '<' || strings.HasPrefix(s[i:], "redacted")
}

// rulesByFirstByte indexes prefixRules by their first byte, keeping order.
var rulesByFirstByte = func() (idx [256][]int) {
	for i, r := range prefixRules {
		idx[r.prefix[0]] = append(idx[r.prefix[0]], i)
	}
	return idx
}()

func prefixLabel(run string) string {
	label, _ := matchPrefix(run)
	return label
}

// matchPrefix returns the label of the rule run's prefix matches, and
// whether gitleaks' catalogue has a rule for that prefix too.
func matchPrefix(run string) (string, bool) {
	if run == "" {
		return "", false
	}
	covered := gitleaks().coveredPrefix
	for _, i := range rulesByFirstByte[run[0]] {
		r := &prefixRules[i]
		if !strings.HasPrefix(run, r.prefix) {
			continue
		}
		rest := run[len(r.prefix):]
		if r.rest == nil || selectorName(rest) || len(rest) >= 6 && placeholderValue(rest) || strings.Contains(rest, "1234567890") {
			// ntn_1234567890…, glptt-xxxx…: a documentation example;
			// hf_requiredCharacteristicTypes: a selector or a name made of
			// words, not a random token.
			return "", false
		}
		if len(rest) < r.minRest || !r.rest(rest) {
			continue
		}
		// AWS key ids are exactly 20 characters; Twilio SIDs 34.
		if (r.label == "aws-access-key-id" && len(run) != 20) || (r.label == "twilio-key" && len(run) != 34) {
			continue
		}
		return r.label, covered[i]
	}
	return "", false
}

// dottedToken handles tokens whose parts are joined by dots: JWTs
// (eyJ...eyJ...sig), SendGrid (SG.x.y), Google OAuth (ya29.x), Vault
// (hvs.x), Mapbox (sk.eyJ...), Discord bot tokens. It returns the index to
// resume scanning from.
func dottedToken(sc *scan, start, end int) (int, bool) {
	s := sc.s
	if end >= len(s) || s[end] != '.' {
		return 0, false
	}
	run := s[start:end]
	parts := func(maxParts int) (int, []int) { // end of dotted chain and part lengths
		var lens []int
		p := start
		for len(lens) < maxParts {
			q := p
			for q < len(s) && runChar(s[q]) {
				q++
			}
			lens = append(lens, q-p)
			if q < len(s) && s[q] == '.' && q+1 < len(s) && runChar(s[q+1]) && len(lens) < maxParts {
				p = q + 1
				continue
			}
			return q, lens
		}
		return p, lens
	}
	switch {
	case strings.HasPrefix(run, "eyJ") && len(run) >= 10:
		e, lens := parts(3)
		if len(lens) >= 2 && lens[1] >= 10 && strings.HasPrefix(s[start+lens[0]+1:], "eyJ") {
			sc.add(start, e, "jwt")
			return e, true
		}
	case run == "SG":
		e, lens := parts(3)
		if len(lens) == 3 && lens[1] >= 16 && lens[2] >= 30 {
			sc.add(start, e, "sendgrid-key")
			return e, true
		}
	case run == "ya29" || run == "hvs" || run == "hvb" || run == "hvr" || run == "sk" || run == "pk" || run == "sl":
		e, lens := parts(2)
		if len(lens) == 2 && lens[1] >= 20 && mixedRest(s[start+lens[0]+1:e]) {
			label := "token"
			if run == "ya29" {
				label = "google-oauth-token"
			} else if run[0] == 'h' {
				label = "vault-token"
			}
			sc.add(start, e, label)
			return e, true
		}
	case len(run) >= 10 && strings.HasPrefix(s[end:], ".atlasv1."):
		// Terraform Cloud / HCP: ID.atlasv1.SECRET, all three parts secret.
		e, lens := parts(3)
		if len(lens) == 3 && lens[2] >= 40 && !placeholderValue(s[e-lens[2]:e]) {
			sc.add(start, e, "terraform-token")
			return e, true
		}
	case len(run) >= 23 && len(run) <= 28 && (run[0] == 'M' || run[0] == 'N' || run[0] == 'O'):
		e, lens := parts(3)
		if len(lens) == 3 && lens[1] >= 6 && lens[1] <= 7 && lens[2] >= 27 && mixedRest(run) {
			sc.add(start, e, "discord-token")
			return e, true
		}
	}
	return 0, false
}

// findTelegramTokens masks bot tokens: 8-10 digits, ':', 35 characters.
func findTelegramTokens(sc *scan) {
	s := sc.s
	for off := 0; ; {
		i := strings.IndexByte(s[off:], ':')
		if i < 0 {
			return
		}
		colon := off + i
		off = colon + 1
		ds := colon
		for ds > 0 && isDigit(s[ds-1]) {
			ds--
		}
		if colon-ds < 6 || colon-ds > 12 || (ds > 0 && isAlnum(s[ds-1]) && !(ds >= 3 && s[ds-3:ds] == "bot")) {
			continue
		}
		e := colon + 1
		for e < len(s) && runChar(s[e]) {
			e++
		}
		rest := s[colon+1 : e]
		if len(rest) >= 30 && (strings.HasPrefix(rest, "AA") || looksSecret(rest)) && !providerRejected(rulesWithID("telegram-"), "telegram=", s[ds:e]) {
			sc.add(ds, e, "telegram-token")
			off = e
		}
	}
}

// findAzureClientSecrets masks Entra ID (Azure AD) client secrets, which
// carry "Q~" after three characters and a digit.
func findAzureClientSecrets(sc *scan) {
	s := sc.s
	for off := 0; ; {
		i := strings.Index(s[off:], "Q~")
		if i < 0 {
			return
		}
		q := off + i
		off = q + 2
		start := q - 4
		if start < 0 || !isDigit(s[q-1]) || (start > 0 && (runChar(s[start-1]) || s[start-1] == '.' || s[start-1] == '~')) {
			continue
		}
		e := q + 2
		for e < len(s) && (runChar(s[e]) || s[e] == '.' || s[e] == '~') {
			e++
		}
		if e-(q+2) >= 30 && !placeholderValue(s[q+2:e]) && !providerRejected(rulesWithID("azure-ad-client-secret"), "=", s[start:e]) {
			sc.add(start, e, "azure-client-secret")
			off = e
		}
	}
}

// pemLabel reports whether a BEGIN line's label is well formed: capitals,
// digits and spaces ("RSA PRIVATE KEY", "OPENSSH PRIVATE KEY").
func pemLabel(h string) bool {
	for i := 0; i < len(h); i++ {
		if c := h[i]; !('A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == ' ') {
			return false
		}
	}
	return true
}

// base64BlockEnd returns where a run of base64 text starting at i, spread
// over lines (real or escaped line breaks, YAML indentation), ends. A
// following line joins the block if it is all base64; a last, cut-off line
// joins if it is long or ends at a quote, so ordinary text after a truncated
// key is kept.
func base64BlockEnd(s string, i int) int {
	e := base64LineEnd(s, i)
	for {
		next, ok := skipLineBreak(s, e)
		if !ok {
			return e
		}
		j := next
		for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
			j++
		}
		le := base64LineEnd(s, j)
		if le == j {
			return e
		}
		if _, atBreak := skipLineBreak(s, le); atBreak || le == len(s) {
			e = le
			continue
		}
		if le-j >= 16 || strings.IndexByte("'\"`", s[le]) >= 0 {
			return le
		}
		return e
	}
}

func base64LineEnd(s string, i int) int {
	for i < len(s) && (isAlnum(s[i]) || s[i] == '+' || s[i] == '/' || s[i] == '=') {
		i++
	}
	return i
}

func skipLineBreak(s string, i int) (int, bool) {
	switch {
	case i < len(s) && s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n':
		return i + 2, true
	case i < len(s) && (s[i] == '\n' || s[i] == '\r'):
		return i + 1, true
	case i+1 < len(s) && s[i] == '\\' && (s[i+1] == 'n' || s[i+1] == 'r'):
		if i+3 < len(s) && s[i+1] == 'r' && s[i+2] == '\\' && s[i+3] == 'n' {
			return i + 4, true
		}
		return i + 2, true
	}
	return i, false
}

// trimBlock narrows [i, j) to exclude leading and trailing whitespace and
// escaped line breaks.
func trimBlock(s string, i, j int) (int, int) {
	for i < j {
		if s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r' {
			i++
		} else if s[i] == '\\' && i+1 < j && (s[i+1] == 'n' || s[i+1] == 'r') {
			i += 2
		} else {
			break
		}
	}
	for j > i {
		if c := s[j-1]; c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			j--
		} else if j-2 >= i && s[j-2] == '\\' && (s[j-1] == 'n' || s[j-1] == 'r') {
			j -= 2
		} else {
			break
		}
	}
	return i, j
}

// selectorName: letters only, in camel case with at least two humps
// (requiredCharacteristicTypes): a method or field name.
func selectorName(v string) bool {
	caps := 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
		if 'A' <= c && c <= 'Z' {
			caps++
		}
	}
	return caps >= 2 && camelWords(v)
}
