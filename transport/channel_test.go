package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fleetmux/fleetmux/transport/sshtest"
)

// TestChannelRCOncePerChannel: with an rc that costs 100 ms, 100 calls
// start the login shell once per channel, not once per call.
func TestChannelRCOncePerChannel(t *testing.T) {
	checkLeaks(t)
	e := sshtest.New(t)
	h := startHost(t, e, "slowrc", sshtest.HostOptions{SlowRC: 100 * time.Millisecond})
	s := newRunner(t, h.cfg, SSHOptions{})
	for range 100 {
		run(t, s, "tmux", "-V")
	}
	if n := h.RCCount(); n != 1 {
		t.Errorf("sequential: rc ran %d times for 100 calls, want 1", n)
	}
	// Concurrent calls grow the pool, still one rc per channel.
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				run(t, s, "true")
			}
		}()
	}
	wg.Wait()
	if n, ch := h.RCCount(), s.Status().Channels; n != ch || ch > 4 {
		t.Errorf("concurrent: rc ran %d times with %d channels open", n, ch)
	}

	// The per-command path pays for the rc every time.
	before := h.RCCount()
	per := newRunner(t, h.cfg, SSHOptions{PerCommand: true})
	for range 3 {
		run(t, per, "true")
	}
	if n := h.RCCount() - before; n != 3 {
		t.Errorf("per-command: rc ran %d times for 3 calls", n)
	}
}

// loopPIDs returns the pids of the command loops running for host h (not
// their forks: watchers and commands about to exec share the cmdline).
func loopPIDs(h *sshtest.Host) []int {
	isLoop := func(pid int) bool {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		return bytes.HasPrefix(cmdline, []byte("sh\x00-c\x00"+channelBoot))
	}
	var out []int
	for _, pid := range sshtest.Descendants(h.PID()) {
		if isLoop(pid) && !isLoop(sshtest.ParentPID(pid)) {
			out = append(out, pid)
		}
	}
	return out
}

// TestChannelDeath: killing the remote loop mid-command fails that call
// (it may have run, so it is not re-sent); killing an idle loop is
// invisible (the call provably never started and is retried).
func TestChannelDeath(t *testing.T) {
	checkLeaks(t)
	e := sshtest.New(t)
	h := startHost(t, e, "fragile", sshtest.HostOptions{})
	s := newRunner(t, h.cfg, SSHOptions{})
	run(t, s, "true")
	pids := loopPIDs(h.Host)
	if len(pids) != 1 {
		t.Fatalf("loops: %v", pids)
	}

	errc := make(chan error, 1)
	go func() {
		_, err := s.Run(context.Background(), []string{"sleep", "3"}, nil)
		errc <- err
	}()
	time.Sleep(200 * time.Millisecond)
	syscall.Kill(pids[0], syscall.SIGKILL)
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("call survived its channel")
		}
		mustContain(t, err, "ssh fragile: sleep: command channel")
	case <-time.After(2 * time.Second):
		t.Fatal("call did not fail when its loop died")
	}
	if got := run(t, s, "echo", "next"); string(got.Stdout) != "next\n" {
		t.Errorf("next call: %q", got.Stdout)
	}

	// An idle channel killed behind our back.
	waitFor(t, func() bool { return len(loopPIDs(h.Host)) == 1 })
	for _, pid := range loopPIDs(h.Host) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	counter := t.TempDir() + "/runs"
	run(t, s, "sh", "-c", "echo run >> "+counter)
	if b, _ := os.ReadFile(counter); string(b) != "run\n" {
		t.Errorf("ran %q", b)
	}
}

// TestChannelBlocking: blocking commands (tmux wait-for) run alongside
// others, even when they fill the whole pool, and a cancelled one is
// killed on the host.
func TestChannelBlocking(t *testing.T) {
	checkLeaks(t)
	e := sshtest.New(t)
	h := startHost(t, e, "waiter", sshtest.HostOptions{})
	s := newRunner(t, h.cfg, SSHOptions{MaxSessions: 4}) // 2 channels + 2 reserve
	run(t, s, "tmux", "new-session", "-d", "-s", "main")
	t.Cleanup(func() { s.Run(context.Background(), []string{"tmux", "kill-server"}, nil) })

	tag := "fleetmux-" + strconv.Itoa(os.Getpid())
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.Run(context.Background(), []string{"tmux", "wait-for", tag + strconv.Itoa(i)}, nil); err != nil {
				t.Errorf("wait-for: %v", err)
			}
		}()
	}
	waitFor(t, func() bool { return s.Status().Channels == 2 && len(loopPIDs(h.Host)) == 2 })
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	for range 10 {
		if got := run(t, s, "tmux", "list-sessions", "-F", "#{session_name}"); string(got.Stdout) != "main\n" {
			t.Errorf("list-sessions: %q", got.Stdout)
		}
	}
	// No timing bound: the calls returned while both wait-fors were still
	// blocked (they are signalled only below), which is the property.
	t.Logf("10 calls beside 2 blocked ones took %s", time.Since(start))
	for i := range 2 {
		run(t, s, "tmux", "wait-for", "-S", tag+strconv.Itoa(i))
	}
	wg.Wait()

	// Cancelled while blocked: the call returns at once and the remote
	// tmux client is killed.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := s.Run(ctx, []string{"tmux", "wait-for", tag + "-cancel"}, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	waitFor(t, func() bool {
		for _, pid := range sshtest.Descendants(h.PID()) {
			if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); strings.Contains(string(b), tag+"-cancel") {
				return false
			}
		}
		return true
	})
	run(t, s, "true")
}

// TestChannelParallel: concurrent calls run on several channels at once.
func TestChannelParallel(t *testing.T) {
	checkLeaks(t)
	e := sshtest.New(t)
	h := startHost(t, e, "parallel", sshtest.HostOptions{})
	s := newRunner(t, h.cfg, SSHOptions{})
	run(t, s, "true")
	start := time.Now()
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run(t, s, "sleep", "0.5")
		}()
	}
	wg.Wait()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("6 parallel 0.5s sleeps took %s", d)
	}
	if n := s.Status().Channels; n < 2 || n > 6 {
		t.Errorf("%d channels", n)
	}
}

// benchHost starts one host for a benchmark.
func benchHost(b *testing.B, rc time.Duration) *testHost {
	e := sshtest.New(b)
	return startHost(b, e, "bench", sshtest.HostOptions{SlowRC: rc})
}

func benchRun(b *testing.B, r Runner, argv ...string) {
	ctx := context.Background()
	if _, err := r.Run(ctx, argv, nil); err != nil { // connect outside the timing
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := r.Run(ctx, argv, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLocal(b *testing.B) {
	benchRun(b, NewLocal(), "tmux", "-V")
}

func BenchmarkSSHPerCommand(b *testing.B) {
	h := benchHost(b, 0)
	benchRun(b, newRunner(b, h.cfg, SSHOptions{PerCommand: true}), "tmux", "-V")
}

func BenchmarkSSHChannel(b *testing.B) {
	h := benchHost(b, 0)
	benchRun(b, newRunner(b, h.cfg, SSHOptions{}), "tmux", "-V")
}

// The same with a login shell whose rc costs 100 ms.
func BenchmarkSSHPerCommandSlowRC(b *testing.B) {
	h := benchHost(b, 100*time.Millisecond)
	benchRun(b, newRunner(b, h.cfg, SSHOptions{PerCommand: true}), "tmux", "-V")
}

func BenchmarkSSHChannelSlowRC(b *testing.B) {
	h := benchHost(b, 100*time.Millisecond)
	benchRun(b, newRunner(b, h.cfg, SSHOptions{}), "tmux", "-V")
}

// BenchmarkSSHColdConnect: a new runner's first call (TCP, handshake,
// auth, channel start, command).
func BenchmarkSSHColdConnect(b *testing.B) {
	h := benchHost(b, 0)
	for _, p := range bothPaths {
		b.Run(p.name, func(b *testing.B) {
			for b.Loop() {
				s := NewSSH(h.cfg, p.opts)
				if _, err := s.Run(context.Background(), []string{"tmux", "-V"}, nil); err != nil {
					b.Fatal(err)
				}
				s.Close()
			}
		})
	}
}

// TestBurstWaitsForStartingChannels: twenty calls at once on a new
// connection to a host whose login shell takes 300 ms wait for the
// channels being started instead of taking per-command sessions (each
// one more login shell): the host runs at most one login shell per
// channel. Counted in the rc file's log, not timed.
func TestBurstWaitsForStartingChannels(t *testing.T) {
	// What is checked is the rule for channels that are starting. Once
	// all have started, a queue of short commands may overflow after
	// overflowDelay, which a loaded machine (the race leg) can exceed
	// even for `true`; a long delay keeps that case out of this test.
	defer func(d time.Duration) { overflowDelay = d }(overflowDelay)
	overflowDelay = time.Minute
	e := sshtest.New(t)
	h := startHost(t, e, "burst", sshtest.HostOptions{SlowRC: 300 * time.Millisecond})
	s := newRunner(t, h.cfg, SSHOptions{})
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := s.Run(context.Background(), []string{"true"}, nil)
			if err == nil && res.ExitCode != 0 {
				err = fmt.Errorf("exit %d: %s", res.ExitCode, res.Stderr)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(h.RCCounter)
	shells := strings.Count(string(b), "rc")
	channels := s.Status().Channels
	t.Logf("20 calls at once: %d login shells, %d channels", shells, channels)
	if shells > channels {
		t.Errorf("20 calls at once started %d login shells for %d channels: calls took per-command sessions while channels were starting", shells, channels)
	}
}
