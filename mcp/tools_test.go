package mcp

import (
	"strings"
	"testing"

	"github.com/fleetmux/fleetmux/mcp/surface"
	"github.com/fleetmux/fleetmux/mcp/tools"
)

// TestToolTable joins the surface to the tool table: every published tool
// has exactly one definition and every definition is published.
func TestToolTable(t *testing.T) {
	specs := append(append(append([]*surface.Tool(nil), surface.Spec.Tools...), surface.Spec.FleetTools...), surface.JobTools()...)
	joined, err := joinTools(specs, tools.Defs)
	if err != nil {
		t.Fatal(err)
	}
	if len(joined) != len(specs) || len(specs) != 60 {
		t.Fatalf("%d tools joined from %d specs, want 60", len(joined), len(specs))
	}
	for _, tl := range joined {
		if tl.def.Handle.IsZero() {
			t.Errorf("%s: no handler", tl.spec.Name)
		}
		params := map[string]bool{}
		for _, p := range tl.spec.Params {
			params[p.Name] = true
		}
		// The extensions add parameters to reference tools (run_command's
		// detach, wait_for_text's stop_on_input); their handlers read them.
		for _, p := range surface.JobsSpec.Params[tl.spec.Name] {
			params[p.Name] = true
		}
		for _, name := range append(tl.def.Handle.ArgNames(), tl.def.Check.ArgNames()...) {
			if !params[name] {
				t.Errorf("%s: the handler's arguments read %q, which the tool does not take", tl.spec.Name, name)
			}
		}
		if tl.spec.NoHostParam && tl.def.Merge != nil {
			t.Errorf("%s: a tool without a host cannot fan out", tl.spec.Name)
		}
	}
}

func TestToolTableMismatch(t *testing.T) {
	specs := append([]*surface.Tool(nil), surface.Spec.Tools...)
	for _, tc := range []struct {
		name  string
		specs []*surface.Tool
		defs  []tools.Def
		want  string
	}{
		{"missing definition", specs, tools.Defs[1:], "has no definition"},
		{"extra definition", specs, append(append([]tools.Def(nil), tools.Defs...), tools.Def{Name: "nope"}), "not in the surface"},
		{"duplicate", specs, append(append([]tools.Def(nil), tools.Defs...), tools.Defs[0]), "defined twice"},
	} {
		_, err := joinTools(tc.specs, tc.defs)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
}
