package tools

import (
	"reflect"
	"testing"
)

// TestWaitForTextArgsPatternsGiven holds the decoded Patterns to what
// waitForText read before it was typed: a list given (even empty) is
// non-nil, an absent or null one nil, so "patterns must be a non-empty
// list" still fires for [] and only for [].
func TestWaitForTextArgsPatternsGiven(t *testing.T) {
	for _, tc := range []struct {
		name string
		args Args
	}{
		{"absent", Args{}},
		{"null", Args{"patterns": nil}},
		{"empty list", Args{"patterns": []any{}}},
		{"one pattern", Args{"patterns": []any{"ok"}}},
		{"empty pattern", Args{"patterns": []any{""}}},
	} {
		var a waitForTextArgs
		planFor(reflect.TypeFor[waitForTextArgs]()).fill(tc.args, reflect.ValueOf(&a).Elem())
		_, oldGiven := tc.args["patterns"].([]any)
		if got := a.Patterns != nil; got != oldGiven {
			t.Errorf("%s: patterns given %v, the old read %v", tc.name, got, oldGiven)
		}
		if old := tc.args.Strings("patterns"); !reflect.DeepEqual(a.Patterns, old) {
			t.Errorf("%s: patterns %#v, the old read %#v", tc.name, a.Patterns, old)
		}
	}
}
