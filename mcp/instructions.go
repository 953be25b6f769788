package mcp

import (
	"fmt"
	"path/filepath"
	"strings"
)

const instructionsMaxBytes = 2048

// The fixed segments of the server instructions, in our
// words. Tests pin the markers agents and the reference's suite look for.
var instructionSegments = []string{
	"tmux hierarchy: server > session > window > pane. Target panes by pane_id (e.g. '%1'); ids are stable, names and indexes are not. Targeted tmux tools accept socket_name (default: LIBTMUX_SOCKET); list_servers finds sockets under TMUX_TMPDIR plus any extra_socket_paths.",
	"TRIGGERS: 'pane', 'split', 'this terminal', 'send keys', 'scrollback', 'copy mode' and ids with '%', '@' or '$' mean tmux. ANTI-TRIGGERS: browser tabs, editor splits (VS Code, Cursor, Neovim), window managers (i3, sway, Hyprland), Jupyter cells, login or HTTP sessions. If 'window' or 'session' is ambiguous, ask one clarifying question.",
	"metadata vs content: list_* tools match names and ids only. To find text on screen use search_panes, capture_since or capture_pane.",
	"Reading: snapshot_pane gives content plus cursor and mode in one call; capture_since tails a pane with a cursor; display_message evaluates tmux formats.",
	"Wait, don't poll: run_command runs a command and returns its exit status and output; wait_for_channel blocks on a tmux wait-for channel you signal; wait_for_text waits for output you did not author (patterns=null for any output, stop=[...] to bail early); send_keys_batch sends raw input; capture_since follows output.",
	"HOOKS ARE READ-ONLY: show_hooks and show_hook only. A hook written by an agent would survive process death of this server; put hooks in the tmux config file.",
	"BUFFERS: load_buffer stages text and returns a BufferRef, paste_buffer delivers it, delete_buffer removes it. There is no list_buffers because buffers may hold clipboard history.",
}

// buildInstructions composes the instructions and applies the byte budget.
func buildInstructions(s Settings, tmuxPane, tmuxEnv string) (string, error) {
	text := strings.Join(instructionSegments, "\n\n")
	text += fmt.Sprintf("\n\nSafety level: %s (values: readonly, mutating, destructive). Set LIBTMUX_SAFETY; off-tier tools are hidden.", s.Safety)
	text += fmt.Sprintf("\n\nsuppress_history=%t: run_command inherits; raw send/batch/paste and spawn do not.", s.SuppressHistory)
	if s.Safety == TierReadonly {
		text += "\n\nReadonly mode: inspect with snapshot_pane, list_panes and search_panes."
	}
	if len(text) > instructionsMaxBytes {
		return "", fmt.Errorf("mcp: server instructions need %d bytes, over the %d-byte budget", len(text), instructionsMaxBytes)
	}
	if tmuxPane == "" {
		return text, nil
	}
	para := func(pane, socket string) string {
		sock := ""
		if socket != "" {
			sock = " (socket " + socket + ")"
		}
		return "\n\nAgent context: this MCP runs inside tmux pane " + pane + sock + ". Tool results mark is_caller=true; filter list_panes for it to answer 'which pane am I in?' (no whoami tool)."
	}
	socket := ""
	if tmuxEnv != "" {
		if first := strings.SplitN(tmuxEnv, ",", 2)[0]; first != "" {
			socket = filepath.Base(first)
		}
	}
	for _, p := range []string{para(tmuxPane, socket), para(tmuxPane, "")} {
		if len(text)+len(p) <= instructionsMaxBytes {
			return text + p, nil
		}
	}
	if len(text)+len(para("%000", "")) <= instructionsMaxBytes {
		return text, nil
	}
	return "", fmt.Errorf("mcp: agent-context paragraph cannot fit the instructions budget")
}
