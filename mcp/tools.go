package mcp

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fleetmux/fleetmux/mcp/surface"
	"github.com/fleetmux/fleetmux/mcp/tools"
)

// Toolset is a named group of tools. Options.Toolsets (--toolsets,
// FLEETMUX_TOOLSETS) shows only the tools of the named sets, so that a
// client with a cap on the number of tools can be served; a hidden tool
// behaves exactly like a tool hidden by the safety tier.
type Toolset struct {
	Name string
	// About says what the set holds, for help texts.
	About string
}

// toolsets lists every toolset, in the order help texts show them. Each
// row of tools.Defs names one of them.
var toolsets = []Toolset{
	{"sessions", "tmux servers and sessions: list, create, inspect, rename and kill them"},
	{"windows", "windows: list, create, select, inspect, rename, lay out, resize, move, kill"},
	{"panes", "panes: list, split, select, swap, resize, title, find by position, copy mode, pipe, respawn, kill"},
	{"io", "keys in and text out: send_keys, run_command, capture, snapshot, search, display_message, paste_text, clear"},
	{"wait", "waiting: wait_for_text and tmux wait-for channels"},
	{"buffers", "paste buffers: load, paste, show, delete"},
	{"options", "tmux options and environment: show and set"},
	{"hooks", "tmux hooks (read-only)"},
	{"batch", "the call_*_tools_batch tools; a batch runs only tools that are shown"},
	{"fleet", "list_hosts (fleet mode only)"},
	{"jobs", "durable jobs: get_job, list_jobs, cancel_job (fleet mode or --extensions)"},
}

// Toolsets returns the toolsets in help order.
func Toolsets() []Toolset { return append([]Toolset(nil), toolsets...) }

// ToolsetNames returns the toolset names, comma-separated, in help order.
func ToolsetNames() string {
	names := make([]string, len(toolsets))
	for i, ts := range toolsets {
		names[i] = ts.Name
	}
	return strings.Join(names, ",")
}

// ParseToolsets reads a comma-separated list of toolset names (spaces
// around names are ignored). Empty or "all" means every toolset and
// returns nil; an unknown name is an error that lists the valid ones.
func ParseToolsets(list string) ([]string, error) {
	var out []string
	all := strings.TrimSpace(list) == ""
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		switch {
		case name == "":
			continue
		case name == "all":
			all = true
			continue
		case !slices.ContainsFunc(toolsets, func(ts Toolset) bool { return ts.Name == name }):
			return nil, fmt.Errorf("unknown toolset %q; valid toolsets: %s (or all)", name, ToolsetNames())
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	if all {
		return nil, nil
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no toolset named; valid toolsets: %s (or all)", ToolsetNames())
	}
	return out, nil
}

// joinTools joins the surface's tool specs to their definitions in the
// surface's order. A spec without a definition or a definition without a
// spec is an error: it fails the package's tests and the server's start.
func joinTools(specs []*surface.Tool, defs []tools.Def) ([]*tool, error) {
	byName := make(map[string]*tools.Def, len(defs))
	for i := range defs {
		d := &defs[i]
		if _, dup := byName[d.Name]; dup {
			return nil, fmt.Errorf("mcp: tool %s defined twice", d.Name)
		}
		byName[d.Name] = d
	}
	out := make([]*tool, 0, len(specs))
	for _, ts := range specs {
		d := byName[ts.Name]
		if d == nil {
			return nil, fmt.Errorf("mcp: tool %s is in the surface but has no definition", ts.Name)
		}
		delete(byName, ts.Name)
		if !slices.ContainsFunc(toolsets, func(set Toolset) bool { return set.Name == d.Set }) {
			return nil, fmt.Errorf("mcp: tool %s: unknown toolset %q", ts.Name, d.Set)
		}
		tier, ok := ParseTier(ts.Tier)
		if !ok {
			return nil, fmt.Errorf("mcp: tool %s: bad tier %q", ts.Name, ts.Tier)
		}
		out = append(out, &tool{spec: ts, def: d, tier: tier})
	}
	for name := range byName {
		return nil, fmt.Errorf("mcp: tool %s is defined but not in the surface", name)
	}
	return out, nil
}

// tool is a definition joined to its published spec.
type tool struct {
	spec *surface.Tool
	def  *tools.Def
	tier Tier
}

// fanout reports whether the tool accepts host patterns in fleet mode.
func (t *tool) fanout() bool { return t.def.Merge != nil }

// defaults returns the server's overrides of published defaults.
func (t *tool) defaults(st Settings) map[string]any {
	if t.def.Defaults == nil {
		return nil
	}
	return t.def.Defaults(st)
}

// ToolsetOf returns the toolset of the named tool ("" for no such tool).
func ToolsetOf(name string) string {
	for i := range tools.Defs {
		if tools.Defs[i].Name == name {
			return tools.Defs[i].Set
		}
	}
	return ""
}

// ToolsetSizes returns, for each toolset, how many of its tools the
// safety tier admits; fleet counts the fleet-only tools too, extended
// the jobs tools (served in fleet mode or with --extensions). It is what
// selecting the toolset adds to tools/list.
func ToolsetSizes(safety Tier, fleet, extended bool) map[string]int {
	out := map[string]int{}
	admits := func(ts *surface.Tool) bool {
		tier, ok := ParseTier(ts.Tier)
		return ok && tier <= safety
	}
	for _, ts := range append(append([]*surface.Tool(nil), surface.Spec.Tools...), surface.Spec.FleetTools...) {
		if !admits(ts) || ts.NoHostParam && !fleet || surface.IsJobTool(ts.Name) {
			continue
		}
		out[ToolsetOf(ts.Name)]++
	}
	if fleet || extended {
		for _, jt := range surface.JobsSpec.Tools {
			if admits(&jt.Tool) {
				out[ToolsetOf(jt.Name)]++
			}
		}
	}
	return out
}
