package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetmux/fleetmux/transport/sshtest"
)

// The soak test: 8 MCP clients × N mixed calls over three real sshd hosts
// while one host is stopped, has its connections dropped, and is frozen
// (SIGSTOP) in turn. Afterwards: no goroutine, file descriptor or SSH
// session leak; every call answered before its deadline; every call
// audited exactly once. FLEETMUX_SOAK_CALLS sets N (default 500); -short
// skips it.

const (
	soakClients = 8
	// soakCallDeadline is the client-side deadline of every call. A call
	// to the faulty host must fail well before it (the host's
	// ConnectTimeout is 2 s, and the host stays frozen for soakFreeze);
	// hitting it counts as a failure. It is generous on purpose: the
	// machine is shared and the race detector slows everything.
	soakCallDeadline = 7 * time.Second
	soakFreeze       = 9 * time.Second
)

type soakStats struct {
	mu        sync.Mutex
	calls     int
	errs      int
	latencies []time.Duration
	byHost    map[string][]time.Duration
	deadlines int // calls that hit soakCallDeadline
	transport int // protocol/transport errors (not tool errors)
	samples   []string
}

func (s *soakStats) add(host string, d time.Duration, isErr bool, deadline bool, protoErr error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	s.latencies = append(s.latencies, d)
	s.byHost[host] = append(s.byHost[host], d)
	if isErr {
		s.errs++
	}
	if deadline {
		s.deadlines++
	}
	if protoErr != nil {
		s.transport++
		if len(s.samples) < 5 {
			s.samples = append(s.samples, protoErr.Error())
		}
	}
}

func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// remoteSessions counts the processes serving SSH sessions of h: the
// direct children of sshd's per-connection processes.
func remoteSessions(h *sshtest.Host) int {
	pid := h.PID()
	if pid == 0 {
		return 0
	}
	return len(sshtest.Descendants(pid))
}

func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("soak test skipped with -short")
	}
	perClient := 500
	if v := os.Getenv("FLEETMUX_SOAK_CALLS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("FLEETMUX_SOAK_CALLS=%q: want a positive number", v)
		}
		perClient = n
	}

	env := sshtest.New(t)
	hosts := []*sshtest.Host{
		env.StartHost("soak-1", sshtest.HostOptions{}),
		env.StartHost("soak-2", sshtest.HostOptions{}),
		env.StartHost("soak-3", sshtest.HostOptions{}),
	}
	faulty := hosts[2]
	dir := t.TempDir()
	kh := filepath.Join(dir, "known_hosts")
	sshtest.WriteKnownHosts(t, kh, sshtest.KnownHostsOptions{}, hosts...)
	cfg := filepath.Join(dir, "ssh_config")
	env.WriteSSHConfig(cfg, sshtest.SSHConfigOptions{KnownHostsFile: kh, Extra: []string{"ConnectTimeout 2"}}, hosts...)
	state := filepath.Join(dir, "state.db")
	sock := fmt.Sprintf("fleetmux-test-soak-%d", os.Getpid())
	t.Setenv("LIBTMUX_SOCKET", sock)
	t.Setenv("TMUX", "")
	t.Setenv("TMUX_PANE", "")
	t.Setenv("LIBTMUX_SAFETY", "mutating")

	runtime.GC()
	baseGoroutines := runtime.NumGoroutine()
	baseFDs := openFDs(t)

	g := &globalFlags{hosts: "soak-*", sshConfig: cfg, noLocal: true, state: state, logLevel: "error"}
	g.retention = agoFlag{text: defaultRetention, d: 90 * 24 * time.Hour}
	logBuf := &lockedBuf{}
	log := slog.New(slog.NewTextHandler(logBuf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx := context.Background()
	srv, cleanup, err := build(ctx, g, log)
	if err != nil {
		t.Fatal(err)
	}
	cleaned := false
	defer func() {
		if !cleaned {
			cleanup()
		}
	}()

	type client struct {
		cs    *sdk.ClientSession
		close func()
	}
	clients := make([]client, soakClients)
	for i := range clients {
		cs, closeFn, err := srv.InProcess(ctx, fmt.Sprintf("soak-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		clients[i] = client{cs, closeFn}
	}
	setup := 0
	mustOK := func(name string, args map[string]any) string {
		t.Helper()
		setup++
		cctx, cancel := context.WithTimeout(ctx, soakCallDeadline)
		defer cancel()
		res, err := clients[0].cs.CallTool(cctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.IsError {
			t.Fatalf("%s(%v): %s", name, args, resultText(res))
		}
		b, _ := json.Marshal(res.StructuredContent)
		return string(b)
	}
	paneOf := map[string]string{}
	for _, h := range hosts {
		out := mustOK("create_session", map[string]any{"host": h.Name, "session_name": "soak"})
		var sess struct {
			SessionID string `json:"session_id"`
		}
		json.Unmarshal([]byte(out), &sess)
		panes := mustOK("list_panes", map[string]any{"host": h.Name, "session_name": "soak"})
		var wrapped struct {
			Result []struct {
				PaneID string `json:"pane_id"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(panes), &wrapped); err != nil || len(wrapped.Result) == 0 {
			t.Fatalf("list_panes on %s: %v %s", h.Name, err, panes)
		}
		paneOf[h.Name] = wrapped.Result[0].PaneID
	}
	sessionsBefore := map[string]int{}
	for _, h := range hosts {
		sessionsBefore[h.Name] = remoteSessions(h)
	}

	// Faults on the faulty host, in turn, until the clients are done.
	stopFaults := make(chan struct{})
	faultsDone := make(chan struct{})
	var faultLog []string
	go func() {
		defer close(faultsDone)
		pause := func(d time.Duration) bool {
			select {
			case <-stopFaults:
				return false
			case <-time.After(d):
				return true
			}
		}
		// Freeze first: it is the fault that stalls calls unless every
		// remote call has a deadline.
		for round := 0; ; round++ {
			if !pause(700 * time.Millisecond) {
				return
			}
			switch round % 3 {
			case 0:
				faultLog = append(faultLog, "freeze")
				faulty.Signal(syscall.SIGSTOP)
				ok := pause(soakFreeze)
				faulty.Signal(syscall.SIGCONT)
				if !ok {
					return
				}
			case 1:
				faultLog = append(faultLog, "drop")
				faulty.DropConnections()
			case 2:
				faultLog = append(faultLog, "stop")
				faulty.Stop()
				ok := pause(1500 * time.Millisecond)
				faulty.Restart()
				if !ok {
					return
				}
			}
		}
	}()

	stats := &soakStats{byHost: map[string][]time.Duration{}}
	var wg sync.WaitGroup
	var made atomic.Int64
	start := time.Now()
	for i := range clients {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 42))
			for range perClient {
				h := hosts[rng.IntN(len(hosts))].Name
				var name string
				var args map[string]any
				switch k := rng.IntN(10); k {
				case 0, 1:
					name, args = "list_sessions", map[string]any{"host": h}
				case 2:
					name, args = "list_sessions", map[string]any{"host": "*"}
					h = "*"
				case 3, 4:
					name, args = "capture_pane", map[string]any{"host": h, "pane_id": paneOf[h]}
				case 5:
					name, args = "display_message", map[string]any{"host": h, "pane_id": paneOf[h], "format_string": "#{pane_id} #{pane_width}x#{pane_height}"}
				case 6:
					name, args = "get_pane_info", map[string]any{"host": h, "pane_id": paneOf[h]}
				case 7:
					name, args = "send_keys", map[string]any{"host": h, "pane_id": paneOf[h], "keys": "echo soak", "enter": false}
				case 8:
					name, args = "list_windows", map[string]any{"host": h, "session_name": "soak"}
				default:
					name, args = "list_hosts", map[string]any{}
					h = "-"
				}
				cctx, cancel := context.WithTimeout(ctx, soakCallDeadline)
				t0 := time.Now()
				res, err := clients[i].cs.CallTool(cctx, &sdk.CallToolParams{Name: name, Arguments: args})
				d := time.Since(t0)
				hitDeadline := cctx.Err() != nil
				cancel()
				made.Add(1)
				stats.add(h, d, err != nil || res.IsError, hitDeadline, err)
			}
		}(i)
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(stopFaults)
	<-faultsDone
	if !faulty.Running() {
		faulty.Restart()
	}
	faulty.Signal(syscall.SIGCONT)

	// Every host answers again after the faults (the next call redials).
	var recovered bool
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		cctx, cancel := context.WithTimeout(ctx, soakCallDeadline)
		res, err := clients[0].cs.CallTool(cctx, &sdk.CallToolParams{Name: "list_sessions", Arguments: map[string]any{"host": faulty.Name}})
		cancel()
		setup++
		if err == nil && !res.IsError {
			recovered = true
			break
		}
	}
	if !recovered {
		t.Errorf("%s did not answer again after the faults", faulty.Name)
	}

	// SSH sessions on the healthy hosts did not pile up (command channels
	// are pooled and capped).
	for _, h := range hosts[:2] {
		if n := remoteSessions(h); n > sessionsBefore[h.Name]+3*8 {
			t.Errorf("%s: %d sshd processes after the soak, %d before", h.Name, n, sessionsBefore[h.Name])
		}
	}
	peakGoroutines := runtime.NumGoroutine()
	peakFDs := openFDs(t)

	for _, c := range clients {
		c.close()
	}
	cleanup()
	cleaned = true

	// No goroutine or descriptor outlives the server; sshd sees every
	// session closed.
	var goroutines, fds int
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		runtime.GC()
		goroutines, fds = runtime.NumGoroutine(), openFDs(t)
		if (goroutines <= baseGoroutines+2 && fds <= baseFDs+2) || time.Now().After(deadline) {
			break
		}
	}
	if goroutines > baseGoroutines+2 {
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		t.Errorf("goroutine leak: %d before, %d after close\n%s", baseGoroutines, goroutines, buf[:n])
	}
	if fds > baseFDs+2 {
		t.Errorf("file descriptor leak: %d before, %d after close", baseFDs, fds)
	}
	var remote []string
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		remote = remote[:0]
		for _, h := range hosts {
			if n := remoteSessions(h); n > 0 {
				remote = append(remote, fmt.Sprintf("%s:%d", h.Name, n))
			}
		}
		if len(remote) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(remote) > 0 {
		t.Errorf("SSH sessions left open on the hosts after close: %v", remote)
	}

	// Every call answered before its deadline, without a protocol error.
	if stats.deadlines > 0 || stats.transport > 0 {
		t.Errorf("%d calls hit the %s deadline, %d protocol errors (e.g. %v)", stats.deadlines, soakCallDeadline, stats.transport, stats.samples)
	}
	if int(made.Load()) != soakClients*perClient {
		t.Errorf("made %d calls, want %d", made.Load(), soakClients*perClient)
	}

	// Every call audited exactly once.
	out, err := exec.Command(binPath, "audit", "--state", state, "--json", "--limit", "0").Output()
	if err != nil {
		t.Fatalf("audit: %v", err)
	}
	records, perClientRecs := 0, map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var r struct {
			Client string `json:"client"`
			Parent string `json:"parent"`
		}
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.Parent != "" {
			continue
		}
		records++
		perClientRecs[r.Client]++
	}
	if want := soakClients*perClient + setup; records != want {
		t.Errorf("audit has %d top-level records, want %d (one per call): %v", records, want, perClientRecs)
	}

	healthy := append(slices.Clone(stats.byHost[hosts[0].Name]), stats.byHost[hosts[1].Name]...)
	t.Logf("soak: %d clients × %d calls in %s (%.0f calls/s); %d tool errors (faulty host); faults %v",
		soakClients, perClient, elapsed.Round(time.Millisecond), float64(stats.calls)/elapsed.Seconds(), stats.errs, faultLog)
	t.Logf("soak latency all p50 %s p99 %s max %s; healthy hosts p50 %s p99 %s max %s; faulty host p50 %s p99 %s max %s; fan-out p50 %s max %s",
		pct(stats.latencies, .5), pct(stats.latencies, .99), pct(stats.latencies, 1),
		pct(healthy, .5), pct(healthy, .99), pct(healthy, 1),
		pct(stats.byHost[faulty.Name], .5), pct(stats.byHost[faulty.Name], .99), pct(stats.byHost[faulty.Name], 1),
		pct(stats.byHost["*"], .5), pct(stats.byHost["*"], 1))
	t.Logf("soak resources: goroutines %d before, %d at peak, %d after close; fds %d before, %d at peak, %d after; remote sessions left %v; audit records %d",
		baseGoroutines, peakGoroutines, goroutines, baseFDs, peakFDs, fds, remote, records)
	if s := logBuf.String(); s != "" {
		t.Logf("server log (warn and above):\n%s", truncateLog(s, 4000))
	}
}

func truncateLog(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("\n… (%d more bytes)", len(s)-n)
}
