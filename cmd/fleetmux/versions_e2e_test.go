package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetmux/fleetmux/tmux/tmuxtest"
	"github.com/fleetmux/fleetmux/transport/sshtest"
)

// findJSON returns the first value named key anywhere in the JSON text
// js (depth first), as a string ("" when absent).
func findJSON(t *testing.T, js, key string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatalf("decode %s: %v", js, err)
	}
	var walk func(any) (any, bool)
	walk = func(v any) (any, bool) {
		switch v := v.(type) {
		case map[string]any:
			if x, ok := v[key]; ok {
				return x, true
			}
			for _, x := range v {
				if r, ok := walk(x); ok {
					return r, true
				}
			}
		case []any:
			for _, x := range v {
				if r, ok := walk(x); ok {
					return r, true
				}
			}
		}
		return nil, false
	}
	x, ok := walk(v)
	if !ok || x == nil {
		return ""
	}
	if s, ok := x.(string); ok {
		return s
	}
	b, _ := json.Marshal(x)
	return string(b)
}

// TestFleetMixedTmuxVersions: a fleet whose hosts run different tmux
// versions (the system's 3.3a and 3.5a built from Debian trixie's source)
// serves every tool family on each host: sessions, windows, panes, keys
// and capture, run_command, waits, options, environment, buffers, hooks,
// layout, and the kill tools.
func TestFleetMixedTmuxVersions(t *testing.T) {
	system, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(system, "-V").Output()
	if err != nil {
		t.Fatal(err)
	}
	systemVersion := strings.TrimPrefix(strings.TrimSpace(string(out)), "tmux ")
	hosts := []struct{ name, bin, version string }{
		{"sys-1", system, systemVersion},
		{"new-1", tmuxtest.Version(t, "3.5a"), "3.5a"},
	}
	env := sshtest.New(t)
	var started []*sshtest.Host
	for _, h := range hosts {
		started = append(started, env.StartHost(h.name, sshtest.HostOptions{Tmux: h.bin}))
	}
	dir := t.TempDir()
	cfg, _ := env.WriteFleetFiles(dir, started...)

	cmd := exec.Command(binPath, "--ssh-config", cfg, "--hosts", "sys-1,new-1", "--state", filepath.Join(dir, "state.db"))
	cmd.Env = append(os.Environ(), "TMUX=", "TMUX_PANE=", "LIBTMUX_SAFETY=destructive",
		fmt.Sprintf("LIBTMUX_SOCKET=fleetmux-test-versions-%d", os.Getpid()))
	cmd.Stderr = os.Stderr
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Second)
	defer cancel()
	// wait_for_text reports progress once it has read its baseline: the
	// test types the awaited text only then, so the wait sees it as new.
	progress := make(chan struct{}, 16)
	cl := sdk.NewClient(&sdk.Implementation{Name: "versions-e2e", Version: "1"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *sdk.ProgressNotificationClientRequest) {
			select {
			case progress <- struct{}{}:
			default:
			}
		},
	})
	cs, err := cl.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	c := &fleetClient{t: t, cs: cs}

	for _, h := range hosts {
		t.Run(h.name+"-tmux-"+h.version, func(t *testing.T) {
			c := &fleetClient{t: t, cs: c.cs}
			call := func(tool string, args map[string]any) string {
				t.Helper()
				args["host"] = h.name
				return c.ok(tool, args)
			}
			want := func(what, got string, frags ...string) {
				t.Helper()
				for _, f := range frags {
					if !strings.Contains(got, f) {
						t.Fatalf("%s on %s (tmux %s): %q lacks %q", what, h.name, h.version, got, f)
					}
				}
			}
			// The host runs the tmux it was given.
			srvInfo := call("get_server_info", map[string]any{})
			// list_hosts learns the version when the connection comes up.
			var hostsOut string
			for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
				if hostsOut = c.ok("list_hosts", map[string]any{}); strings.Contains(hostsOut, `"tmux_version":"`+h.version+`"`) {
					break
				}
			}
			want("list_hosts", hostsOut, `"tmux_version":"`+h.version+`"`)

			// Sessions and windows.
			sess := call("create_session", map[string]any{"session_name": "smoke", "x": 120, "y": 40})
			sid := findJSON(t, sess, "session_id")
			want("list_sessions", call("list_sessions", map[string]any{}), `"session_name":"smoke"`, `"host":"`+h.name+`"`)
			want("get_server_info", srvInfo, `"host":"`+h.name+`"`)
			want("get_session_info", call("get_session_info", map[string]any{"session_id": sid}), `"session_name":"smoke"`)
			want("rename_session", call("rename_session", map[string]any{"session_id": sid, "new_name": "smoke2"}), "smoke2")
			w1 := findJSON(t, call("list_windows", map[string]any{"session_id": sid}), "window_id")
			w2 := findJSON(t, call("create_window", map[string]any{"session_id": sid, "window_name": "second"}), "window_id")
			want("rename_window", call("rename_window", map[string]any{"window_id": w2, "new_name": "renamed"}), "renamed")
			call("select_window", map[string]any{"window_id": w1})
			want("get_window_info", call("get_window_info", map[string]any{"window_id": w1}), `"window_id":"`+w1+`"`)
			call("resize_window", map[string]any{"window_id": w1, "width": 100, "height": 30})

			// Panes.
			p1 := findJSON(t, call("list_panes", map[string]any{"window_id": w1}), "pane_id")
			p2 := findJSON(t, call("split_window", map[string]any{"pane_id": p1, "size": "8"}), "pane_id")
			call("select_layout", map[string]any{"window_id": w1, "layout": "even-vertical"})
			call("resize_pane", map[string]any{"pane_id": p2, "height": 6})
			want("set_pane_title", call("set_pane_title", map[string]any{"pane_id": p2, "title": "side"}), "side")
			call("select_pane", map[string]any{"pane_id": p1})
			want("find_pane_by_position", call("find_pane_by_position", map[string]any{"window_id": w1, "corner": "top-left"}), `"pane_id":"`+p1+`"`)
			call("swap_pane", map[string]any{"source_pane_id": p1, "target_pane_id": p2})
			want("get_pane_info", call("get_pane_info", map[string]any{"pane_id": p1}), `"pane_id":"`+p1+`"`)

			// Keys in, text out.
			// typeAndWait starts wait_for_text on pane, types keys (with
			// send_keys, or paste_text when paste) once the wait has read
			// its baseline, and requires the wait to find text; then
			// capture_pane shows it.
			typeAndWait := func(pane, keys, text string, paste bool) {
				t.Helper()
				for len(progress) > 0 {
					<-progress
				}
				type answer struct {
					res *sdk.CallToolResult
					err error
				}
				done := make(chan answer, 1)
				go func() {
					p := &sdk.CallToolParams{Name: "wait_for_text", Arguments: map[string]any{
						"host": h.name, "pane_id": pane, "patterns": []any{"^" + text}, "regex": true, "timeout": 60}}
					p.SetProgressToken("wait-" + pane)
					res, err := c.cs.CallTool(ctx, p)
					done <- answer{res, err}
				}()
				select {
				case <-progress:
				case a := <-done:
					t.Fatalf("wait_for_text on %s ended before it started waiting: %v %v", h.name, a.err, a.res)
				}
				if paste {
					call("paste_text", map[string]any{"pane_id": pane, "text": keys + "\n", "bracket": false})
				} else {
					call("send_keys", map[string]any{"pane_id": pane, "keys": keys})
				}
				a := <-done
				if a.err != nil || a.res.IsError {
					t.Fatalf("wait_for_text %q on %s (tmux %s): %v %s", text, h.name, h.version, a.err, resultText(a.res))
				}
				b, _ := json.Marshal(a.res.StructuredContent)
				want("wait_for_text", string(b), `"found":true`)
				want("capture_pane", call("capture_pane", map[string]any{"pane_id": pane}), text)
			}
			typeAndWait(p1, "echo smoke-$((6*7))", "smoke-42", false)
			want("snapshot_pane", call("snapshot_pane", map[string]any{"pane_id": p1}), "smoke-42")
			want("search_panes", call("search_panes", map[string]any{"pattern": "smoke-42"}), p1)
			cursor := findJSON(t, call("capture_since", map[string]any{"pane_id": p1}), "cursor")
			ran := call("run_command", map[string]any{"pane_id": p1, "command": "echo run-$((2*21))", "timeout": 20})
			want("run_command", ran, `"exit_status":0`, "run-42")
			want("capture_since", call("capture_since", map[string]any{"pane_id": p1, "cursor": cursor}), "run-42")
			call("send_keys_batch", map[string]any{"operations": []any{map[string]any{"pane_id": p1, "keys": "echo batch-$((1+1))"}}})
			typeAndWait(p2, "echo pasted-$((2+2))", "pasted-4", true)
			want("capture_pane batch", call("capture_pane", map[string]any{"pane_id": p1}), "batch-2")
			want("display_message", call("display_message", map[string]any{"pane_id": p1, "format_string": "#{pane_id}:#{window_id}"}), p1+":"+w1)
			call("clear_pane", map[string]any{"pane_id": p2})
			call("enter_copy_mode", map[string]any{"pane_id": p2, "scroll_up": 1})
			call("exit_copy_mode", map[string]any{"pane_id": p2})
			call("pipe_pane", map[string]any{"pane_id": p2, "output_path": filepath.Join(t.TempDir(), "pipe.log")})
			call("pipe_pane", map[string]any{"pane_id": p2})
			call("respawn_pane", map[string]any{"pane_id": p2, "kill": true})

			// Options, environment, hooks.
			call("set_option", map[string]any{"option": "@fleetmux_smoke", "value": "v-" + h.version, "scope": "session", "target": "smoke2"})
			want("show_option", call("show_option", map[string]any{"option": "@fleetmux_smoke", "scope": "session", "target": "smoke2"}), "v-"+h.version)
			call("set_option", map[string]any{"option": "display-time", "value": "1234", "scope": "session", "target": "smoke2"})
			want("show_option display-time", call("show_option", map[string]any{"option": "display-time", "scope": "session", "target": "smoke2"}), "1234")
			call("set_environment", map[string]any{"session_id": sid, "name": "FLEETMUX_SMOKE", "value": "env-ok"})
			want("show_environment", call("show_environment", map[string]any{"session_id": sid}), "env-ok")
			call("show_hooks", map[string]any{"global_": true})
			call("show_hook", map[string]any{"hook_name": "after-new-window", "global_": true})

			// Channels and buffers.
			call("signal_channel", map[string]any{"channel": "fleetmux_smoke"})
			call("wait_for_channel", map[string]any{"channel": "fleetmux_smoke", "timeout": 10})
			buf := findJSON(t, call("load_buffer", map[string]any{"content": "buffer-ok", "logical_name": "smoke"}), "buffer_name")
			want("show_buffer", call("show_buffer", map[string]any{"buffer_name": buf}), "buffer-ok")
			call("paste_buffer", map[string]any{"buffer_name": buf, "pane_id": p2})
			call("delete_buffer", map[string]any{"buffer_name": buf})

			// Batches and the kill tools.
			want("batch", call("call_readonly_tools_batch", map[string]any{"operations": []any{
				map[string]any{"tool": "list_windows", "arguments": map[string]any{"session_id": sid}},
			}}), "renamed")
			call("move_window", map[string]any{"window_id": w2, "destination_index": "7"})
			call("kill_pane", map[string]any{"pane_id": p2})
			call("kill_window", map[string]any{"window_id": w2})
			call("kill_session", map[string]any{"session_id": sid})
			if got := call("list_sessions", map[string]any{}); strings.Contains(got, "smoke2") {
				t.Fatalf("session still there after kill_session: %s", got)
			}
			call("kill_server", map[string]any{})
		})
	}
}
