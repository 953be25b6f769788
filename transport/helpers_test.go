package transport

import (
	"bytes"
	"context"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fleetmux/fleetmux/transport/sshtest"
)

// testHost is one sshd of the test suite and an SSHConfig that reaches it
// with the Env's key and a known_hosts file holding all its keys.
type testHost struct {
	*sshtest.Host
	env *sshtest.Env
	cfg *SSHConfig
}

func startHost(t testing.TB, e *sshtest.Env, name string, opts sshtest.HostOptions) *testHost {
	t.Helper()
	h := e.StartHost(name, opts)
	kh := filepath.Join(h.Dir, "known_hosts")
	sshtest.WriteKnownHosts(t, kh, sshtest.KnownHostsOptions{}, h)
	return &testHost{Host: h, env: e, cfg: &SSHConfig{
		Alias:                 name,
		HostName:              "127.0.0.1",
		Port:                  h.Port,
		User:                  e.User,
		IdentityFiles:         []string{e.UserKeyFile},
		IdentitiesOnly:        true,
		IdentityAgent:         "none",
		UserKnownHostsFiles:   []string{kh},
		StrictHostKeyChecking: "yes",
		ConnectTimeout:        5 * time.Second,
	}}
}

// config returns a copy of the host's SSHConfig for a test to modify.
func (h *testHost) config() *SSHConfig {
	c := *h.cfg
	return &c
}

// newRunner returns a runner closed at the end of the test.
func newRunner(t testing.TB, cfg *SSHConfig, opts SSHOptions) *SSH {
	t.Helper()
	s := NewSSH(cfg, opts)
	t.Cleanup(func() { s.Close() })
	return s
}

// checkLeaks fails the test if, after the test's cleanups, more goroutines
// run than when checkLeaks was called. Call it first, before anything that
// registers cleanups.
func checkLeaks(t testing.TB) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for {
			n := runtime.NumGoroutine()
			if n <= before {
				return
			}
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				t.Errorf("goroutine leak: %d before, %d after\n%s", before, n, buf)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

func run(t testing.TB, r Runner, argv ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := r.Run(ctx, argv, nil)
	if err != nil {
		t.Fatalf("Run(%q): %v", argv, err)
	}
	return res
}

func mustContain(t testing.TB, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want an error containing %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not contain %q", err, p)
		}
	}
}

// diffResults describes how two results differ ("" if they do not).
func diffResults(a, b Result) string {
	var out []string
	if !bytes.Equal(a.Stdout, b.Stdout) {
		out = append(out, "stdout: "+firstDiff(a.Stdout, b.Stdout))
	}
	if !bytes.Equal(a.Stderr, b.Stderr) {
		out = append(out, "stderr: "+firstDiff(a.Stderr, b.Stderr))
	}
	if a.ExitCode != b.ExitCode {
		out = append(out, "exit code: "+itoa(a.ExitCode)+" vs "+itoa(b.ExitCode))
	}
	return strings.Join(out, "; ")
}

func firstDiff(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	clip := func(x []byte) []byte {
		x = x[i:]
		if len(x) > 60 {
			x = x[:60]
		}
		return x
	}
	return "lengths " + itoa(len(a)) + " vs " + itoa(len(b)) + ", first difference at " + itoa(i) +
		": " + quote(clip(a)) + " vs " + quote(clip(b))
}

func itoa(i int) string { return strconv.Itoa(i) }

func quote(b []byte) string { return strconv.Quote(string(b)) }
