package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetmux/fleetmux/fleet"
	"github.com/fleetmux/fleetmux/mcp"
	"github.com/fleetmux/fleetmux/transport/sshtest"
)

// inprocFleet serves the hosts pattern selects from cfgPath (no local
// host) at the given tier and connects an in-process MCP client.
func inprocFleet(tb testing.TB, cfgPath, pattern string, safety mcp.Tier) *sdk.ClientSession {
	tb.Helper()
	inv, err := fleet.LoadInventory(fleet.InventoryOptions{UserConfig: cfgPath})
	if err != nil {
		tb.Fatal(err)
	}
	sel, _ := fleet.ParseSelection(pattern)
	f, err := fleet.New(fleet.Options{Inventory: inv, Selection: sel, NoLocal: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { f.Close() })
	srv, err := mcp.New(mcp.Options{Settings: mcp.Settings{Safety: safety, SuppressHistory: true, WaitMax: 30}, Backend: fleetBackend{f: f},
		Getenv: func(k string) string {
			if k == "TMUX" || k == "TMUX_PANE" {
				return ""
			}
			return os.Getenv(k)
		}})
	if err != nil {
		tb.Fatal(err)
	}
	cs, done, err := srv.InProcess(context.Background(), "differ")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(done)
	return cs
}

func callTool(tb testing.TB, cs *sdk.ClientSession, name string, args map[string]any) (string, map[string]any) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		tb.Fatalf("%s(%v): %s", name, args, resultText(res))
	}
	var out map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &out)
	return resultText(res), out
}

// TestDifferingFleet runs fan-out actions over hosts that differ like
// real ones (users and hostnames in the prompt, bash, zsh and fish login
// shells, a two-row prompt, busybox ps and date): the same command's
// output groups into one block whatever the prompts, and an outlier is
// named with what differs. Before, every host was a group of its own.
func TestDifferingFleet(t *testing.T) {
	env := sshtest.New(t)
	f := env.StartDifferingFleet("fl")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "ssh_config")
	f.WriteSSHConfig(cfg, filepath.Join(dir, "known_hosts"))
	cs := inprocFleet(t, cfg, "fl-*", mcp.TierMutating)
	n := len(f.Members)

	callTool(t, cs, "create_session", map[string]any{"host": "fl-*", "session_name": "g"})
	// The first call also waits out each shell's start-up.
	callTool(t, cs, "run_command", map[string]any{"host": "fl-*", "session_name": "g", "command": "echo warm", "timeout": 30})

	txt, out := callTool(t, cs, "run_command", map[string]any{"host": "fl-*", "session_name": "g", "command": "echo same", "timeout": 30})
	want := fmt.Sprintf("run_command on %d hosts: %d ok\n", n, n)
	if !strings.HasPrefix(txt, want) || !strings.Contains(txt, fmt.Sprintf("\n%d hosts (", n)) || !strings.Contains(txt, "): exit 0, 1 line\nsame") || strings.Contains(txt, "distinct") {
		t.Fatalf("echo same over %d differing hosts did not group:\n%s\n%v", n, txt, out)
	}
	// The screens did differ: prompts name each user and host.
	screens := map[string]bool{}
	for _, h := range out["hosts"].([]any) {
		r := h.(map[string]any)["result"].(map[string]any)
		b, _ := json.Marshal(r["output"])
		screens[string(b)] = true
	}
	if len(screens) < n {
		t.Fatalf("the fleet's screens are alike (%d distinct of %d): the test fleet does not differ", len(screens), n)
	}

	// One outlier: only the zsh host has the file.
	var odd sshtest.FleetMember
	for _, m := range f.Members {
		if strings.HasSuffix(m.Alias, "-zsh") {
			odd = m
		}
	}
	if err := os.WriteFile(filepath.Join(odd.Home, "fleetmux-marker"), []byte("odd one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	txt, _ = callTool(t, cs, "run_command", map[string]any{"host": "fl-*", "session_name": "g", "command": "cat fleetmux-marker", "timeout": 30})
	for _, frag := range []string{
		fmt.Sprintf("\n%d hosts (", n-1), "exit 1, 1 line\ncat: fleetmux-marker: No such file or directory\n",
		"\n1 host (" + odd.Alias + "): exit 0, 1 line", "odd one",
	} {
		if !strings.Contains(txt, frag) {
			t.Errorf("outlier text lacks %q:\n%s", frag, txt)
		}
	}
	t.Logf("grouped text:\n%s", txt)
}
