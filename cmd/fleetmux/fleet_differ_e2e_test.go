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
	_, cs := inprocServe(tb, f, mcp.Options{Settings: mcp.Settings{Safety: safety, SuppressHistory: true, WaitMax: 30}}, "differ")
	return cs
}

// inprocServe serves fleet f (with o's settings; fleetmux itself is not
// inside tmux) and connects an in-process MCP client named name.
func inprocServe(tb testing.TB, f *fleet.Fleet, o mcp.Options, name string) (*mcp.Server, *sdk.ClientSession) {
	tb.Helper()
	o.Backend = fleetBackend{f: f}
	o.Getenv = func(k string) string {
		if k == "TMUX" || k == "TMUX_PANE" {
			return ""
		}
		return os.Getenv(k)
	}
	srv, err := mcp.New(o)
	if err != nil {
		tb.Fatal(err)
	}
	cs, done, err := srv.InProcess(context.Background(), name)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(done)
	return srv, cs
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

	// Jobs on the host with busybox ps and date (busybox date prints
	// "%N" as is): a finished job ends with its exit status, a cancelled
	// one with 130 (C-c; busybox ps has no -p/tpgid, so the signals after
	// C-c could not reach it and the answer says so when they are needed).
	for _, host := range []string{"fl-tiny", "fl-bash"} {
		_, out = callTool(t, cs, "run_command", map[string]any{"host": host, "session_name": "g", "command": "sleep 0.3; exit 4", "detach": true})
		if job := jobUntilDone(t, cs, out["job_id"].(string)); !strings.Contains(job, `"status":"exited","exit_status":4`) {
			t.Errorf("%s: finished job reads %s", host, job)
		}
		_, out = callTool(t, cs, "run_command", map[string]any{"host": host, "session_name": "g", "command": "sleep 30", "detach": true})
		cancel, _ := callTool(t, cs, "cancel_job", map[string]any{"job_id": out["job_id"].(string)})
		if job := jobUntilDone(t, cs, out["job_id"].(string)); !strings.Contains(job, `"status":"exited","exit_status":130`) {
			t.Errorf("%s: cancelled job reads %s (cancel_job said %s)", host, job, cancel)
		}
	}
}

// BenchmarkGroupedText200 fans run_command out over 200 aliases (one
// sshd, one account, a port, HOME and tmux server per alias, a prompt
// naming the alias) whose command prints one of 5 outputs, and prints the
// bytes of the grouped text (target: under 8 KB, every outlier named),
// next to the bytes the grouping by whole screen would give (the way
// hosts were grouped before: prompts and echoed input included). Run with
// -bench GroupedText200 -benchtime 1x.
func BenchmarkGroupedText200(b *testing.B) {
	const n = 200
	env := sshtest.New(b)
	m := env.StartManyAliases("web", n, "PS1='\\u@{alias}:\\w\\$ '\n")
	outputs := []string{"build 1.4.2 ok\ntests passed: 812", "build 1.4.2 ok\ntests passed: 811\nFAIL: TestFlaky", "build 1.4.1 ok\ntests passed: 812", "error: disk full", "build 1.4.2 ok\ntests passed: 812\nwarning: cache cold"}
	outliers := map[string]int{}
	for i, home := range m.Homes {
		k := 0
		switch {
		case i%41 == 7:
			k = 1
		case i%53 == 3:
			k = 2
		case i == 150 || i == 151:
			k = 3
		case i%67 == 20:
			k = 4
		}
		if k > 0 {
			outliers[m.Aliases[i]] = k
		}
		if err := os.WriteFile(filepath.Join(home, "status.txt"), []byte(outputs[k]+"\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	dir := b.TempDir()
	cfg := filepath.Join(dir, "ssh_config")
	m.WriteSSHConfig(cfg, filepath.Join(dir, "known_hosts"))
	cs := inprocFleet(b, cfg, "web*", mcp.TierMutating)
	callTool(b, cs, "create_session", map[string]any{"host": "web*", "session_name": "g"})
	callTool(b, cs, "run_command", map[string]any{"host": "web*", "session_name": "g", "command": "clear", "timeout": 60})
	var txt string
	var out map[string]any
	for b.Loop() {
		txt, out = callTool(b, cs, "run_command", map[string]any{"host": "web*", "session_name": "g", "command": "cat ~/status.txt", "timeout": 60})
	}
	// Before: hosts grouped by their whole screen (minus a trailing
	// prompt), each group with its screen.
	old := map[string][]string{}
	var order []string
	for _, h := range out["hosts"].([]any) {
		hm := h.(map[string]any)
		r, _ := hm["result"].(map[string]any)
		var lines []string
		for _, l := range r["output"].([]any) {
			lines = append(lines, l.(string))
		}
		if k := len(lines); k >= 2 && strings.HasPrefix(lines[0], strings.TrimRight(lines[k-1], " ")) && strings.TrimSpace(lines[k-1]) != "" {
			lines = lines[:k-1]
		}
		key := strings.Join(lines, "\n")
		if _, ok := old[key]; !ok {
			order = append(order, key)
		}
		old[key] = append(old[key], hm["host"].(string))
	}
	before := len(fmt.Sprintf("run_command on %d hosts: %d ok\n", n, n))
	for _, k := range order {
		before += len(fmt.Sprintf("\n%d hosts (%s): exit 0, N lines\n%s\n", len(old[k]), strings.Join(old[k], ", "), k))
	}
	for alias := range outliers {
		if !strings.Contains(txt, alias) && !namedInRange(txt, alias) {
			b.Errorf("outlier %s is not named:\n%s", alias, txt)
		}
	}
	b.ReportMetric(float64(len(txt)), "grouped-bytes")
	b.ReportMetric(float64(before), "whole-screen-bytes")
	fmt.Fprintf(os.Stderr, "grouped text for %d hosts, %d outliers, 5 outputs: %d bytes (grouping by whole screen: %d bytes in %d groups)\n%s\n", n, len(outliers), len(txt), before, len(order), txt)
	if len(txt) >= 8192 {
		b.Errorf("grouped text is %d bytes, want < 8192", len(txt))
	}
}

// namedInRange reports whether text names alias ("web017") inside a
// compacted range such as "web[001-016,017,020-030]".
func namedInRange(text, alias string) bool {
	i := len(alias)
	for i > 0 && alias[i-1] >= '0' && alias[i-1] <= '9' {
		i--
	}
	prefix, num := alias[:i], alias[i:]
	var want int
	fmt.Sscan(num, &want)
	for rest := text; ; {
		k := strings.Index(rest, prefix+"[")
		if k < 0 {
			return false
		}
		rest = rest[k+len(prefix)+1:]
		end := strings.Index(rest, "]")
		if end < 0 {
			return false
		}
		for _, span := range strings.Split(rest[:end], ",") {
			lo, hi, _ := strings.Cut(span, "-")
			if hi == "" {
				hi = lo
			}
			var a, z int
			fmt.Sscan(lo, &a)
			fmt.Sscan(hi, &z)
			if want >= a && want <= z {
				return true
			}
		}
	}
}

// jobUntilDone polls get_job until the job is no longer running (20 s at
// most) and returns its last answer.
func jobUntilDone(t *testing.T, cs *sdk.ClientSession, id string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		job, _ := callTool(t, cs, "get_job", map[string]any{"job_id": id})
		if !strings.Contains(job, `"status":"running"`) || time.Now().After(deadline) {
			return job
		}
		time.Sleep(100 * time.Millisecond)
	}
}
