package tmux

import (
	"errors"
	"reflect"
	"testing"

	"github.com/fleetmux/fleetmux/transport"
)

func TestPyTuple(t *testing.T) {
	cases := []struct {
		in   []string
		want string
	}{
		{[]string{"-a"}, "('-a',)"},
		{[]string{"-t", "@1"}, "('-t', '@1')"},
		{[]string{"-t", "it's"}, `('-t', "it's")`},
		{[]string{"-t", `a'b"c`}, `('-t', 'a\'b"c')`},
		{[]string{"-t", "x\ty\\"}, `('-t', 'x\ty\\')`},
	}
	for _, tc := range cases {
		if got := pyTuple(tc.in...); got != tc.want {
			t.Errorf("pyTuple(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestWithFields(t *testing.T) {
	base := []string{"a", "b"}
	cases := []struct {
		extra []string
		want  []string
	}{
		{nil, []string{"a", "b"}},
		{[]string{"b", "c", "c"}, []string{"a", "b", "c"}},
		// Anything but a plain variable name is dropped, so a filter key
		// can never inject format syntax into -F.
		{[]string{"x}#(id)#{y", "", "pane id", "ok_1"}, []string{"a", "b", "ok_1"}},
	}
	for _, tc := range cases {
		if got := withFields(base, tc.extra); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("withFields(%q) = %q, want %q", tc.extra, got, tc.want)
		}
	}
	if len(base) != 2 {
		t.Fatalf("base modified: %q", base)
	}
}

func TestTargetMissing(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{&CommandError{Sub: "list-windows", Stderr: []string{"can't find window: @9"}}, true},
		{&CommandError{Sub: "list-panes", Stderr: []string{"can't find pane: %9"}}, true},
		{&CommandError{Sub: "list-panes", Stderr: []string{"server exited unexpectedly"}}, false},
		{errors.New("can't find window"), false},
	}
	for _, tc := range cases {
		if got := targetMissing(tc.err); got != tc.want {
			t.Errorf("targetMissing(%v) = %v", tc.err, got)
		}
	}
}

// localExecutor runs on this machine through the native client (native)
// or the binary.
func localExecutor(native bool) Executor {
	if native {
		return NewExecutor(transport.NewLocal())
	}
	return execExecutor{r: transport.NewLocal()}
}
