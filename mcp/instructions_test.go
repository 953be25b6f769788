package mcp

import (
	"strings"
	"testing"
)

func TestInstructions(t *testing.T) {
	markers := []string{"tmux hierarchy", "pane_id", "Targeted tmux tools accept", "list_servers", "extra_socket_paths",
		"TRIGGERS:", "ANTI-TRIGGERS:", "'%'", "'@'", "'$'", "VS Code", "i3", "Jupyter", "clarifying question",
		"metadata vs content", "search_panes", "snapshot_pane", "capture_since", "display_message",
		"patterns=null", "stop=", "send_keys_batch", "HOOKS ARE READ-ONLY", "show_hooks", "tmux config file",
		"survive process death", "BUFFERS", "load_buffer", "paste_buffer", "delete_buffer", "BufferRef",
		"list_buffers", "clipboard history", "LIBTMUX_SAFETY"}
	for _, tier := range []Tier{TierReadonly, TierMutating, TierDestructive} {
		for _, hist := range []bool{true, false} {
			for _, pane := range []struct{ pane, tmux string }{{"", ""}, {"%42", "/tmp/tmux-0/default,1,$0"}, {"%99", "/tmp/tmux-0/dev-prod,1,$0"}, {"%1", ""}} {
				text, err := buildInstructions(Settings{Safety: tier, SuppressHistory: hist}, pane.pane, pane.tmux)
				if err != nil {
					t.Fatal(err)
				}
				if len(text) > instructionsMaxBytes {
					t.Errorf("%s/%v/%s: %d bytes", tier, hist, pane.pane, len(text))
				}
				for _, m := range markers {
					if !strings.Contains(text, m) {
						t.Errorf("instructions lack %q", m)
					}
				}
				if !strings.Contains(text, "Safety level: "+tier.String()) {
					t.Errorf("no safety level")
				}
				want := "suppress_history=true"
				if !hist {
					want = "suppress_history=false"
				}
				if !strings.Contains(text, want) {
					t.Errorf("history sentence %q missing", want)
				}
				if strings.Contains(text, "Readonly mode:") != (tier == TierReadonly) {
					t.Errorf("readonly hint at %s", tier)
				}
				hasCtx := strings.Contains(text, "is_caller=true") && strings.Contains(text, "whoami tool")
				if hasCtx != (pane.pane != "") {
					t.Errorf("agent context present=%v for pane %q", hasCtx, pane.pane)
				}
				if pane.tmux != "" && !strings.Contains(text, "(socket ") {
					t.Errorf("socket name missing for %q", pane.tmux)
				}
			}
		}
	}
	i, j, k := strings.Index(baseInstructions(), "run_command"), strings.Index(baseInstructions(), "wait_for_channel"), strings.Index(baseInstructions(), "wait_for_text")
	if !(i < j && j < k) {
		t.Errorf("run_command, wait_for_channel, wait_for_text out of order: %d %d %d", i, j, k)
	}
	// An oversized socket name is dropped; the pane context stays.
	text, err := buildInstructions(Settings{Safety: TierReadonly}, "%5", "/tmp/"+strings.Repeat("界", 2048)+",1,$0")
	if err != nil || strings.Contains(text, "(socket") || !strings.Contains(text, "pane %5") {
		t.Fatalf("oversized socket: %v %q", err, text[len(text)-200:])
	}
	// A pane id too long to fit omits the paragraph.
	text, err = buildInstructions(Settings{Safety: TierReadonly}, "%"+strings.Repeat("9", 4096), "")
	if err != nil || strings.Contains(text, "Agent context") {
		t.Fatalf("oversized pane: %v", err)
	}
}

func baseInstructions() string { return strings.Join(instructionSegments, "\n\n") }
