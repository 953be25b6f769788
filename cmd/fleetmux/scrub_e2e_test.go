package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestScrubEchoedSecretsE2E: the built binary on a private tmux server,
// with the audit store on. Seeded random secrets of many shapes (leading
// and trailing whitespace, newlines, CRLF, tabs, quotes, backslashes,
// unicode, long values) go through every tool that takes a sensitive
// argument; set_option makes tmux echo the value in its error ("unknown
// value: ...", "value is invalid: ..."), directly and inside a batch. No
// word of a secret may reach the audit records, the state file or the
// stderr log, while the client's own error still shows it (the client
// sent it).
func TestScrubEchoedSecretsE2E(t *testing.T) {
	sock := fmt.Sprintf("fleetmux-test-scrub-%d", os.Getpid())
	if out, err := exec.Command("tmux", "-L", sock, "-f", "/dev/null", "new-session", "-d", "-s", "a", "/bin/sh").CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v %s", err, out)
	}
	defer exec.Command("tmux", "-L", sock, "kill-server").Run()
	state := filepath.Join(t.TempDir(), "state.db")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.Command(binPath, "--state", state)
	cmd.Env = append(os.Environ(), "LIBTMUX_SOCKET="+sock, "LIBTMUX_SAFETY=destructive", "TMUX=", "TMUX_PANE=")
	var stderr lockedBuf
	cmd.Stderr = &stderr
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "scrub", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}

	rng := rand.New(rand.NewPCG(19, 19))
	const alnum = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789"
	var words []string
	secret := func() string {
		seps := []string{"-", " ", "\t", "\n", "\r\n", `"`, "'", `\`, "ü", "é", "🔑"}
		pads := []string{"", " ", "\n", "\r\n", "\t", "  \n"}
		var b strings.Builder
		b.WriteString(pads[rng.IntN(len(pads))])
		n := 1 + rng.IntN(3)
		if rng.IntN(8) == 0 {
			n = 60 // long
		}
		for j := 0; j < n; j++ {
			if j > 0 {
				b.WriteString(seps[rng.IntN(len(seps))])
			}
			w := make([]byte, 10)
			for i := range w {
				w[i] = alnum[rng.IntN(len(alnum))]
			}
			words = append(words, string(w))
			b.Write(w)
		}
		b.WriteString(pads[rng.IntN(len(pads))])
		return b.String()
	}
	type call struct {
		tool string
		args func(s string) map[string]any
		echo bool // tmux repeats the value in the error the client gets
	}
	calls := []call{
		{"set_option", func(s string) map[string]any { return map[string]any{"option": "status", "value": s} }, true},
		{"set_option", func(s string) map[string]any {
			return map[string]any{"option": "mode-keys", "value": s, "scope": "window"}
		}, true},
		{"set_option", func(s string) map[string]any { return map[string]any{"option": "status-left-length", "value": s} }, true},
		{"call_mutating_tools_batch", func(s string) map[string]any {
			return map[string]any{"operations": []any{map[string]any{"tool": "set_option", "arguments": map[string]any{"option": "status", "value": s}}}}
		}, true},
		{"set_environment", func(s string) map[string]any { return map[string]any{"name": "A=B", "value": s} }, false},
		{"send_keys", func(s string) map[string]any { return map[string]any{"pane_id": "%99", "keys": s} }, false},
		{"paste_text", func(s string) map[string]any { return map[string]any{"pane_id": "%99", "text": s} }, false},
		{"load_buffer", func(s string) map[string]any { return map[string]any{"content": s, "buffer_name": "x y"} }, false},
		{"run_command", func(s string) map[string]any { return map[string]any{"pane_id": "%99", "command": s} }, false},
		{"respawn_pane", func(s string) map[string]any { return map[string]any{"pane_id": "%0", "shell": s, "kill": false} }, false},
		{"create_window", func(s string) map[string]any {
			return map[string]any{"session_name": "nosuch", "environment": map[string]any{"TOKEN": s}}
		}, false},
	}
	echoed := map[string]int{}
	for i := 0; i < 8; i++ {
		for _, c := range calls {
			s := secret()
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: c.tool, Arguments: c.args(s)})
			if err != nil {
				t.Fatalf("%s: %v", c.tool, err)
			}
			b, _ := json.Marshal(res)
			if c.echo && strings.Contains(string(b), strings.Fields(s)[0][:10]) {
				echoed[c.tool]++
			}
		}
	}
	_ = cs.Close()
	audit, err := exec.Command(binPath, "audit", "--state", state, "--json", "--since", "1h", "--limit", "0").Output()
	if err != nil {
		t.Fatalf("audit: %v", err)
	}
	raw, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), "<redacted len=") || !strings.Contains(string(audit), "<redacted len=") {
		t.Fatalf("no scrubbed error reached the log or the audit:\n%s\n%s", stderr.String(), audit)
	}
	for _, w := range words {
		for where, text := range map[string]string{"audit": string(audit), "state file": string(raw), "stderr": stderr.String()} {
			if strings.Contains(text, w) {
				i := strings.Index(text, w)
				t.Fatalf("a secret's word %q reached the %s: ...%s...", w, where, text[max(0, i-120):min(len(text), i+60)])
			}
		}
	}
	// tmux echoes a value up to its first newline: the values that start
	// with one are echoed as whitespace only.
	if echoed["set_option"] < 8 || echoed["call_mutating_tools_batch"] < 2 {
		t.Fatalf("too few values echoed by tmux (the case is not exercised): %v", echoed)
	}
	t.Logf("%d secrets, echoed by tmux: %v; none in the audit, state file or log", len(calls)*8, echoed)
}
