package mcp

import (
	"context"
	"fmt"
	"github.com/fleetmux/fleetmux/mcp/surface"
	"slices"
	"strings"
)

// targetKind is what a tool acts on. Dispatch resolves it before the
// handler runs, so a handler starts with its tmux server and target ready
// (Call.srv, Call.session, Call.window, Call.pane).
type targetKind int

const (
	// targetNone: the handler needs no tmux server (batches, list_hosts)
	// or picks servers itself (list_servers).
	targetNone targetKind = iota
	// targetServer: the tmux server of socket_name (or LIBTMUX_SOCKET)
	// on the call's host. Handlers that resolve their own target after
	// argument checks use this kind.
	targetServer
	// targetSession: the server plus the session named by session_name
	// or session_id.
	targetSession
	// targetWindow: the server plus the window named by window_id,
	// window_index and the session parameters.
	targetWindow
	// targetPane: the server plus the pane named by pane_id or the
	// session and window parameters.
	targetPane
)

// mergeFunc merges the results of a listing tool run on several hosts.
type mergeFunc func(outs []any) (any, error)

// toolDef is everything about a tool that is not its published surface
// (name, schema, tier and annotations come from surface.json and are
// joined to the definition by name when the server is built).
type toolDef struct {
	name string
	// set is the tool's toolset (see toolsets): --toolsets shows only the
	// tools of the sets it names.
	set string
	// check validates arguments beyond their schema, before anything is
	// resolved or run (nil: nothing to check).
	check func(c *Call) error
	// target is resolved by dispatch before run.
	target targetKind
	run    handlerFunc
	// merge, when set, lets the tool run on every host a pattern ("*",
	// a glob) matches in fleet mode, merging the results with it.
	merge mergeFunc
	// defaults overrides published parameter defaults with server
	// settings (shown in the schema and applied by validation).
	defaults func(Settings) map[string]any
	// limited caps the response size although the anchor does not mark
	// the tool response-limited.
	limited bool
}

type handlerFunc func(ctx context.Context, c *Call) (any, error)

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
// row of toolDefs names one of them.
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

// toolDefs is every tool fleetmux serves, in the anchor's order, then the
// fleet-only tools. TestToolTable checks it against the surface.
var toolDefs = []toolDef{
	// Batches run other tools through the whole pipeline.
	{name: "call_readonly_tools_batch", set: "batch", run: batchHandler(TierReadonly)},
	{name: "call_mutating_tools_batch", set: "batch", run: batchHandler(TierMutating)},
	{name: "call_destructive_tools_batch", set: "batch", run: batchHandler(TierDestructive)},

	// Server.
	{name: "list_sessions", set: "sessions", target: targetServer, run: listSessions, merge: mergeLists},
	{name: "list_servers", set: "sessions", run: listServers, merge: mergeLists},
	{name: "create_session", set: "sessions", target: targetServer, check: checkCreateSession, run: createSession},
	{name: "kill_server", set: "sessions", target: targetServer, run: killServer},
	{name: "get_server_info", set: "sessions", target: targetServer, run: getServerInfo, merge: mergeServerInfo},

	// Sessions.
	{name: "list_windows", set: "windows", target: targetServer, run: listWindows, merge: mergeLists},
	{name: "get_session_info", set: "sessions", target: targetSession, run: getSessionInfo},
	{name: "create_window", set: "windows", target: targetServer, check: checkSpawnEnv, run: createWindow},
	{name: "rename_session", set: "sessions", target: targetServer, check: checkRenameSession, run: renameSession},
	{name: "kill_session", set: "sessions", target: targetServer, check: checkKillSession, run: killSession},
	{name: "select_window", set: "windows", target: targetServer, check: checkSelectWindow, run: selectWindow},

	// Windows.
	{name: "list_panes", set: "panes", target: targetServer, run: listPanes, merge: mergeLists},
	{name: "get_window_info", set: "windows", target: targetWindow, run: getWindowInfo},
	{name: "split_window", set: "panes", target: targetServer, check: checkSpawnEnv, run: splitWindow},
	{name: "rename_window", set: "windows", target: targetServer, run: renameWindow},
	{name: "kill_window", set: "windows", target: targetServer, run: killWindow},
	{name: "select_layout", set: "windows", target: targetServer, check: checkLayout, run: selectLayout},
	{name: "resize_window", set: "windows", target: targetServer, run: resizeWindow},
	{name: "move_window", set: "windows", target: targetWindow, run: moveWindow},

	// Panes: keys and output.
	{name: "send_keys", set: "io", target: targetServer, run: toolSendKeys},
	{name: "send_keys_batch", set: "io", target: targetServer, run: sendKeysBatch},
	{name: "run_command", set: "io", target: targetServer, check: checkRunCommand, run: runCommand,
		defaults: func(st Settings) map[string]any { return map[string]any{"suppress_history": st.SuppressHistory} }},
	{name: "capture_pane", set: "io", target: targetServer, run: toolCapturePane},
	{name: "capture_since", set: "io", target: targetServer, check: checkCaptureSince, run: captureSince},

	// Panes: lifecycle and layout.
	{name: "resize_pane", set: "panes", target: targetServer, check: checkResizePane, run: toolResizePane},
	{name: "kill_pane", set: "panes", target: targetServer, run: toolKillPane},
	{name: "respawn_pane", set: "panes", target: targetServer, check: checkSpawnEnv, run: toolRespawnPane},
	{name: "set_pane_title", set: "panes", target: targetServer, run: toolSetPaneTitle},
	{name: "get_pane_info", set: "panes", target: targetPane, run: toolGetPaneInfo},
	{name: "find_pane_by_position", set: "panes", target: targetWindow, run: toolFindPaneByPosition},
	{name: "clear_pane", set: "io", target: targetServer, run: toolClearPane},
	{name: "search_panes", set: "io", target: targetServer, check: checkSearchPattern, run: searchPanes, merge: mergeSearch},
	{name: "wait_for_text", set: "wait", target: targetServer, run: waitForText},
	{name: "snapshot_pane", set: "io", target: targetServer, run: toolSnapshotPane},
	{name: "select_pane", set: "panes", target: targetServer, check: checkSelectPane, run: toolSelectPane},
	{name: "swap_pane", set: "panes", target: targetServer, run: toolSwapPane},
	{name: "pipe_pane", set: "panes", target: targetServer, run: toolPipePane},
	{name: "display_message", set: "io", target: targetServer, check: checkDisplayFormat, run: toolDisplayMessage, limited: true},
	{name: "enter_copy_mode", set: "panes", target: targetServer, run: toolEnterCopyMode},
	{name: "exit_copy_mode", set: "panes", target: targetServer, run: toolExitCopyMode},
	{name: "paste_text", set: "io", target: targetServer, run: toolPasteText},

	// Options, environment, hooks.
	{name: "show_option", set: "options", target: targetServer, check: checkOptionName, run: showOption},
	{name: "set_option", set: "options", target: targetServer, check: checkOptionName, run: setOption},
	{name: "show_environment", set: "options", target: targetServer, run: showEnvironment},
	{name: "set_environment", set: "options", target: targetServer, run: setEnvironment},

	// Channels and buffers.
	{name: "wait_for_channel", set: "wait", target: targetServer, run: waitForChannel},
	{name: "signal_channel", set: "wait", target: targetServer, run: signalChannel},
	{name: "load_buffer", set: "buffers", target: targetServer, run: loadBuffer},
	{name: "paste_buffer", set: "buffers", target: targetServer, check: checkBufferArg, run: pasteBuffer},
	{name: "show_buffer", set: "buffers", target: targetServer, check: checkBufferArg, run: showBuffer},
	{name: "delete_buffer", set: "buffers", target: targetServer, check: checkBufferArg, run: deleteBuffer},
	{name: "show_hooks", set: "hooks", target: targetServer, run: showHooks},
	{name: "show_hook", set: "hooks", target: targetServer, check: checkHookName, run: showHook},

	// Fleet mode only (surface_fleet.json).
	{name: "list_hosts", set: "fleet", run: listHosts},

	// Extensions: fleet mode or --extensions (surface_jobs.json).
	{name: "get_job", set: "jobs", check: checkJobID, run: getJob},
	{name: "list_jobs", set: "jobs", check: checkListJobs, run: listJobs},
	{name: "cancel_job", set: "jobs", check: checkJobID, run: cancelJob},
}

// joinTools joins the surface's tool specs to their definitions in the
// surface's order. A spec without a definition or a definition without a
// spec is an error: it fails the package's tests and the server's start.
func joinTools(specs []*surface.Tool, defs []toolDef) ([]*tool, error) {
	byName := make(map[string]*toolDef, len(defs))
	for i := range defs {
		d := &defs[i]
		if _, dup := byName[d.name]; dup {
			return nil, fmt.Errorf("mcp: tool %s defined twice", d.name)
		}
		byName[d.name] = d
	}
	out := make([]*tool, 0, len(specs))
	for _, ts := range specs {
		d := byName[ts.Name]
		if d == nil {
			return nil, fmt.Errorf("mcp: tool %s is in the surface but has no definition", ts.Name)
		}
		delete(byName, ts.Name)
		if !slices.ContainsFunc(toolsets, func(set Toolset) bool { return set.Name == d.set }) {
			return nil, fmt.Errorf("mcp: tool %s: unknown toolset %q", ts.Name, d.set)
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
	def  *toolDef
	tier Tier
}

// fanout reports whether the tool accepts host patterns in fleet mode.
func (t *tool) fanout() bool { return t.def.merge != nil }

// defaults returns the server's overrides of published defaults.
func (t *tool) defaults(st Settings) map[string]any {
	if t.def.defaults == nil {
		return nil
	}
	return t.def.defaults(st)
}

// run checks the arguments, resolves the tool's target and runs it.
func (t *tool) run(ctx context.Context, c *Call) (any, error) {
	if t.def.check != nil {
		if err := t.def.check(c); err != nil {
			return nil, err
		}
	}
	if t.def.target == targetNone {
		return t.def.run(ctx, c)
	}
	srv, err := c.Tmux(ctx)
	if err != nil {
		return nil, err
	}
	c.srv = srv
	switch t.def.target {
	case targetSession:
		c.session, err = c.resolveSession(ctx, srv)
	case targetWindow:
		c.window, err = c.resolveWindow(ctx, srv)
	case targetPane:
		c.pane, err = c.resolvePane(ctx, srv)
	}
	if err != nil {
		return nil, err
	}
	return t.def.run(ctx, c)
}

// ToolsetOf returns the toolset of the named tool ("" for no such tool).
func ToolsetOf(name string) string {
	for i := range toolDefs {
		if toolDefs[i].name == name {
			return toolDefs[i].set
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
