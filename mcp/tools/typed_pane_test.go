package tools

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/fleetmux/fleetmux/mcp/surface"
)

// paneFamilyArgs are the arguments each pane, pane layout, capture_since,
// channel and send_keys_batch handler reads from its typed struct (the
// target parameters and the Check functions read theirs from the call).
var paneFamilyArgs = map[string][]string{
	"send_keys":             {"keys", "suppress_history", "literal", "enter"},
	"paste_text":            {"text", "bracket"},
	"capture_pane":          {"start", "end", "max_lines"},
	"snapshot_pane":         {"max_lines"},
	"display_message":       {"format_string"},
	"get_pane_info":         nil,
	"kill_pane":             {"pane_id"},
	"respawn_pane":          {"environment", "suppress_persistent_history", "pane_id", "start_directory", "kill", "shell"},
	"set_pane_title":        {"title"},
	"clear_pane":            nil,
	"pipe_pane":             {"output_path", "append"},
	"resize_pane":           {"zoom", "height", "width"},
	"select_pane":           {"pane_id", "direction"},
	"swap_pane":             {"source_pane_id", "target_pane_id"},
	"find_pane_by_position": {"corner"},
	"enter_copy_mode":       {"scroll_up"},
	"exit_copy_mode":        nil,
	"capture_since":         {"max_lines", "max_bytes", "cursor", "pane_id", "session_name", "session_id", "window_id"},
	"wait_for_channel":      {"channel", "timeout"},
	"signal_channel":        {"channel"},
	"send_keys_batch":       {"operations", "on_error", "timeout"},
}

func defNamed(t *testing.T, name string) Def {
	t.Helper()
	for _, d := range Defs {
		if d.Name == name {
			return d
		}
	}
	t.Fatalf("no tool %s", name)
	return Def{}
}

func specNamed(t *testing.T, name string) *surface.Tool {
	t.Helper()
	for _, s := range surface.Spec.Tools {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no spec %s", name)
	return nil
}

// TestPaneFamilyTyped holds each handler of the family to a typed struct
// reading exactly its arguments (an untyped handler reads none).
func TestPaneFamilyTyped(t *testing.T) {
	for tool, want := range paneFamilyArgs {
		h := defNamed(t, tool).Handle
		if want == nil {
			if h.args != reflect.TypeFor[noArgs]() || h.run == nil {
				t.Errorf("%s: handler %v, want typed(…) with noArgs", tool, h.args)
			}
			continue
		}
		if got := h.ArgNames(); !slices.Equal(got, want) {
			t.Errorf("%s: reads %q, want %q", tool, got, want)
		}
	}
}

// oldPaneIntArg is the getter the pane handlers used before their typed
// structs: an int, or a finite float64 truncated; nil otherwise.
func oldPaneIntArg(a Args, name string) *int {
	switch v := a[name].(type) {
	case int:
		return &v
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
		n := int(v)
		return &n
	}
	return nil
}

// TestPaneIntArgsValidatedAsInt checks, over random inputs, that the
// validated integer arguments of the pane tools are ints or nil, so the
// *int fields (Args.Int) read what paneIntArg's float64 branch was kept
// for: a default or a JSON number arrives converted.
func TestPaneIntArgsValidatedAsInt(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 1))
	inputs := func() (any, bool) {
		n := rng.IntN(2001) - 1000
		switch rng.IntN(7) {
		case 0:
			return nil, false // absent: the default applies
		case 1:
			return nil, true
		case 2:
			return float64(n), true
		case 3:
			return json.Number(strconv.Itoa(n)), true
		case 4:
			return strconv.Itoa(n), true
		case 5:
			return rng.IntN(2) == 1, true
		}
		return n, true
	}
	tools := []string{"capture_pane", "snapshot_pane", "resize_pane", "enter_copy_mode", "capture_since"}
	for _, tool := range tools {
		spec := specNamed(t, tool)
		var ints []string
		for _, p := range spec.Params {
			if slices.Contains(p.TypeNames(), "integer") {
				ints = append(ints, p.Name)
			}
		}
		if len(ints) == 0 {
			t.Fatalf("%s: no integer parameter", tool)
		}
		for range 200 {
			raw := map[string]any{}
			for _, name := range ints {
				if v, ok := inputs(); ok {
					raw[name] = v
				}
			}
			out, err := surface.Validate(spec, raw, nil, nil)
			if err != nil {
				t.Fatalf("%s %v: %v", tool, raw, err)
			}
			a := Args(out)
			for _, name := range ints {
				switch v := a[name].(type) {
				case nil, int:
				default:
					t.Fatalf("%s %v: %s validated as %T", tool, raw, name, v)
				}
				if got, old := a.Int(name), oldPaneIntArg(a, name); !reflect.DeepEqual(got, old) {
					t.Fatalf("%s %v: %s reads %v, paneIntArg read %v", tool, raw, name, got, old)
				}
			}
		}
	}
}
