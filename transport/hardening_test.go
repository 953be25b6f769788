package transport

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fleetmux/fleetmux/transport/sshtest"
)

// TestSSHFrozenHost: a host that stops answering under a live connection
// costs a call about its ConnectTimeout, is reported unreachable, does not
// affect another host, and is dialled again once it answers; a long
// command on a live host is not mistaken for a frozen one.
func TestSSHFrozenHost(t *testing.T) {
	checkLeaks(t)
	e := sshtest.New(t)
	frozen := startHost(t, e, "frozen", sshtest.HostOptions{})
	other := startHost(t, e, "other", sshtest.HostOptions{})
	cfg := frozen.config()
	cfg.ConnectTimeout = time.Second
	s := newRunner(t, cfg, SSHOptions{})
	o := newRunner(t, other.cfg, SSHOptions{})
	run(t, s, "true")
	run(t, o, "true")

	// A command longer than the reply timeout runs to its end.
	run(t, s, "sleep", "2.5")

	frozen.Signal(syscall.SIGSTOP)
	thawed := false
	thaw := func() {
		if !thawed {
			frozen.Signal(syscall.SIGCONT)
			thawed = true
		}
	}
	t.Cleanup(thaw)
	start := time.Now()
	_, err := s.Run(context.Background(), []string{"true"}, nil)
	took := time.Since(start)
	if !errors.Is(err, ErrUnreachable) {
		t.Fatalf("call to the frozen host: err = %v, want ErrUnreachable", err)
	}
	mustContain(t, err, "ssh frozen: ", "no reply within 1s")
	if took > 8*time.Second { // generous: the bound is about 1s
		t.Errorf("call to the frozen host took %s", took)
	}
	if st := s.Status(); st.State != SSHUnreachable || st.LastError == nil {
		t.Errorf("status %+v, want unreachable with the error", st)
	}
	// The other host is untouched.
	run(t, o, "true")
	// While frozen, a new dial fails within ConnectTimeout too.
	if _, err := s.Run(context.Background(), []string{"true"}, nil); err == nil {
		t.Error("call succeeded while the host is frozen")
	}
	thaw()
	run(t, s, "true") // redials
	if st := s.Status(); st.State != SSHConnected {
		t.Errorf("status after thaw %+v", st)
	}
	t.Logf("frozen host: call failed after %s (ConnectTimeout 1s)", took.Round(time.Millisecond))
}

// sampleHeap records the peak of HeapInuse until the returned function is
// called, which returns the peak's growth over the start.
func sampleHeap() (*uint64, func() uint64) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	peak := base
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				peak = max(peak, m.HeapInuse)
			}
		}
	}()
	return &peak, func() uint64 {
		close(stop)
		<-done
		if peak < base {
			return 0
		}
		return peak - base
	}
}

// TestOutputBounded: a command that prints more than MaxOutput without a
// newline and then sleeps fails with ErrOutputTooLarge, on every path,
// in bounded time and memory, and the runner goes on working.
func TestOutputBounded(t *testing.T) {
	checkLeaks(t)
	e := sshtest.New(t)
	h := startHost(t, e, "flood", sshtest.HostOptions{})
	flood := []string{"sh", "-c", fmt.Sprintf("head -c %d /dev/zero; sleep 600", MaxOutput+(4<<20))}
	runners := []struct {
		name string
		r    Runner
	}{
		{"local", NewLocal()},
		{"ssh channel", newRunner(t, h.cfg, SSHOptions{})},
		{"ssh per-command", newRunner(t, h.cfg, SSHOptions{PerCommand: true})},
	}
	only := os.Getenv("FLEETMUX_FLOOD_ONLY")
	for _, tc := range runners {
		if only != "" && tc.name != only {
			continue
		}
		runtime.GC()
		peak, stopSampling := sampleHeap()
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		_, err := tc.r.Run(ctx, flood, nil)
		cancel()
		grown := stopSampling()
		if !errors.Is(err, ErrOutputTooLarge) {
			t.Fatalf("%s: err = %v, want ErrOutputTooLarge", tc.name, err)
		}
		t.Logf("%s: failed after %s; heap peaked %d MiB above its start (limit %d MiB)", tc.name, time.Since(start).Round(time.Millisecond), grown>>20, MaxOutput>>20)
		_ = peak
		if grown > 4*MaxOutput {
			t.Errorf("%s: heap grew by %d MiB for a %d MiB limit", tc.name, grown>>20, MaxOutput>>20)
		}
		if got := run(t, tc.r, "echo", "ok"); string(got.Stdout) != "ok\n" {
			t.Errorf("%s: next call %q", tc.name, got.Stdout)
		}
	}
}

// TestArgTooLong: an argv no exec(2) would take is refused up front, with
// a clear error, locally and remotely.
func TestArgTooLong(t *testing.T) {
	e := sshtest.New(t)
	h := startHost(t, e, "args", sshtest.HostOptions{})
	s := newRunner(t, h.cfg, SSHOptions{})
	for _, r := range []Runner{NewLocal(), s} {
		_, err := r.Run(context.Background(), []string{"echo", strings.Repeat("x", 200<<10)}, nil)
		if !errors.Is(err, ErrArgTooLong) {
			t.Errorf("%T: 200 KiB argument: err = %v", r, err)
		}
		many := make([]string, 0, 20)
		many = append(many, "echo")
		for range 12 {
			many = append(many, strings.Repeat("y", 100<<10))
		}
		if _, err := r.Run(context.Background(), many, nil); !errors.Is(err, ErrArgTooLong) {
			t.Errorf("%T: 1.2 MiB argv: err = %v", r, err)
		}
		big := strings.Repeat("z", MaxArgLen)
		if got := run(t, r, "printf", "%s", big); string(got.Stdout) != big {
			t.Errorf("%T: argument of MaxArgLen bytes did not round-trip", r)
		}
	}
}

// shellHostileArgs would run a command, or change meaning, if any shell along
// the way parsed them.
func shellHostileArgs(marker string) []string {
	return []string{
		`\';touch ` + marker + `;\'`,
		"a\nb;touch " + marker,
		"$(touch " + marker + ")",
		"`touch " + marker + "`",
		"!!", "!$", "!-1", "x!y", `'`, `"`, `\`, `x\`, "~", "*", "$HOME", "%", "{a,b}", "a b",
		"; touch " + marker, "| touch " + marker, "' ; touch " + marker + " ; '",
		"\\n", "\x1b[31m", "ü ✓", "-n", "",
	}
}

// TestLoginShells: with fish, tcsh, zsh and bash as the remote user's
// login shell, hostile arguments arrive byte for byte on the command
// channel and on the per-command path, and nothing runs.
func TestLoginShells(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create users with other login shells")
	}
	shells := installShells(t)
	e := sshtest.New(t)
	// sshd reads authorized_keys as the target user: keep a readable copy.
	keys, err := os.MkdirTemp("", "fleetmux-keys-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(keys) })
	os.Chmod(keys, 0o755)
	pub, err := os.ReadFile(e.AuthorizedKeys)
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(keys, "home")
	os.Mkdir(home, 0o777)
	os.Chmod(home, 0o1777)
	var users []string
	for _, sh := range shells {
		u := "fmx-" + filepath.Base(sh)
		if _, err := user.Lookup(u); err != nil {
			if out, err := exec.Command("useradd", "-M", "-d", home, "-s", sh, u).CombinedOutput(); err != nil {
				t.Fatalf("useradd %s: %v %s", u, err, out)
			}
		} else if out, err := exec.Command("usermod", "-s", sh, u).CombinedOutput(); err != nil {
			t.Fatalf("usermod %s: %v %s", u, err, out)
		}
		// A new account is locked ("!" password), and sshd without PAM
		// refuses locked accounts even for key logins: "*" means no
		// password, not locked.
		if out, err := exec.Command("usermod", "-p", "*", u).CombinedOutput(); err != nil {
			t.Fatalf("usermod -p %s: %v %s", u, err, out)
		}
		if err := os.WriteFile(filepath.Join(keys, u), pub, 0o644); err != nil {
			t.Fatal(err)
		}
		users = append(users, u)
	}
	h := startHost(t, e, "shells", sshtest.HostOptions{Config: []string{
		"Match User fmx-*",
		"  AuthorizedKeysFile " + keys + "/%u",
		"  SetEnv HOME=" + home,
	}})
	markerDir, err := os.MkdirTemp("", "fleetmux-marker-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(markerDir) })
	os.Chmod(markerDir, 0o777)
	marker := filepath.Join(markerDir, "ran")
	args := shellHostileArgs(marker)
	argv := append([]string{"printf", `%s\001`}, args...)
	want := strings.Join(args, "\x01") + "\x01"
	for _, u := range users {
		for _, opts := range []SSHOptions{{}, {PerCommand: true}} {
			cfg := h.config()
			cfg.User = u
			r := newRunner(t, cfg, opts)
			res, err := r.Run(context.Background(), argv, nil)
			if err != nil {
				t.Fatalf("%s (per-command %v): %v", u, opts.PerCommand, err)
			}
			if got := string(res.Stdout); got != want {
				t.Errorf("%s (per-command %v): argv arrived as %q, want %q (stderr %q)", u, opts.PerCommand, got, want, res.Stderr)
			}
			// stdin through the same path.
			res, err = r.Run(context.Background(), []string{"cat"}, []byte("it's \\ !! \n$(x)"))
			if err != nil || string(res.Stdout) != "it's \\ !! \n$(x)" {
				t.Errorf("%s (per-command %v): stdin came back as %q (%v)", u, opts.PerCommand, res.Stdout, err)
			}
			r.Close()
		}
	}
	time.Sleep(100 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a login shell ran part of an argument")
	}
}

// installShells returns the paths of fish, tcsh, zsh and bash, installing
// the missing ones with apt-get (a missing dependency is an install step).
func installShells(t *testing.T) []string {
	t.Helper()
	var paths, missing []string
	for _, sh := range []string{"fish", "tcsh", "zsh", "bash"} {
		p, err := exec.LookPath(sh)
		if err != nil {
			missing = append(missing, sh)
			continue
		}
		paths = append(paths, p)
	}
	if len(missing) > 0 {
		install := func() error {
			cmd := exec.Command("apt-get", append([]string{"install", "-y", "-qq"}, missing...)...)
			cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
			out, err := cmd.CombinedOutput()
			if err != nil {
				return fmt.Errorf("%v: %s", err, out)
			}
			return nil
		}
		if err := install(); err != nil {
			exec.Command("apt-get", "update", "-qq").Run()
			if err := install(); err != nil {
				t.Fatalf("install %v: %v", missing, err)
			}
		}
		for _, sh := range missing {
			p, err := exec.LookPath(sh)
			if err != nil {
				t.Fatalf("%s installed but not found: %v", sh, err)
			}
			paths = append(paths, p)
		}
	}
	return paths
}

// TestTrimIdleChannels: after a burst, channels idle for longer than the
// TTL are closed, one stays warm, and calls go on.
func TestTrimIdleChannels(t *testing.T) {
	checkLeaks(t)
	e := sshtest.New(t)
	h := startHost(t, e, "trim", sshtest.HostOptions{})
	s := newRunner(t, h.cfg, SSHOptions{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run(t, s, "sleep", "0.3")
		}()
	}
	wg.Wait()
	if n := s.Status().Channels; n < 2 {
		t.Fatalf("burst opened %d channels", n)
	}
	s.mu.Lock()
	c := s.conn
	s.mu.Unlock()
	c.trimIdle(0)
	waitFor(t, func() bool { return s.Status().Channels == 1 })
	if got := run(t, s, "echo", "warm"); string(got.Stdout) != "warm\n" {
		t.Errorf("after trim: %q", got.Stdout)
	}
}
