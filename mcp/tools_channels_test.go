package mcp

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetmux/fleetmux/mcp/pyfmt"
)

func TestChannelNames(t *testing.T) {
	e := newEnv(t)
	for _, ok := range []string{"tests_done", "deploy.prod", "ns:ready-2", "a", strings.Repeat("c", 128)} {
		if got := e.ok("signal_channel", map[string]any{"channel": ok}, nil); got != "Channel "+pyfmt.Repr(ok)+" signalled" {
			t.Fatalf("signal %q = %q", ok, got)
		}
	}
	for _, bad := range []string{"", "has space", "a/b", strings.Repeat("c", 129), "!bang", "semi;colon"} {
		e.fail("signal_channel", map[string]any{"channel": bad}, "Invalid channel name: "+pyfmt.Repr(bad))
		e.fail("wait_for_channel", map[string]any{"channel": bad, "timeout": 5}, "Invalid channel name: "+pyfmt.Repr(bad))
	}
}

// channelWaiters lists live "tmux ... wait-for <channel>" processes.
func channelWaiters(channel string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		if err != nil {
			continue
		}
		argv := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if len(argv) >= 2 && argv[len(argv)-2] == "wait-for" && argv[len(argv)-1] == channel {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waiterBlocked reports whether a wait-for child for channel sits idle in
// its event loop, i.e. it has connected and sent its command (wchan reads
// "0" while it still runs). Where the kernel hides wchan, a child that has
// existed for a second is taken as blocked.
func waiterBlocked(channel string, firstSeen *time.Time) bool {
	pids := channelWaiters(channel)
	if len(pids) > 0 && firstSeen.IsZero() {
		*firstSeen = time.Now()
	}
	for _, pid := range pids {
		w, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "wchan"))
		if err != nil || strings.Contains(string(w), "poll") {
			return true
		}
	}
	return len(pids) > 0 && time.Since(*firstSeen) > time.Second
}

// startWait runs wait_for_channel in the background and returns once its
// tmux child is blocked.
func startWait(t *testing.T, e *testEnv, channel string, timeout float64) <-chan *sdk.CallToolResult {
	t.Helper()
	done := make(chan *sdk.CallToolResult, 1)
	go func() {
		res, err := e.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "wait_for_channel", Arguments: map[string]any{"channel": channel, "timeout": timeout}})
		if err != nil {
			res = &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: err.Error()}}}
		}
		done <- res
	}()
	var seen time.Time
	waitFor(t, "the wait-for child", func() bool { return waiterBlocked(channel, &seen) })
	return done
}

func TestChannelWaitSignalled(t *testing.T) {
	e := newEnv(t)
	ch := "fm_sig_" + strconv.Itoa(os.Getpid())
	done := startWait(t, e, ch, 10)
	e.tmux("wait-for", "-S", ch)
	res := <-done
	if res.IsError || text(res) != "Channel '"+ch+"' was signalled (timeout 10.0s)" {
		t.Fatalf("wait = %v %q", res.IsError, text(res))
	}
	// Signalling through the tool wakes a waiter too.
	done = startWait(t, e, ch, 10)
	e.ok("signal_channel", map[string]any{"channel": ch}, nil)
	if res := <-done; res.IsError {
		t.Fatalf("wait after signal_channel: %s", text(res))
	}
}

func TestChannelWaitTimeout(t *testing.T) {
	e := newEnv(t)
	start := time.Now()
	e.fail("wait_for_channel", map[string]any{"channel": "fm_never", "timeout": 0.5}, "wait-for timeout: channel 'fm_never' was not signalled within 0.5s")
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("timeout took %v", d)
	}
	e.fail("wait_for_channel", map[string]any{"channel": "fm_never", "timeout": 0}, "within 0.0s")
	e.fail("wait_for_channel", map[string]any{"channel": "fm_never", "timeout": -5}, "within -5.0s")
	if n := len(channelWaiters("fm_never")); n != 0 {
		t.Fatalf("%d wait-for children left behind", n)
	}
}

func TestChannelWaitCeiling(t *testing.T) {
	e := newEnv(t, withSettings(Settings{Safety: TierDestructive, SuppressHistory: true, WaitMax: 1}))
	start := time.Now()
	e.fail("wait_for_channel", map[string]any{"channel": "fm_clamped", "timeout": 3600}, "wait-for timeout: channel 'fm_clamped' was not signalled within 1.0s")
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("clamped wait ran %v", d)
	}
}

func TestChannelServerGone(t *testing.T) {
	e := newEnv(t)
	done := startWait(t, e, "fm_gone", 10)
	e.tmux("kill-server")
	res := <-done
	if !res.IsError || !strings.Contains(text(res), "wait-for returned for channel 'fm_gone' but the tmux server is no longer running") {
		t.Fatalf("kill-server mid-wait: %q", text(res))
	}

	e = newEnv(t)
	pid, _ := strconv.Atoi(e.tmux("display-message", "-p", "#{pid}"))
	done = startWait(t, e, "fm_killed", 10)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	res = <-done
	if !res.IsError || !strings.Contains(text(res), "wait-for failed for channel 'fm_killed': server exited unexpectedly") {
		t.Fatalf("SIGKILL mid-wait: %q", text(res))
	}
}

func TestChannelCancelKillsChild(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := e.cs.CallTool(ctx, &sdk.CallToolParams{Name: "wait_for_channel", Arguments: map[string]any{"channel": "fm_cancel", "timeout": 20}})
		done <- err
	}()
	waitFor(t, "the wait-for child", func() bool { return len(channelWaiters("fm_cancel")) > 0 })
	cancel()
	if err := <-done; err == nil {
		t.Fatal("cancelled call returned a result")
	}
	waitFor(t, "the wait-for child to die", func() bool { return len(channelWaiters("fm_cancel")) == 0 })
}
