package pyfmt

import (
	"encoding/json"
	"math"
	"testing"
)

func TestFloat(t *testing.T) {
	for _, tt := range []struct {
		in   float64
		want string
	}{
		{1, "1.0"}, {0.1, "0.1"}, {-2.5, "-2.5"}, {1e15, "1000000000000000.0"}, {1e16, "1e+16"},
		{1.5e16, "1.5e+16"}, {0.0001, "0.0001"}, {0.00001, "1e-05"}, {1.25e-7, "1.25e-07"},
		{123456.789, "123456.789"}, {1e100, "1e+100"}, {math.Copysign(0, -1), "-0.0"},
		{math.Inf(1), "inf"}, {math.Inf(-1), "-inf"}, {math.NaN(), "nan"}, {5e-324, "5e-324"},
	} {
		if got := Float(tt.in); got != tt.want {
			t.Errorf("Float(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestStr(t *testing.T) {
	v, err := DecodeOrdered([]byte(`[1, 2.0, "it's", "a\"b", "x'y\"z", true, null, {"k": []}, "\u00e9\u00a0\u0001\ud83d\ude00"]`))
	if err != nil {
		t.Fatal(err)
	}
	want := `[1, 2.0, "it's", 'a"b', 'x\'y"z', True, None, {'k': []}, 'é\xa0\x01😀']`
	if got := Str(v); got != want {
		t.Errorf("pyStr = %s\nwant    %s", got, want)
	}
}

func TestRepr(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"abc", "'abc'"},
		{"it's", `"it's"`},
		{`x'y"z`, `'x\'y"z'`},
		{"a\tb\n\r\\", `'a\tb\n\r\\'`},
		{"\x00\x7f\u00a0\u00e9", `'\x00\x7f\xa0é'`},
		{"\u2028\U0001F600", `'\u2028😀'`},
	} {
		if got := Repr(tc.in); got != tc.want {
			t.Errorf("Repr(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
	if got := List([]string{"tmux", "-L", "a b"}); got != "['tmux', '-L', 'a b']" {
		t.Errorf("List = %s", got)
	}
}

func TestTypeName(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want string
	}{
		{nil, "NoneType"}, {"x", "str"}, {true, "bool"}, {[]any{}, "list"},
		{map[string]any{}, "dict"}, {NewOMap(), "dict"}, {json.Number("1"), "int"},
		{json.Number("1.0"), "float"}, {json.Number("1e3"), "float"}, {1.5, "float"}, {3, "int"},
	} {
		if got := TypeName(tc.in); got != tc.want {
			t.Errorf("TypeName(%#v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// JSONQuote is json.dumps(s) with ensure_ascii: DEL and everything above
// it escaped, astral characters as surrogate pairs.
func TestJSONQuote(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain", `"plain"`},
		{"q\"b\\", `"q\"b\\"`},
		{"\b\f\n\r\t\x01", `"\b\f\n\r\t\u0001"`},
		{"\x7fé", `"\u007f\u00e9"`},
		{"😀", `"\ud83d\ude00"`},
	} {
		if got := JSONQuote(tc.in); got != tc.want {
			t.Errorf("JSONQuote(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestOMapKeepsOrder(t *testing.T) {
	v, err := DecodeOrdered([]byte(`{"b":1,"a":{"z":[1,2],"y":"<&>"},"b":2}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := Compact(v); got != `{"b":2,"a":{"z":[1,2],"y":"<&>"}}` {
		t.Errorf("round trip = %s", got)
	}
	m := v.(*OMap)
	m.Delete("b")
	if m.Len() != 1 || m.Keys()[0] != "a" || m.Has("b") {
		t.Errorf("after Delete: keys %v", m.Keys())
	}
	for _, bad := range []string{`{"a":1} x`, `{`, `[1,]`} {
		if _, err := DecodeOrdered([]byte(bad)); err == nil {
			t.Errorf("DecodeOrdered(%s): no error", bad)
		}
	}
	if _, ok := ToPlain(v).(map[string]any); !ok {
		t.Error("ToPlain did not give a map")
	}
	_ = math.Inf
}
