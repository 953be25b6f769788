// Package tools holds the handlers of fleetmux's tools: the tool table
// (name, toolset, target, argument check, handler, fan-out merge) and
// one file per family (sessions, windows, panes, keys and output,
// waits, buffers, options, jobs, batches, fleet).
package tools

import (
	"context"

	"github.com/fleetmux/fleetmux/fleet/vocab"
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

// Def is everything about a tool that is not its published surface
// (name, schema, tier and annotations come from surface.json and are
// joined to the definition by name when the server is built).
type Def struct {
	Name string
	// set is the tool's toolset (see toolsets): --toolsets shows only the
	// tools of the sets it names.
	Set string
	// Check validates arguments beyond their schema, before anything is
	// resolved or run (zero: nothing to check).
	Check Checker
	// target is resolved by dispatch before run.
	Target targetKind
	Handle Handler
	// merge, when set, lets the tool run on every host a pattern ("*",
	// a glob) matches in fleet mode, merging the results with it.
	Merge mergeFunc
	// defaults overrides published parameter defaults with server
	// settings (shown in the schema and applied by validation).
	Defaults func(Settings) map[string]any
	// limited caps the response size although the reference does not mark
	// the tool response-limited.
	Limited bool
}

// Defs is every tool fleetmux serves, in the reference's order, then the
// fleet-only tools. TestToolTable checks it against the surface.
var Defs = []Def{
	// Batches run other tools through the whole pipeline.
	{Name: "call_readonly_tools_batch", Set: "batch", Handle: batchHandler(vocab.TierReadonly)},
	{Name: "call_mutating_tools_batch", Set: "batch", Handle: batchHandler(vocab.TierMutating)},
	{Name: "call_destructive_tools_batch", Set: "batch", Handle: batchHandler(vocab.TierDestructive)},

	// Server.
	{Name: "list_sessions", Set: "sessions", Target: targetServer, Handle: typed(listSessions), Merge: mergeLists},
	{Name: "list_servers", Set: "sessions", Handle: typed(listServers), Merge: mergeLists},
	{Name: "create_session", Set: "sessions", Target: targetServer, Check: checked(checkCreateSession), Handle: typed(createSession)},
	{Name: "kill_server", Set: "sessions", Target: targetServer, Handle: typed(killServer)},
	{Name: "get_server_info", Set: "sessions", Target: targetServer, Handle: typed(getServerInfo), Merge: mergeServerInfo},

	// Sessions.
	{Name: "list_windows", Set: "windows", Target: targetServer, Handle: typed(listWindows), Merge: mergeLists},
	{Name: "get_session_info", Set: "sessions", Target: targetSession, Handle: typed(getSessionInfo)},
	{Name: "create_window", Set: "windows", Target: targetServer, Check: checked(checkSpawnEnv), Handle: typed(createWindow)},
	{Name: "rename_session", Set: "sessions", Target: targetServer, Check: checked(checkRenameSession), Handle: typed(renameSession)},
	{Name: "kill_session", Set: "sessions", Target: targetServer, Check: checked(checkKillSession), Handle: typed(killSession)},
	{Name: "select_window", Set: "windows", Target: targetServer, Check: checked(checkSelectWindow), Handle: typed(selectWindow)},

	// Windows.
	{Name: "list_panes", Set: "panes", Target: targetServer, Handle: typed(listPanes), Merge: mergeLists},
	{Name: "get_window_info", Set: "windows", Target: targetWindow, Handle: typed(getWindowInfo)},
	{Name: "split_window", Set: "panes", Target: targetServer, Check: checked(checkSpawnEnv), Handle: typed(splitWindow)},
	{Name: "rename_window", Set: "windows", Target: targetServer, Handle: typed(renameWindow)},
	{Name: "kill_window", Set: "windows", Target: targetServer, Handle: typed(killWindow)},
	{Name: "select_layout", Set: "windows", Target: targetServer, Check: checked(checkLayout), Handle: typed(selectLayout)},
	{Name: "resize_window", Set: "windows", Target: targetServer, Handle: typed(resizeWindow)},
	{Name: "move_window", Set: "windows", Target: targetWindow, Handle: typed(moveWindow)},

	// Panes: keys and output.
	{Name: "send_keys", Set: "io", Target: targetServer, Handle: typed(toolSendKeys)},
	{Name: "send_keys_batch", Set: "io", Target: targetServer, Handle: typed(sendKeysBatch)},
	{Name: "run_command", Set: "io", Target: targetServer, Check: checked(checkRunCommand), Handle: typed(runCommand),
		Defaults: func(st Settings) map[string]any { return map[string]any{"suppress_history": st.SuppressHistory} }},
	{Name: "capture_pane", Set: "io", Target: targetServer, Handle: typed(toolCapturePane)},
	{Name: "capture_since", Set: "io", Target: targetServer, Check: checked(checkCaptureSince), Handle: typed(captureSince)},

	// Panes: lifecycle and layout.
	{Name: "resize_pane", Set: "panes", Target: targetServer, Check: checked(checkResizePane), Handle: typed(toolResizePane)},
	{Name: "kill_pane", Set: "panes", Target: targetServer, Handle: typed(toolKillPane)},
	{Name: "respawn_pane", Set: "panes", Target: targetServer, Check: checked(checkSpawnEnv), Handle: typed(toolRespawnPane)},
	{Name: "set_pane_title", Set: "panes", Target: targetServer, Handle: typed(toolSetPaneTitle)},
	{Name: "get_pane_info", Set: "panes", Target: targetServer, Handle: typed(toolGetPaneInfo)},
	{Name: "find_pane_by_position", Set: "panes", Target: targetWindow, Handle: typed(toolFindPaneByPosition)},
	{Name: "clear_pane", Set: "io", Target: targetServer, Handle: typed(toolClearPane)},
	{Name: "search_panes", Set: "io", Target: targetServer, Check: checked(checkSearchPattern), Handle: typed(searchPanes), Merge: mergeSearch},
	{Name: "wait_for_text", Set: "wait", Target: targetServer, Handle: typed(waitForText)},
	{Name: "snapshot_pane", Set: "io", Target: targetServer, Handle: typed(toolSnapshotPane)},
	{Name: "select_pane", Set: "panes", Target: targetServer, Check: checked(checkSelectPane), Handle: typed(toolSelectPane)},
	{Name: "swap_pane", Set: "panes", Target: targetServer, Handle: typed(toolSwapPane)},
	{Name: "pipe_pane", Set: "panes", Target: targetServer, Handle: typed(toolPipePane)},
	{Name: "display_message", Set: "io", Target: targetServer, Check: checked(checkDisplayFormat), Handle: typed(toolDisplayMessage), Limited: true},
	{Name: "enter_copy_mode", Set: "panes", Target: targetServer, Handle: typed(toolEnterCopyMode)},
	{Name: "exit_copy_mode", Set: "panes", Target: targetServer, Handle: typed(toolExitCopyMode)},
	{Name: "paste_text", Set: "io", Target: targetServer, Handle: typed(toolPasteText)},

	// Options, environment, hooks.
	{Name: "show_option", Set: "options", Target: targetServer, Check: checked(checkOptionName), Handle: typed(showOption)},
	{Name: "set_option", Set: "options", Target: targetServer, Check: checked(checkOptionName), Handle: typed(setOption)},
	{Name: "show_environment", Set: "options", Target: targetServer, Handle: typed(showEnvironment)},
	{Name: "set_environment", Set: "options", Target: targetServer, Handle: typed(setEnvironment)},

	// Channels and buffers.
	{Name: "wait_for_channel", Set: "wait", Target: targetServer, Handle: typed(waitForChannel)},
	{Name: "signal_channel", Set: "wait", Target: targetServer, Handle: typed(signalChannel)},
	{Name: "load_buffer", Set: "buffers", Target: targetServer, Handle: typed(loadBuffer)},
	{Name: "paste_buffer", Set: "buffers", Target: targetServer, Check: checked(checkBufferArg), Handle: typed(pasteBuffer)},
	{Name: "show_buffer", Set: "buffers", Target: targetServer, Check: checked(checkBufferArg), Handle: typed(showBuffer)},
	{Name: "delete_buffer", Set: "buffers", Target: targetServer, Check: checked(checkBufferArg), Handle: typed(deleteBuffer)},
	{Name: "show_hooks", Set: "hooks", Target: targetServer, Handle: typed(showHooks)},
	{Name: "show_hook", Set: "hooks", Target: targetServer, Check: checked(checkHookName), Handle: typed(showHook)},

	// Fleet mode only (surface_fleet.json).
	{Name: "list_hosts", Set: "fleet", Handle: typed(listHosts)},

	// Extensions: fleet mode or --extensions (surface_jobs.json).
	{Name: "get_job", Set: "jobs", Check: checked(checkJobID), Handle: typed(getJob)},
	{Name: "list_jobs", Set: "jobs", Check: checked(checkListJobs), Handle: typed(listJobs)},
	{Name: "cancel_job", Set: "jobs", Check: checked(checkCancelJob), Handle: typed(cancelJob)},
}

// Run checks the arguments, resolves the tool's target and runs it.
func (d *Def) Run(ctx context.Context, c *Call) (any, error) {
	if d.Check.run != nil {
		if err := d.Check.run(c); err != nil {
			return nil, err
		}
	}
	if d.Target == targetNone {
		return d.Handle.run(ctx, c)
	}
	srv, err := c.Tmux(ctx)
	if err != nil {
		return nil, err
	}
	c.srv = srv
	switch d.Target {
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
	return d.Handle.run(ctx, c)
}
