package tools

import (
	"reflect"
	"testing"
)

func TestSnakeCase(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"X", "x"},
		{"SessionID", "session_id"},
		{"MaxLines", "max_lines"},
		{"PaneID", "pane_id"},
		{"HTTPServer", "http_server"},
		{"Key2Name", "key2_name"},
	} {
		if got := snakeCase(tc.in); got != tc.want {
			t.Errorf("snakeCase(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

type testTarget struct {
	SessionName, SessionID *string
}

type testArgs struct {
	testTarget
	Keys     string
	Enter    bool
	Lines    *int
	Count    int
	Timeout  *float64
	Patterns []string
	Filters  any
	Renamed  *string `arg:"new_name"`
}

func TestDecodeArgs(t *testing.T) {
	str := func(s string) *string { return &s }
	num := func(n int) *int { return &n }
	flt := func(f float64) *float64 { return &f }
	for _, tc := range []struct {
		name string
		args Args
		want testArgs
	}{
		{"absent", Args{}, testArgs{}},
		{"nulls", Args{"session_name": nil, "lines": nil, "patterns": nil, "filters": nil}, testArgs{}},
		{"values", Args{
			"session_name": "s", "session_id": "$1", "keys": "ls", "enter": true, "lines": 3, "count": 2,
			"timeout": 4, "patterns": []any{"a", "b"}, "filters": map[string]any{"k": "v"}, "new_name": "n",
		}, testArgs{
			testTarget: testTarget{SessionName: str("s"), SessionID: str("$1")}, Keys: "ls", Enter: true,
			Lines: num(3), Count: 2, Timeout: flt(4), Patterns: []string{"a", "b"},
			Filters: map[string]any{"k": "v"}, Renamed: str("n"),
		}},
		{"float timeout", Args{"timeout": 0.5}, testArgs{Timeout: flt(0.5)}},
		{"wrong types stay zero", Args{"keys": 1, "enter": "yes", "lines": "3", "count": 1.5, "timeout": "x"}, testArgs{}},
	} {
		var got testArgs
		planFor(reflect.TypeFor[testArgs]()).fill(tc.args, reflect.ValueOf(&got).Elem())
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
	want := []string{"session_name", "session_id", "keys", "enter", "lines", "count", "timeout", "patterns", "filters", "new_name"}
	if got := planFor(reflect.TypeFor[testArgs]()).names(); !reflect.DeepEqual(got, want) {
		t.Errorf("names %v, want %v", got, want)
	}
}

func TestDecodeArgsRefusesUnsupportedTypes(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("a map field did not panic")
		}
	}()
	planFor(reflect.TypeFor[struct{ M map[string]int }]())
}

// BenchmarkArgsOf is the cost a call pays to decode its arguments: the
// largest struct (search_panes, ten fields) from a full argument map.
func BenchmarkArgsOf(b *testing.B) {
	args := Args{"pattern": "x", "regex": true, "match_case": false, "session_name": "s", "session_id": nil,
		"content_start": -10, "content_end": nil, "max_matched_lines_per_pane": 50, "offset": 0, "limit": 100}
	for b.Loop() {
		c := &Call{Args: args}
		_ = argsOf[searchPanesArgs](c)
	}
}
