package main

import (
	"fmt"
	"slices"

	"gopkg.in/yaml.v3"
)

// topLevelKeys are the sections of the-loop's CLI config: the properties of
// its schema (.the-loop/cli-config.schema.json, which allows no others).
// This tool reads state, eventLog, routing and selfDiagnosis; the rest are
// the-loop's own settings, accepted and left alone. Anything else is a typo
// (selfDiagnosys:) and an error: a misspelt section would otherwise be a
// whole configuration silently not applied.
var topLevelKeys = []string{
	"version", "state", "webhooks", "polling", "routing", "standingSessions",
	"collaborators", "notifications", "channels", "eventLog", "integrations",
	"service", "selfDiagnosis",
}

// The keys of the sections this tool reads; the-loop's schema allows no
// others in state, nor in eventLog beyond this tool's format and mapping.
var (
	stateKeys    = []string{"root"}
	eventLogKeys = []string{"enabled", "path", "format", "mapping"}
	// eventLogMappingKeys are logread.Mapping's fields.
	eventLogMappingKeys = []string{"time", "level", "levels", "message", "error", "stack", "event", "logger", "ids", "retry", "lift", "inner"}
	// selfDiagnosisKeys are the-loop's (enabled ... maxRetries) and this
	// tool's; loadConfig's switch reads each of them.
	selfDiagnosisKeys = []string{
		"enabled", "repo", "label", "harness", "model", "timeoutSeconds",
		"intervalSeconds", "maxIssuesPerDay", "maxRetries",
		"command", "endpoint", "apiKeyEnv", "pricePerMillionInput",
		"pricePerMillionOutput", "statePath", "apiURL", "controlKeywords",
		"fingerprintRules", "agentParallel", "agentEnv", "version",
		"writeSpacingSeconds", "secondaryWaitSeconds", "maxWaitSeconds",
		"httpRetries", "httpTimeoutSeconds", "maxDiagnosesPerScan",
		"maxDiagnosesPerDay", "maxAgentCostPerDay", "verdictConfidence",
		"settleDays", "flakyThreshold", "correlationKeys", "successSuffixes",
		"environmentRules", "sourceCheckout", "sourcePath", "trustedAuthors",
		"eventsPath", "store", "backlogDays",
	}
	// The yaml keys of stages.EnvRule and fingerprint.Rule.
	envRuleKeys         = []string{"name", "event", "error", "reason"}
	fingerprintRuleKeys = []string{"name", "event", "error", "fingerprint", "group"}
)

// checkKeys reports the first key of mapping n that is not known, with its
// line and, when one is close, the key meant. section is "" at the top.
func checkKeys(file, section string, n *yaml.Node, known []string) error {
	if n.Kind != yaml.MappingNode {
		return nil // the caller reports the shape
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if slices.Contains(known, k.Value) {
			continue
		}
		full, what := k.Value, "unknown section"
		if section != "" {
			full, what = section+"."+k.Value, "unknown key"
		}
		msg := what
		if s := closest(k.Value, known); s != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", s)
		}
		return &ConfigError{File: file, Key: full, Line: k.Line, Err: fmt.Errorf("%s", msg)}
	}
	return nil
}

// checkListKeys checks every mapping in list n (a rule list) against known.
func checkListKeys(file, key string, n *yaml.Node, known []string) error {
	if n.Kind != yaml.SequenceNode {
		return nil
	}
	for i, item := range n.Content {
		if err := checkKeys(file, fmt.Sprintf("%s[%d]", key, i), item, known); err != nil {
			return err
		}
	}
	return nil
}

// closest is the known key within an edit distance of 2 of k (the nearest,
// the first of equals), or "".
func closest(k string, known []string) string {
	best, bestD := "", 3
	for _, c := range known {
		if d := editDistance(k, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, by runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
