package logread

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/the-loop/the-loop-diagnose/pipeline"
)

// Format says where a JSON log keeps what the canonical record needs
// (KeyTime ... KeyLogger). Each list holds field paths, the first present
// one wins; a path's dots descend into objects, and a key that itself holds
// dots (OpenTelemetry's exception.message) is found as it is written.
type Format struct {
	Name string
	Time []string // RFC 3339 text, or epoch seconds, ms, µs or ns (by magnitude), as a number or digits
	// Level holds the level; Levels maps a level's name (lower case; a
	// value matches in lower, UPPER or Title case) or a number to a
	// canonical level. A number maps to the level of the highest numeric
	// key at or below it (pino's 50 and 55 are both error). A name not
	// listed is its own canonical level.
	Level   []string
	Levels  map[string]string
	Message []string
	// Error holds the error: text, or an object whose message, type (or
	// name) and stack make the text. Stack adds a trace kept apart.
	Error []string
	Stack []string
	// Event names what happened; a record without one is named by its message.
	Event  []string
	Logger []string
	// IDs are correlation ids the log carries besides the policy's keys.
	IDs   []string
	Retry []string // the retry flag: a boolean
	// Lift are objects whose members become top-level fields, where the
	// policy's correlation keys and the fingerprint's identity fields find
	// them (OpenTelemetry's attributes).
	Lift []string
	// AnyValue: values may be OTLP AnyValues ({"stringValue":"x"}) and
	// attribute lists ([{"key":k,"value":{...}}]).
	AnyValue bool
	// Inner is the field holding the line the service wrote, itself maybe
	// a JSON line of InnerFormat (Docker's log).
	Inner       string
	InnerFormat *Format

	numeric []levelStep // Levels' numeric keys, ascending
	native  bool        // the-loop's own: the record is already canonical
}

type levelStep struct {
	min   float64
	level string
}

// The presets: how each library writes a record (its documentation and
// encoder defaults). No logging library has a retry flag of its own: a
// service that says it gave up says so in the policy's field, will_retry
// (willRetry), as the-loop does.
var willRetry = []string{KeyRetry}

var presets = map[string]Format{
	"the-loop": {Time: []string{"ts"}, Level: []string{"level"}, Message: []string{"message"}, Error: []string{"error"},
		Event: []string{"event"}, Retry: willRetry},
	// zap's NewProductionEncoderConfig: ts (epoch seconds), level, logger,
	// caller, msg, stacktrace; errors under zap.Error's "error".
	"zap": {Time: []string{"ts"}, Retry: willRetry, Level: []string{"level"}, Message: []string{"msg"}, Error: []string{"error"},
		Stack: []string{"stacktrace"}, Logger: []string{"logger"},
		Levels: map[string]string{"warn": "warning", "dpanic": "fatal", "panic": "fatal"}},
	// zerolog: level, time, message, error (ErrorFieldName), stack, caller.
	"zerolog": {Time: []string{"time"}, Retry: willRetry, Level: []string{"level"}, Message: []string{"message"}, Error: []string{"error"},
		Stack: []string{"stack"}, Logger: []string{"logger"},
		Levels: map[string]string{"warn": "warning", "panic": "fatal"}},
	// logrus' JSONFormatter: level, msg, time; WithError's "error".
	"logrus": {Time: []string{"time"}, Retry: willRetry, Level: []string{"level"}, Message: []string{"msg"}, Error: []string{"error"},
		Logger: []string{"logger"}, Levels: map[string]string{"warn": "warning", "panic": "fatal"}},
	// log/slog's JSONHandler: time, level (DEBUG INFO WARN ERROR), msg;
	// errors by convention under "err" (or "error").
	"slog": {Time: []string{"time"}, Retry: willRetry, Level: []string{"level"}, Message: []string{"msg"}, Error: []string{"err", "error"},
		Logger: []string{"logger"}, Levels: map[string]string{"warn": "warning"}},
	// pino: numeric level, time in epoch ms, msg, err {type, message, stack}, name.
	"pino": {Time: []string{"time"}, Retry: willRetry, Level: []string{"level"}, Message: []string{"msg"}, Error: []string{"err", "error"},
		Logger: []string{"name"}, IDs: []string{"reqId"}, Levels: nodeLevels},
	// bunyan: name, hostname, pid, numeric level, msg, time, err {name, message, stack}, v.
	"bunyan": {Time: []string{"time"}, Retry: willRetry, Level: []string{"level"}, Message: []string{"msg"}, Error: []string{"err"},
		Logger: []string{"name"}, IDs: []string{"req_id"}, Levels: nodeLevels},
	// Docker's json-file driver: {"log":"<line>\n","stream":"stderr","time":...};
	// the line is the service's own, by default a the-loop line.
	"docker": {Time: []string{"time"}, Inner: "log"},
	// OpenTelemetry's log data model in OTLP JSON: timeUnixNano,
	// severityNumber (17-20 error, 21-24 fatal) and severityText, body,
	// attributes (exception.type/message/stacktrace), traceId, spanId.
	"otel": {Time: []string{"timeUnixNano", "observedTimeUnixNano"}, Level: []string{"severityNumber", "severityText"},
		Message: []string{"body"}, Error: []string{"attributes.exception.message"}, Stack: []string{"attributes.exception.stacktrace"},
		Event: []string{"eventName", "attributes.event.name"}, IDs: []string{"traceId"}, Lift: []string{"attributes"}, AnyValue: true,
		Levels: map[string]string{"1": "trace", "5": "debug", "9": "info", "13": "warning", "17": "error", "21": "fatal", "warn": "warning"}},
}

// nodeLevels are pino's and bunyan's numeric levels.
var nodeLevels = map[string]string{"10": "trace", "20": "debug", "30": "info", "40": "warning", "50": "error", "60": "fatal", "warn": "warning"}

// Presets names the formats eventLog.format accepts.
func Presets() []string {
	var names []string
	for n := range presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Mapping is eventLog.mapping: fields that override a preset's.
type Mapping struct {
	Time, Level, Message, Error, Stack, Event, Logger, IDs, Retry, Lift []string
	Levels                                                              map[string]string
	Inner                                                               string // the inner line's preset
}

// NewFormat is the preset name (the-loop when "") with m applied.
func NewFormat(name string, m Mapping) (*Format, error) {
	if name == "" {
		name = "the-loop"
	}
	p, ok := presets[name]
	if !ok {
		return nil, fmt.Errorf("unknown format %q (one of %s)", name, strings.Join(Presets(), ", "))
	}
	f := p
	f.Name = name
	for _, o := range []struct {
		dst *[]string
		v   []string
	}{{&f.Time, m.Time}, {&f.Level, m.Level}, {&f.Message, m.Message}, {&f.Error, m.Error}, {&f.Stack, m.Stack},
		{&f.Event, m.Event}, {&f.Logger, m.Logger}, {&f.IDs, m.IDs}, {&f.Retry, m.Retry}, {&f.Lift, m.Lift}} {
		if o.v != nil {
			*o.dst = o.v
		}
	}
	levels := map[string]string{}
	for k, v := range p.Levels {
		levels[k] = v
	}
	for k, v := range m.Levels {
		levels[strings.ToLower(k)] = strings.ToLower(v)
	}
	f.Levels = levels
	for k, v := range levels {
		if n, err := strconv.ParseFloat(k, 64); err == nil {
			f.numeric = append(f.numeric, levelStep{n, v})
		}
	}
	slices.SortFunc(f.numeric, func(a, b levelStep) int { return int(math.Copysign(1, a.min-b.min)) })
	if f.Inner != "" {
		inner := m.Inner
		if inner == "docker" {
			return nil, fmt.Errorf("inner format cannot be docker itself")
		}
		in, err := NewFormat(inner, Mapping{})
		if err != nil {
			return nil, fmt.Errorf("inner: %w", err)
		}
		f.InnerFormat = in
	} else if m.Inner != "" {
		return nil, fmt.Errorf("inner applies to the docker format only")
	}
	f.native = name == "the-loop" && m.isZero()
	return &f, nil
}

func (m Mapping) isZero() bool {
	return m.Time == nil && m.Level == nil && m.Message == nil && m.Error == nil && m.Stack == nil && m.Event == nil &&
		m.Logger == nil && m.IDs == nil && m.Retry == nil && m.Lift == nil && m.Levels == nil && m.Inner == ""
}

// TheLoop is the default format.
func TheLoop() *Format {
	f, _ := NewFormat("", Mapping{})
	return f
}

// CorrelationKeys are the policy's keys and the format's ids.
func (f *Format) CorrelationKeys(p Policy) []string {
	keys := slices.Clone(p.CorrelationKeys)
	for _, id := range f.IDs {
		if !slices.Contains(keys, id) {
			keys = append(keys, id)
		}
	}
	return keys
}

// DossierFields is the dossier's allow-list: the canonical fields a
// mapping fills (never its ids) and the-loop's own safe ones. Nothing else
// from a record ever leaves the machine (never work_item, cwd, delivery_id
// or any unlisted field).
var DossierFields = []string{KeyTime, KeyEvent, KeyLevel, KeyMessage, KeyLogger, "source", "gh_event", "harness", "via", "attempts", KeyRetry, "exit_code"}

// Canonical maps a decoded record onto the canonical keys, followed by its
// other fields (those named like a canonical key give way).
func (f *Format) Canonical(raw pipeline.Fields) pipeline.Fields {
	if f == nil || f.native {
		return raw
	}
	if f.Inner != "" {
		return f.inner(raw)
	}
	if f.AnyValue {
		for i := range raw {
			raw[i].Value = unwrapAnyValue(raw[i].Value)
		}
	}
	out := make(pipeline.Fields, 0, len(raw)+6)
	// used are the paths read into canonical fields: their raw copies are
	// dropped, or the dossier would take them for identities to mask (an
	// OpenTelemetry severityText "ERROR" masked in its own error text).
	var used []string
	pick := func(paths []string) (any, bool) {
		v, p, ok := firstPath(raw, paths)
		if ok {
			used = append(used, p)
		}
		return v, ok
	}
	if v, ok := pick(f.Time); ok {
		if ts, ok := timeText(v); ok {
			out = append(out, pipeline.Field{Key: KeyTime, Value: ts})
		}
	}
	for _, p := range f.Level { // each level field says the same: none stays raw
		if v, ok := lookup(raw, p); ok {
			used = append(used, p)
			if l, ok := f.level(v); ok && !slices.ContainsFunc(out, func(f pipeline.Field) bool { return f.Key == KeyLevel }) {
				out = append(out, pipeline.Field{Key: KeyLevel, Value: l})
			}
		}
	}
	msg, _ := pick(f.Message)
	msgText, _ := msg.(string)
	event, hasEvent := pick(f.Event)
	if s, ok := event.(string); hasEvent && ok && s != "" {
		out = append(out, pipeline.Field{Key: KeyEvent, Value: s})
		if msgText != "" {
			out = append(out, pipeline.Field{Key: KeyMessage, Value: msgText})
		}
	} else if msgText != "" {
		out = append(out, pipeline.Field{Key: KeyEvent, Value: msgText})
	}
	errText := ""
	if v, p, ok := firstPath(raw, f.Error); ok {
		used = append(used, p)
		errText = errorText(v)
		// The error's type beside its message (OpenTelemetry's
		// exception.type): the text names it, as errorText does for an
		// object's type.
		if base, ok := strings.CutSuffix(p, "message"); ok {
			if kind, _ := lookup(raw, base+"type"); kind != nil {
				if k, ok := kind.(string); ok && k != "" && !strings.HasPrefix(errText, k) {
					errText = k + ": " + errText
				}
			}
		}
	}
	if v, ok := pick(f.Stack); ok {
		// A stack may be text or structured (zerolog's frames): kept as JSON.
		if s := jsonText(v); s != "" && !strings.Contains(errText, s) {
			errText = strings.TrimSpace(errText + "\n" + s)
		}
	}
	if errText != "" {
		out = append(out, pipeline.Field{Key: KeyError, Value: errText})
	}
	if v, ok := pick(f.Logger); ok {
		if s, ok := v.(string); ok {
			out = append(out, pipeline.Field{Key: KeyLogger, Value: s})
		}
	}
	if v, ok := pick(f.Retry); ok {
		if b, ok := v.(bool); ok {
			out = append(out, pipeline.Field{Key: KeyRetry, Value: b})
		}
	}
	for _, p := range f.Error { // the error's type beside its message: the text names it
		if base, ok := strings.CutSuffix(p, "message"); ok {
			used = append(used, base+"type")
		}
	}
	keep := func(key string) bool {
		_, taken := out.Lookup(key)
		return !taken && !isCanonicalKey(key) && !slices.Contains(used, key)
	}
	for _, kv := range raw {
		if keep(kv.Key) && !slices.Contains(f.Lift, kv.Key) {
			out = append(out, kv)
		}
	}
	for _, path := range f.Lift {
		if obj, ok := raw.Get(path).(map[string]any); ok {
			for _, kv := range pipeline.FieldsOf(obj) {
				if keep(kv.Key) && !slices.Contains(used, path+"."+kv.Key) {
					out = append(out, kv)
				}
			}
		}
	}
	return out
}

func isCanonicalKey(k string) bool {
	switch k {
	case KeyTime, KeyLevel, KeyEvent, KeyMessage, KeyError, KeyRetry, KeyLogger:
		return true
	}
	return false
}

// inner decodes the line a wrapper (Docker) holds with the inner format;
// a line that is not JSON becomes a record of its text alone, which no
// policy selects (it has no level).
func (f *Format) inner(raw pipeline.Fields) pipeline.Fields {
	text, _ := raw.Get(f.Inner).(string)
	text = strings.TrimSpace(text)
	var out pipeline.Fields
	if strings.HasPrefix(text, "{") {
		if fields, reason := decodeLine(text); reason == "" {
			out = f.InnerFormat.Canonical(fields)
		}
	}
	if out == nil && text != "" {
		out = pipeline.Fields{{Key: KeyEvent, Value: text}}
	}
	if _, ok := out.Lookup(KeyTime); !ok {
		if v, ok := first(raw, f.Time); ok {
			if ts, ok := timeText(v); ok {
				out = append(pipeline.Fields{{Key: KeyTime, Value: ts}}, out...)
			}
		}
	}
	if s, ok := raw.Get("stream").(string); ok {
		if _, taken := out.Lookup("stream"); !taken {
			out = append(out, pipeline.Field{Key: "stream", Value: s})
		}
	}
	return out
}

// level is the canonical level of a level value.
func (f *Format) level(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		name, _ := foldCase(v)
		if l, ok := f.Levels[name]; ok {
			return l, true
		}
		return name, name != ""
	case float64:
		return f.numericLevel(v)
	}
	return "", false
}

func (f *Format) numericLevel(n float64) (string, bool) {
	level, ok := "", false
	for _, s := range f.numeric {
		if n >= s.min {
			level, ok = s.level, true
		}
	}
	return level, ok
}

// first is the value at the first of paths present in fields.
func first(fields pipeline.Fields, paths []string) (any, bool) {
	v, _, ok := firstPath(fields, paths)
	return v, ok
}

// firstPath is first, with the path it was found at.
func firstPath(fields pipeline.Fields, paths []string) (any, string, bool) {
	for _, p := range paths {
		if v, ok := lookup(fields, p); ok && v != nil {
			return v, p, true
		}
	}
	return nil, "", false
}

// lookup finds path in fields: the whole path as a key, else a key up to a
// dot holding an object in which the rest is looked up.
func lookup(fields pipeline.Fields, path string) (any, bool) {
	if v, ok := fields.Lookup(path); ok {
		return v, true
	}
	for i := 0; i < len(path); i++ {
		if path[i] != '.' {
			continue
		}
		if obj, ok := fields.Get(path[:i]).(map[string]any); ok {
			if v, ok := lookupMap(obj, path[i+1:]); ok {
				return v, true
			}
		}
	}
	return nil, false
}

func lookupMap(m map[string]any, path string) (any, bool) {
	if v, ok := m[path]; ok {
		return v, true
	}
	for i := 0; i < len(path); i++ {
		if path[i] == '.' {
			if obj, ok := m[path[:i]].(map[string]any); ok {
				if v, ok := lookupMap(obj, path[i+1:]); ok {
					return v, true
				}
			}
		}
	}
	return nil, false
}

// errorText is an error value as text: a string, or an object's type,
// message and stack (a stack that already starts with the message stands
// for both, as JavaScript's does), or the object as JSON.
func errorText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case map[string]any:
		str := func(k string) string { s, _ := v[k].(string); return s }
		msg := str("message")
		if msg == "" {
			msg = str("msg")
		}
		kind := str("type")
		if kind == "" {
			kind = str("name")
		}
		stack := str("stack")
		if stack == "" {
			stack = str("stacktrace")
		}
		text := msg
		if kind != "" && msg != "" && !strings.HasPrefix(msg, kind) {
			text = kind + ": " + msg
		}
		switch {
		case stack != "" && msg != "" && strings.Contains(stack, msg):
			return stack
		case stack != "":
			return strings.TrimSpace(text + "\n" + stack)
		case text != "":
			return text
		}
		return jsonText(v)
	case nil:
		return ""
	}
	return jsonText(v)
}

// jsonText is a value as text: a string as it is, an object or a list as
// JSON (never Go's map[...] syntax), a number or a flag as written.
func jsonText(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case map[string]any, []any:
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Sprint(v)
		}
		return string(b)
	}
	return fmt.Sprint(v)
}

// timeText is a time value as RFC 3339 text. An epoch number is read by its
// magnitude (seconds, ms, µs or ns since 1970), to the microsecond unless
// it is whole nanoseconds written as digits (OpenTelemetry's).
func timeText(v any) (string, bool) {
	var n float64
	switch v := v.(type) {
	case string:
		if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
			return t.UTC().Format(time.RFC3339Nano), true
		}
		if ns, err := strconv.ParseInt(v, 10, 64); err == nil && ns >= 1e17 {
			return time.Unix(0, ns).UTC().Format(time.RFC3339Nano), true
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return "", false
		}
		n = f
	case float64:
		n = v
	default:
		return "", false
	}
	var t time.Time
	switch {
	case n <= 0 || n >= 1e19:
		return "", false
	case n < 1e11:
		t = time.UnixMicro(int64(math.Round(n * 1e6)))
	case n < 1e14:
		t = time.UnixMicro(int64(math.Round(n * 1e3)))
	case n < 1e17:
		t = time.UnixMicro(int64(math.Round(n)))
	default:
		t = time.Unix(0, int64(n))
	}
	return t.UTC().Format(time.RFC3339Nano), true
}

// unwrapAnyValue turns OTLP JSON's AnyValue ({"stringValue":"x"}) into its
// value and a KeyValue list ([{"key":"k","value":{...}}]) into an object.
func unwrapAnyValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 1 {
			for k, x := range v {
				switch k {
				case "stringValue", "boolValue", "doubleValue", "bytesValue":
					return x
				case "intValue":
					if s, ok := x.(string); ok {
						if n, err := strconv.ParseFloat(s, 64); err == nil {
							return n
						}
					}
					return x
				case "arrayValue":
					if a, ok := x.(map[string]any); ok {
						return unwrapAnyValue(a["values"])
					}
				case "kvlistValue":
					if a, ok := x.(map[string]any); ok {
						return unwrapAnyValue(a["values"])
					}
				}
			}
		}
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = unwrapAnyValue(x)
		}
		return out
	case []any:
		obj := map[string]any{}
		for _, e := range v {
			kv, ok := e.(map[string]any)
			k, isKey := kv["key"].(string)
			if !ok || !isKey || len(kv) > 2 {
				obj = nil
				break
			}
			obj[k] = unwrapAnyValue(kv["value"])
		}
		if obj != nil && len(v) > 0 {
			return obj
		}
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = unwrapAnyValue(x)
		}
		return out
	}
	return v
}
