package fingerprint

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Rule is an operator's fingerprint rule, like Sentry's fingerprint rules.
// The first rule that matches a record decides its fingerprint.
//
// Matching: Event is an exact event name or a glob ("dispatch.*", with
// path.Match syntax: *, ?, [...]); ErrorRegex is an RE2 expression searched
// in the raw error text. A rule needs at least one of them; when both are
// set both must match.
//
// Grouping: exactly one of
//   - Fingerprint: a fixed name; every matching record is one defect
//     ("db-timeouts").
//   - Group: components joined into the identity, each one of
//     "{{ event }}"        the record's event
//     "{{ template }}"     the normalized error (what the default uses)
//     "{{ default }}"      the default fingerprint, to refine it
//     "{{ error.type }}"   the exception / error class: the text before
//     the first ": " of the template's first line
//     "{{ field.NAME }}"   a top-level field of the record
//     "$1", "${name}"      a capture group of ErrorRegex (raw text)
//     anything else        a literal string
//
// Components are matched whole; "{{event}}" and "{{ event }}" are the same.
type Rule struct {
	Name        string   `yaml:"name"`
	Event       string   `yaml:"event"`
	ErrorRegex  string   `yaml:"error"`
	Fingerprint string   `yaml:"fingerprint"`
	Group       []string `yaml:"group"`
}

// Fingerprinter computes fingerprints under a validated rule set.
type Fingerprinter struct {
	rules     []compiledRule
	noAliases bool
	templates *templateMemo // shared by WithoutAliases copies
}

// templateMemo remembers the templates of recent error texts: a log repeats
// many of its errors word for word, and normalizing a traceback is the
// costliest step of a fingerprint; and the fingerprint of a version, event
// and template: a defect's occurrences share them, so its SHA-1 is taken
// once. Keys are the records' own strings (v3's: after masking identity).
type templateMemo struct {
	templates   boundedMemo[string]
	templatesV3 boundedMemo[string]
	templatesV2 boundedMemo[string]
	fps         boundedMemo[[3]string]
}

func newTemplateMemo() *templateMemo {
	return &templateMemo{templates: boundedMemo[string]{m: map[string]string{}},
		templatesV3: boundedMemo[string]{m: map[string]string{}},
		templatesV2: boundedMemo[string]{m: map[string]string{}},
		fps:         boundedMemo[[3]string]{m: map[[3]string]string{}}}
}

func (t *templateMemo) template(in Input) string {
	if t == nil || strings.TrimSpace(in.Error) == "" {
		return Template(in) // from the fields: not keyed by the error text
	}
	masked := maskData(in)
	return t.templates.get(masked, func() string { return NormalizeV3(masked) })
}

func (t *templateMemo) templateV3(in Input) string {
	if t == nil || strings.TrimSpace(in.Error) == "" {
		return templateV3(in)
	}
	masked := MaskIdentity(in.Error, in.Identity)
	return t.templatesV3.get(masked, func() string { return NormalizeV3(masked) })
}

func (t *templateMemo) templateV2(in Input) string {
	if t == nil || strings.TrimSpace(in.Error) == "" {
		return templateV2(in)
	}
	return t.templatesV2.get(in.Error, func() string { return Normalize(in.Error) })
}

func (t *templateMemo) fingerprint(version, event, template string) string {
	if t == nil {
		return versionedFingerprint(version, event, template)
	}
	return t.fps.get([3]string{version, event, template}, func() string { return versionedFingerprint(version, event, template) })
}

// memoSize bounds each memo: it is emptied when full.
const memoSize = 1024

// boundedMemo is a map from K to computed strings of at most memoSize
// entries, safe for concurrent use.
type boundedMemo[K comparable] struct {
	mu sync.Mutex
	m  map[K]string
}

func (b *boundedMemo[K]) get(k K, compute func() string) string {
	b.mu.Lock()
	v, ok := b.m[k]
	b.mu.Unlock()
	if ok {
		return v
	}
	v = compute()
	b.mu.Lock()
	if len(b.m) >= memoSize {
		clear(b.m)
	}
	b.m[k] = v
	b.mu.Unlock()
	return v
}

type compiledRule struct {
	event string
	re    *regexp.Regexp
	fixed string
	group []component
}

type componentKind int

const (
	compLiteral componentKind = iota
	compEvent
	compTemplate
	compDefault
	compErrorType
	compField
	compCapture
)

type component struct {
	kind  componentKind
	value string // literal text or field name
	index int    // capture group number
}

// New validates and compiles rules. Errors name the rule by its 1-based
// position and name: `fingerprint rule 2 ("db"): error regex: ...`.
func New(rules []Rule) (*Fingerprinter, error) {
	f := &Fingerprinter{templates: newTemplateMemo()}
	var errs []error
	for i, r := range rules {
		c, err := compileRule(r)
		if err != nil {
			errs = append(errs, fmt.Errorf("fingerprint rule %d (%q): %w", i+1, r.Name, err))
			continue
		}
		f.rules = append(f.rules, c)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return f, nil
}

func compileRule(r Rule) (compiledRule, error) {
	c := compiledRule{event: strings.TrimSpace(r.Event), fixed: strings.TrimSpace(r.Fingerprint)}
	if c.event == "" && r.ErrorRegex == "" {
		return c, errors.New("needs an event or an error regex to match")
	}
	if c.event != "" {
		if _, err := path.Match(c.event, ""); err != nil {
			return c, fmt.Errorf("event glob %q: %w", c.event, err)
		}
	}
	if r.ErrorRegex != "" {
		re, err := regexp.Compile(r.ErrorRegex)
		if err != nil {
			return c, fmt.Errorf("error regex: %w", err)
		}
		c.re = re
	}
	switch {
	case c.fixed != "" && len(r.Group) > 0:
		return c, errors.New("set either fingerprint or group, not both")
	case c.fixed == "" && len(r.Group) == 0:
		return c, errors.New("needs a fingerprint or a group")
	}
	for _, g := range r.Group {
		comp, err := parseComponent(g, c.re)
		if err != nil {
			return c, fmt.Errorf("group component %q: %w", g, err)
		}
		c.group = append(c.group, comp)
	}
	return c, nil
}

func parseComponent(s string, re *regexp.Regexp) (component, error) {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "{{") && strings.HasSuffix(t, "}}") {
		name := strings.TrimSpace(t[2 : len(t)-2])
		switch {
		case name == "event":
			return component{kind: compEvent}, nil
		case name == "template":
			return component{kind: compTemplate}, nil
		case name == "default":
			return component{kind: compDefault}, nil
		case name == "error.type":
			return component{kind: compErrorType}, nil
		case strings.HasPrefix(name, "field.") && len(name) > len("field."):
			return component{kind: compField, value: name[len("field."):]}, nil
		}
		return component{}, fmt.Errorf("unknown variable %q (known: event, template, default, error.type, field.NAME)", name)
	}
	if strings.HasPrefix(t, "$") && len(t) > 1 {
		name := t[1:]
		if strings.HasPrefix(name, "{") && strings.HasSuffix(name, "}") {
			name = name[1 : len(name)-1]
		}
		if re == nil {
			return component{}, errors.New("a capture group needs an error regex")
		}
		if n, err := strconv.Atoi(name); err == nil {
			if n < 0 || n > re.NumSubexp() {
				return component{}, fmt.Errorf("the error regex has %d capture groups", re.NumSubexp())
			}
			return component{kind: compCapture, index: n}, nil
		}
		if k := re.SubexpIndex(name); k > 0 {
			return component{kind: compCapture, index: k}, nil
		}
		return component{}, fmt.Errorf("the error regex has no group named %q", name)
	}
	return component{kind: compLiteral, value: s}, nil
}

// matches returns the regex submatches (nil when the rule has no regex)
// and whether the rule applies.
func (r *compiledRule) matches(in Input) ([]string, bool) {
	if r.event != "" {
		if ok, _ := path.Match(r.event, in.Event); !ok {
			return nil, false
		}
	}
	if r.re == nil {
		return nil, true
	}
	m := r.re.FindStringSubmatch(in.Error)
	return m, m != nil
}

// WithoutAliases is f without the older versions' fingerprints: for a state
// that holds none of them there is nothing for them to match, and the legacy
// normalizer is half the cost of fingerprinting.
func (f *Fingerprinter) WithoutAliases() *Fingerprinter {
	c := *f
	c.noAliases = true
	return &c
}

// Compute fingerprints a record: the first matching rule decides, else the
// default v4 fingerprint of the event and template. Aliases hold what the
// older versions give the same record, Legacy (the-loop's v1), then v3, then v2 (unless
// WithoutAliases); an alias equal to the fingerprint is left out.
func (f *Fingerprinter) Compute(in Input) Result {
	template := f.templates.template(in)
	def := f.templates.fingerprint(Version, identityEvent(in.Event, template), template)
	res := Result{Fingerprint: def, Template: template}
	var templateV3, defV3, templateV2, defV2 string
	if !f.noAliases {
		templateV3 = f.templates.templateV3(in)
		defV3 = f.templates.fingerprint(versionV3, in.Event, templateV3)
		templateV2 = f.templates.templateV2(in)
		defV2 = f.templates.fingerprint(versionV2, in.Event, templateV2)
	}
	var sub []string
	var rule *compiledRule
	for i := range f.rules {
		var ok bool
		if sub, ok = f.rules[i].matches(in); ok {
			rule = &f.rules[i]
			break
		}
	}
	v3, v2 := defV3, defV2
	switch {
	case rule == nil:
	case rule.fixed != "":
		// A fixed name is the operator's: it keeps its v2 form, so no rule's
		// defect is filed again after an upgrade.
		res.Fingerprint = versionV2 + ":" + sha16(versionV2+"\nfixed\n"+rule.fixed)
		v3, v2 = "", ""
	default:
		res.Fingerprint = rule.groupFingerprint(Version, in, template, def, sub)
		v3, v2 = "", ""
		if !f.noAliases {
			v3 = rule.groupFingerprint(versionV3, in, templateV3, defV3, sub)
			v2 = rule.groupFingerprint(versionV2, in, templateV2, defV2, sub)
		}
	}
	if !f.noAliases {
		for _, a := range []string{LegacyOf(in), v3, v2} {
			if a != "" && a != res.Fingerprint && !slices.Contains(res.Aliases, a) {
				res.Aliases = append(res.Aliases, a)
			}
		}
	}
	return res
}

// groupFingerprint joins a group rule's components under a version.
func (r *compiledRule) groupFingerprint(version string, in Input, template, def string, sub []string) string {
	var key strings.Builder
	key.WriteString(version + "\ngroup")
	for _, c := range r.group {
		key.WriteByte(0)
		key.WriteString(r.componentValue(c, in, template, def, sub))
	}
	return version + ":" + sha16(key.String())
}

func (r *compiledRule) componentValue(c component, in Input, template, def string, sub []string) string {
	switch c.kind {
	case compEvent:
		return in.Event
	case compTemplate:
		return template
	case compDefault:
		return def
	case compErrorType:
		return errorType(template)
	case compField:
		v := in.field(c.value)
		if v == nil {
			return ""
		}
		return enumValue(v)
	case compCapture:
		if c.index < len(sub) {
			return sub[c.index]
		}
		return ""
	}
	return c.value
}

// errorType is the error class of a template: the text before the first
// ": " of its first line ("ValueError", "panic: runtime error", ...), or
// the whole first line when it has none.
func errorType(template string) string {
	line := template
	if k := strings.IndexByte(line, '\n'); k >= 0 {
		line = line[:k]
	}
	if k := strings.Index(line, ": "); k >= 0 {
		return line[:k]
	}
	return line
}
