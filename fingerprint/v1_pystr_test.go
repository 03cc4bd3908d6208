package fingerprint

import "testing"

// Python 3.11's repr() of each float and str() of each value (the values
// printed by python3 itself), which LegacyOf hashes for a non-string error.
func TestPyStrMatchesPython(t *testing.T) {
	floats := []struct {
		f    float64
		want string
	}{
		{0.1, "0.1"}, {1e-05, "1e-05"}, {0.0001, "0.0001"}, {1e+22, "1e+22"}, {5e-324, "5e-324"},
		{1.7976931348623157e+308, "1.7976931348623157e+308"}, {123456789.123, "123456789.123"},
		{1000000000000000.5, "1000000000000000.5"}, {-2.5e-07, "-2.5e-07"}, {1.5e+16, "1.5e+16"},
		{9999999999999998.0, "9999999999999998.0"}, {0.30000000000000004, "0.30000000000000004"},
		{1e+16, "1e+16"}, {1.2345e-06, "1.2345e-06"},
	}
	for _, c := range floats {
		if got := pyFloat(c.f); got != c.want {
			t.Errorf("pyFloat(%v) = %q, want Python's %q", c.f, got, c.want)
		}
	}
	values := []struct {
		v    any
		want string
	}{
		{map[string]any{"k": `it's "q"`}, `{'k': 'it\'s "q"'}`},
		{[]any{"a\u0085b", "\u00ad", "\U0001F600", "\ue000", "\x7f"}, `['a\x85b', '\xad', '😀', '\ue000', '\x7f']`},
		{nil, "None"}, {true, "True"}, {137.0, "137"}, {1.5, "1.5"}, {[]any{}, "[]"}, {map[string]any{}, "{}"},
	}
	for _, c := range values {
		if got := pyStr(c.v); got != c.want {
			t.Errorf("pyStr(%#v) = %q, want Python's %q", c.v, got, c.want)
		}
	}
}
