package mcp

import (
	"github.com/fleetmux/fleetmux/mcp/surface"
	"strings"
	"testing"
)

// TestToolTable joins the surface to the tool table: every published tool
// has exactly one definition and every definition is published.
func TestToolTable(t *testing.T) {
	specs := append(append(append([]*surface.Tool(nil), surface.Spec.Tools...), surface.Spec.FleetTools...), surface.JobTools()...)
	tools, err := joinTools(specs, toolDefs)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != len(specs) || len(specs) != 60 {
		t.Fatalf("%d tools joined from %d specs, want 60", len(tools), len(specs))
	}
	for _, tl := range tools {
		if tl.def.run == nil {
			t.Errorf("%s: no handler", tl.spec.Name)
		}
		if tl.spec.NoHostParam && tl.def.merge != nil {
			t.Errorf("%s: a tool without a host cannot fan out", tl.spec.Name)
		}
	}
}

func TestToolTableMismatch(t *testing.T) {
	specs := append([]*surface.Tool(nil), surface.Spec.Tools...)
	for _, tc := range []struct {
		name  string
		specs []*surface.Tool
		defs  []toolDef
		want  string
	}{
		{"missing definition", specs, toolDefs[1:], "has no definition"},
		{"extra definition", specs, append(append([]toolDef(nil), toolDefs...), toolDef{name: "nope"}), "not in the surface"},
		{"duplicate", specs, append(append([]toolDef(nil), toolDefs...), toolDefs[0]), "defined twice"},
	} {
		_, err := joinTools(tc.specs, tc.defs)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
}
