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

	"github.com/fleetmux/fleetmux/transport/sshtest"
)

// TestScrubEchoedSecretsFleetE2E: the fleet half of
// TestScrubEchoedSecretsE2E. Secrets that tmux echoes back in its error
// travel to a host over a real sshd, fanned out over this machine and the
// host, and inside a batch aimed at the host; no word of them reaches the
// audit records, the state file or the stderr log.
func TestScrubEchoedSecretsFleetE2E(t *testing.T) {
	env := sshtest.New(t)
	h1 := env.StartHost("h1", sshtest.HostOptions{})
	dir := t.TempDir()
	cfg, _ := env.WriteFleetFiles(dir, h1)
	sock := fmt.Sprintf("fleetmux-test-scrubfleet-%d", os.Getpid())
	if out, err := exec.Command("tmux", "-L", sock, "-f", "/dev/null", "new-session", "-d", "-s", "a", "/bin/sh").CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v %s", err, out)
	}
	defer exec.Command("tmux", "-L", sock, "kill-server").Run()
	state := filepath.Join(dir, "state.db")
	cmd := exec.Command(binPath, "--ssh-config", cfg, "--hosts", "h1", "--state", state)
	cmd.Env = append(os.Environ(), "LIBTMUX_SOCKET="+sock, "TMUX=", "TMUX_PANE=", "LIBTMUX_SAFETY=destructive")
	var stderr lockedBuf
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "scrub-fleet", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &fleetClient{t: t, cs: cs}
	c.ok("create_session", map[string]any{"host": "h1", "session_name": "s"})

	rng := rand.New(rand.NewPCG(22, 19))
	const alnum = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789"
	var words []string
	secret := func() string {
		pads := []string{"", " ", "\n", "\t", "\r\n"}
		w := make([]byte, 12)
		for i := range w {
			w[i] = alnum[rng.IntN(len(alnum))]
		}
		words = append(words, string(w))
		return string(w) + pads[rng.IntN(len(pads))] + "tail" + pads[rng.IntN(len(pads))]
	}
	setStatus := func(s string) map[string]any { return map[string]any{"option": "status", "value": s} }
	echoed := 0
	calls := []struct {
		tool string
		args func(secret string) map[string]any
	}{
		{"set_option", func(v string) map[string]any { return mergeArgs(setStatus(v), "host", "h1") }},
		{"set_option", func(v string) map[string]any { return mergeArgs(setStatus(v), "host", []any{"local", "h1"}) }},
		{"call_mutating_tools_batch", func(v string) map[string]any {
			return map[string]any{"host": "h1", "operations": []any{map[string]any{"tool": "set_option", "arguments": setStatus(v)}}}
		}},
	}
	for i := 0; i < 6; i++ {
		for _, call := range calls {
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: call.tool, Arguments: call.args(secret())})
			if err != nil {
				t.Fatalf("%s: %v", call.tool, err)
			}
			b, _ := json.Marshal(res)
			if strings.Contains(string(b), words[len(words)-1]) {
				echoed++
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
	if !strings.Contains(string(audit), "<redacted len=") {
		t.Fatalf("no scrubbed error reached the audit:\n%s", audit)
	}
	for _, w := range words {
		for where, text := range map[string]string{"audit": string(audit), "state file": string(raw), "stderr": stderr.String()} {
			if i := strings.Index(text, w); i >= 0 {
				t.Fatalf("a secret's word %q reached the %s: ...%s...", w, where, text[max(0, i-120):min(len(text), i+60)])
			}
		}
	}
	if echoed < 18 {
		t.Fatalf("too few values echoed by tmux (%d): the case is not exercised", echoed)
	}
	t.Logf("%d secrets over h1, fanned out and batched on h1, %d echoed; none in the audit, state file or log", len(words), echoed)
}

// mergeArgs returns args with key set to v.
func mergeArgs(args map[string]any, key string, v any) map[string]any {
	args[key] = v
	return args
}
