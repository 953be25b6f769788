package mcp

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/fleetmux/fleetmux/mcp/surface"
	"github.com/fleetmux/fleetmux/mcp/tools"
)

func TestParseToolsets(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []string
		wantErr string
	}{
		{"", nil, ""},
		{"  ", nil, ""},
		{"all", nil, ""},
		{"io,all", nil, ""},
		{"io", []string{"io"}, ""},
		{" io , panes,io,", []string{"io", "panes"}, ""},
		{"fleet", []string{"fleet"}, ""},
		{",", nil, "no toolset named"},
		{"io,pane", nil, `unknown toolset "pane"; valid toolsets: sessions,windows,panes,io,wait,buffers,options,hooks,batch,fleet,jobs (or all)`},
		{"IO", nil, `unknown toolset "IO"`},
	} {
		got, err := ParseToolsets(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseToolsets(%q) = %v, %v; want error %q", tc.in, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseToolsets(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// Every toolset holds a tool, every tool is in exactly one toolset (one
// field of its row), and the sizes are what the README documents.
func TestToolsetTable(t *testing.T) {
	count := map[string]int{}
	for _, d := range tools.Defs {
		count[d.Set]++
		if ToolsetOf(d.Name) != d.Set {
			t.Errorf("ToolsetOf(%s) = %q", d.Name, ToolsetOf(d.Name))
		}
	}
	want := map[string]int{"sessions": 8, "windows": 9, "panes": 13, "io": 10, "wait": 3, "buffers": 4, "options": 4, "hooks": 2, "batch": 3, "fleet": 1, "jobs": 3}
	for _, ts := range Toolsets() {
		if count[ts.Name] != want[ts.Name] {
			t.Errorf("toolset %s has %d tools, want %d", ts.Name, count[ts.Name], want[ts.Name])
		}
		delete(count, ts.Name)
	}
	if len(count) != 0 {
		t.Errorf("tools in sets that are not in the toolset table: %v", count)
	}
	if _, err := New(Options{Toolsets: []string{"nope"}}); err == nil || !strings.Contains(err.Error(), "valid toolsets") {
		t.Errorf("New with an unknown toolset: %v", err)
	}
	defs := append([]tools.Def(nil), tools.Defs...)
	defs[0].Set = "nope"
	if _, err := joinTools(surface.Spec.Tools, defs); err == nil || !strings.Contains(err.Error(), "unknown toolset") {
		t.Errorf("joinTools with an unknown toolset: %v", err)
	}
}

// listJSON is the tools/list result of e as JSON.
func listJSON(t *testing.T, e *testEnv) string {
	t.Helper()
	res, err := e.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Naming every toolset is the same as naming none: the tool list is byte
// for byte the default one.
func TestToolsetsAllIsDefault(t *testing.T) {
	all := strings.Split(ToolsetNames(), ",")
	settings := Settings{Safety: TierMutating, SuppressHistory: true, WaitMax: 30}
	def := listJSON(t, newEnv(t, withSettings(settings)))
	named := listJSON(t, newEnv(t, withSettings(settings), func(_ *testEnv, o *Options) { o.Toolsets = all }))
	if def != named {
		t.Errorf("tools/list with every toolset named differs from the default")
	}
}

// A tool outside the selected toolsets is hidden exactly like a tool above
// the safety tier: not listed, a direct call and a batched call get the
// same answers as for a tier-hidden tool.
func TestToolsetsHideLikeTier(t *testing.T) {
	byTier := newEnv(t, withSettings(Settings{Safety: TierReadonly, SuppressHistory: true, WaitMax: 30}))
	bySet := newEnv(t, withSettings(Settings{Safety: TierDestructive, SuppressHistory: true, WaitMax: 30}), func(_ *testEnv, o *Options) {
		o.Toolsets = []string{"io", "batch"}
	})
	res, err := bySet.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
		if set := ToolsetOf(tl.Name); set != "io" && set != "batch" {
			t.Errorf("listed %s of toolset %s", tl.Name, set)
		}
	}
	if len(names) != 13 {
		t.Errorf("io and batch at the destructive tier: %d tools %v, want 13", len(names), names)
	}
	// kill_server is hidden by the tier in one server and by its toolset in
	// the other: same result, byte for byte.
	a, _ := json.Marshal(byTier.call("kill_server", nil))
	b, _ := json.Marshal(bySet.call("kill_server", nil))
	if string(a) != string(b) || !strings.Contains(string(a), "Unknown tool: 'kill_server'") {
		t.Errorf("hidden by tier: %s\nhidden by toolset: %s", a, b)
	}
	outA, _ := byTier.batch("call_readonly_tools_batch", "", batchOp("kill_server", nil))
	outB, _ := bySet.batch("call_readonly_tools_batch", "", batchOp("list_sessions", nil))
	if ta, tb := batchErrText(outA.Results[0].Error), batchErrText(outB.Results[0].Error); ta != "Unknown tool: 'kill_server'" || tb != "Unknown tool: 'list_sessions'" {
		t.Errorf("batched hidden tools: by tier %q, by toolset %q", ta, tb)
	}
	// A shown tool still works.
	bySet.ok("capture_pane", nil, nil)
}
