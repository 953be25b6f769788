package transport

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/fleetmux/fleetmux/transport/sshtest"
)

var bothPaths = []struct {
	name string
	opts SSHOptions
}{
	{"per-command", SSHOptions{PerCommand: true}},
	{"channel", SSHOptions{}},
}

func TestSSHRoundTrip(t *testing.T) {
	checkLeaks(t)
	e := sshtest.New(t)
	h := startHost(t, e, "alpha", sshtest.HostOptions{})
	for _, p := range bothPaths {
		t.Run(p.name, func(t *testing.T) {
			s := newRunner(t, h.cfg, p.opts)
			if got := run(t, s, "tmux", "-V"); !strings.HasPrefix(string(got.Stdout), "tmux ") {
				t.Errorf("tmux -V: %q", got.Stdout)
			}
			argv := append([]string{"printf", `%s\000`}, hostileArgs...)
			got := run(t, s, argv...)
			want := strings.Join(hostileArgs, "\x00") + "\x00"
			if string(got.Stdout) != want {
				t.Errorf("hostile args:\n got %q\nwant %q", got.Stdout, want)
			}
			res, err := s.Run(context.Background(), []string{"sh", "-c", "cat; echo oops >&2; exit 3"}, []byte("in\x00put"))
			if err != nil || string(res.Stdout) != "in\x00put" || string(res.Stderr) != "oops\n" || res.ExitCode != 3 {
				t.Errorf("stdin/exit: %+v, %v", res, err)
			}
			_, err = s.Run(context.Background(), []string{"no-such-binary-fleetmux"}, nil)
			if !errors.Is(err, ErrNotFound) {
				t.Errorf("missing binary: err = %v, want ErrNotFound", err)
			}
			mustContain(t, err, "ssh alpha: ", "no-such-binary-fleetmux")
			st := s.Status()
			if st.State != SSHConnected || st.ConnectedSince.IsZero() || st.LastError != nil {
				t.Errorf("status = %+v", st)
			}
			if _, err := s.Run(context.Background(), []string{"a\x00b"}, nil); !errors.Is(err, ErrNUL) {
				t.Errorf("NUL: %v", err)
			}
		})
	}
}

// TestSSHDifferential: every case gives byte-identical results through a
// session per command and through a command channel.
func TestSSHDifferential(t *testing.T) {
	checkLeaks(t)
	e := sshtest.New(t)
	h := startHost(t, e, "diff", sshtest.HostOptions{})
	per := newRunner(t, h.cfg, SSHOptions{PerCommand: true})
	fast := newRunner(t, h.cfg, SSHOptions{})
	ctx := context.Background()
	for _, tc := range differentialCases() {
		a, errA := per.Run(ctx, tc.argv, tc.stdin)
		b, errB := fast.Run(ctx, tc.argv, tc.stdin)
		if errA != nil || errB != nil {
			t.Fatalf("%s: per-command err %v, channel err %v", tc.name, errA, errB)
		}
		if d := diffResults(a, b); d != "" {
			t.Errorf("%s: per-command vs channel: %s", tc.name, d)
		}
	}
	// Large stdin takes a per-command session even on the fast path.
	big := make([]byte, maxChannelStdin+1)
	rand.Read(big)
	res, err := fast.Run(ctx, []string{"cat"}, big)
	if err != nil || string(res.Stdout) != string(big) {
		t.Errorf("large stdin: %d bytes back, %v", len(res.Stdout), err)
	}
}

func TestSSHHostKeyUnknown(t *testing.T) {
	checkLeaks(t)
	e := sshtest.New(t)
	h := startHost(t, e, "stranger", sshtest.HostOptions{})
	for _, strict := range []string{"yes", "ask", ""} {
		cfg := h.config()
		cfg.StrictHostKeyChecking = strict
		cfg.UserKnownHostsFiles = []string{filepath.Join(t.TempDir(), "missing", "known_hosts")}
		s := newRunner(t, cfg, SSHOptions{})
		_, err := s.Run(context.Background(), []string{"true"}, nil)
		if !errors.Is(err, ErrHostKeyUnknown) {
			t.Fatalf("strict %q: err = %v, want ErrHostKeyUnknown", strict, err)
		}
		mustContain(t, err, "ssh stranger: ", h.KnownHostsName(), ssh.FingerprintSHA256(h.HostKeys[0]))
		var hke *HostKeyError
		if !errors.As(err, &hke) || hke.Fingerprint != ssh.FingerprintSHA256(h.HostKeys[0]) {
			t.Errorf("HostKeyError = %+v", hke)
		}
		if st := s.Status(); st.State != SSHUnreachable || st.LastError == nil {
			t.Errorf("status = %+v", st)
		}
		if _, err := os.Stat(cfg.UserKnownHostsFiles[0]); err == nil {
			t.Error("known_hosts written with StrictHostKeyChecking " + strict)
		}
	}
}

func TestSSHHostKeyChanged(t *testing.T) {
	checkLeaks(t)
	e := sshtest.New(t)
	h := startHost(t, e, "victim", sshtest.HostOptions{})
	impostor := e.StartHost("impostor", sshtest.HostOptions{})
	for _, strict := range []string{"yes", "accept-new", "no"} {
		// known_hosts holds the real host's ed25519 key; the impostor
		// answers on the port recorded for it.
		cfg := h.config()
		cfg.Port = impostor.Port
		cfg.StrictHostKeyChecking = strict
		kh := filepath.Join(t.TempDir(), "known_hosts")
		sshtest.WriteKnownHosts(t, kh, sshtest.KnownHostsOptions{Name: impostor.KnownHostsName(), KeyTypes: []string{"ssh-ed25519"}}, h.Host)
		before, _ := os.ReadFile(kh)
		cfg.UserKnownHostsFiles = []string{kh}
		s := newRunner(t, cfg, SSHOptions{})
		_, err := s.Run(context.Background(), []string{"true"}, nil)
		if !errors.Is(err, ErrHostKeyChanged) {
			t.Fatalf("strict %q: err = %v, want ErrHostKeyChanged", strict, err)
		}
		mustContain(t, err, "ssh victim: ", "HOST KEY CHANGED", impostor.KnownHostsName(),
			ssh.FingerprintSHA256(impostor.HostKeys[0]), ssh.FingerprintSHA256(h.HostKeys[0]), kh+":1")
		if after, _ := os.ReadFile(kh); string(after) != string(before) {
			t.Errorf("strict %q: known_hosts changed", strict)
		}
	}
}

func TestSSHHostKeyRevoked(t *testing.T) {
	e := sshtest.New(t)
	h := startHost(t, e, "revoked", sshtest.HostOptions{})
	kh := filepath.Join(t.TempDir(), "known_hosts")
	lines := h.KnownHostsLines(sshtest.KnownHostsOptions{})
	lines = append(lines, "@revoked * "+strings.TrimSpace(string(ssh.MarshalAuthorizedKey(h.HostKeys[0]))))
	os.WriteFile(kh, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
	cfg := h.config()
	cfg.UserKnownHostsFiles = []string{kh}
	_, err := newRunner(t, cfg, SSHOptions{}).Run(context.Background(), []string{"true"}, nil)
	if !errors.Is(err, ErrHostKeyChanged) {
		t.Fatalf("err = %v, want ErrHostKeyChanged", err)
	}
	mustContain(t, err, "@revoked", kh+":4")
}

func TestSSHAcceptNew(t *testing.T) {
	checkLeaks(t)
	e := sshtest.New(t)
	h := startHost(t, e, "newbie", sshtest.HostOptions{})
	for _, hashed := range []bool{false, true} {
		t.Run(fmt.Sprintf("hashed=%v", hashed), func(t *testing.T) {
			cfg := h.config()
			cfg.StrictHostKeyChecking = "accept-new"
			cfg.HashKnownHosts = hashed
			kh := filepath.Join(t.TempDir(), "ssh", "known_hosts")
			cfg.UserKnownHostsFiles = []string{kh, filepath.Join(t.TempDir(), "known_hosts2")}
			run(t, newRunner(t, cfg, SSHOptions{}), "true")
			data, err := os.ReadFile(kh)
			if err != nil {
				t.Fatal(err)
			}
			text := string(data)
			if strings.Count(text, "\n") != 1 || hashed != strings.HasPrefix(text, "|1|") ||
				!hashed && !strings.HasPrefix(text, h.KnownHostsName()+" ssh-ed25519 ") {
				t.Errorf("known_hosts = %q", text)
			}
			// The recorded key is now required.
			cfg.StrictHostKeyChecking = "yes"
			run(t, newRunner(t, cfg, SSHOptions{}), "true")
			if after, _ := os.ReadFile(kh); string(after) != text {
				t.Errorf("second connect changed known_hosts: %q", after)
			}
		})
	}
}

// TestSSHHostKeyAlgorithms: a host known by one key type only, hashed or
// not, is accepted although it has others (x/crypto alone would negotiate
// ECDSA first and report a mismatch).
func TestSSHHostKeyAlgorithms(t *testing.T) {
	checkLeaks(t)
	e := sshtest.New(t)
	h := startHost(t, e, "algos", sshtest.HostOptions{})
	for _, kt := range []string{"ssh-ed25519", "ecdsa-sha2-nistp256", "ssh-rsa"} {
		for _, hashed := range []bool{false, true} {
			kh := filepath.Join(t.TempDir(), "known_hosts")
			sshtest.WriteKnownHosts(t, kh, sshtest.KnownHostsOptions{KeyTypes: []string{kt}, Hashed: hashed}, h.Host)
			cfg := h.config()
			cfg.UserKnownHostsFiles = []string{kh}
			s := newRunner(t, cfg, SSHOptions{})
			if _, err := s.Run(context.Background(), []string{"true"}, nil); err != nil {
				t.Errorf("known by %s (hashed %v): %v", kt, hashed, err)
			}
			s.Close()
		}
	}
}

func TestSSHHostKeyAlias(t *testing.T) {
	e := sshtest.New(t)
	h := startHost(t, e, "aliased", sshtest.HostOptions{})
	kh := filepath.Join(t.TempDir(), "known_hosts")
	sshtest.WriteKnownHosts(t, kh, sshtest.KnownHostsOptions{Name: "box.example"}, h.Host)
	cfg := h.config()
	cfg.UserKnownHostsFiles = []string{kh}
	cfg.HostKeyAlias = "box.example"
	run(t, newRunner(t, cfg, SSHOptions{}), "true")

	// An alias in known_hosts' "[host]:port" form is matched verbatim, as
	// ssh does, not wrapped again.
	bracketed := "[127.0.0.1]:" + strconv.Itoa(h.Port+1)
	kh2 := filepath.Join(t.TempDir(), "known_hosts")
	sshtest.WriteKnownHosts(t, kh2, sshtest.KnownHostsOptions{Name: bracketed}, h.Host)
	cfg.UserKnownHostsFiles = []string{kh2}
	cfg.HostKeyAlias = bracketed
	run(t, newRunner(t, cfg, SSHOptions{}), "true")

	// accept-new records the alias, without a port.
	cfg.UserKnownHostsFiles = []string{filepath.Join(t.TempDir(), "kh")}
	cfg.StrictHostKeyChecking = "accept-new"
	cfg.HostKeyAlias = "other.example"
	run(t, newRunner(t, cfg, SSHOptions{}), "true")
	data, _ := os.ReadFile(cfg.UserKnownHostsFiles[0])
	if !strings.HasPrefix(string(data), "other.example ssh-ed25519 ") {
		t.Errorf("known_hosts = %q", data)
	}
}

// TestSSHKnownHostsMalformed: a line knownhosts.New cannot parse is
// skipped, as OpenSSH does, and the other files and lines still count
// (global file too; missing files are skipped).
func TestSSHKnownHostsMalformed(t *testing.T) {
	e := sshtest.New(t)
	h := startHost(t, e, "messy", sshtest.HostOptions{})
	dir := t.TempDir()
	user := filepath.Join(dir, "user")
	global := filepath.Join(dir, "global")
	os.WriteFile(user, []byte("garbage line here\n# comment\n\n@bogus-marker x ssh-ed25519 AAAA\n"), 0o600)
	lines := h.KnownHostsLines(sshtest.KnownHostsOptions{KeyTypes: []string{"ssh-ed25519"}})
	os.WriteFile(global, []byte("also bad\n"+lines[0]+"\n"), 0o600)
	cfg := h.config()
	cfg.UserKnownHostsFiles = []string{filepath.Join(dir, "missing"), user}
	cfg.GlobalKnownHostsFiles = []string{global}
	run(t, newRunner(t, cfg, SSHOptions{}), "true")

	// A changed key is still reported with the original file and line.
	os.WriteFile(global, []byte("also bad\n"+strings.Replace(lines[0], h.KnownHostsName(), h.KnownHostsName()+",x", 1)+"\n"), 0o600)
	other, _ := ssh.NewPublicKey(ed25519.PublicKey(make([]byte, 32)))
	os.WriteFile(global, []byte("also bad\n"+knownhosts.Line([]string{h.KnownHostsName()}, other)+"\n"), 0o600)
	_, err := newRunner(t, cfg, SSHOptions{}).Run(context.Background(), []string{"true"}, nil)
	if !errors.Is(err, ErrHostKeyChanged) {
		t.Fatalf("err = %v, want ErrHostKeyChanged", err)
	}
	mustContain(t, err, global+":2")
}

func TestSSHCertAuthority(t *testing.T) {
	e := sshtest.New(t)
	_, caKey, _ := ed25519.GenerateKey(rand.Reader)
	ca, _ := ssh.NewSignerFromKey(caKey)
	h := startHost(t, e, "certified", sshtest.HostOptions{HostCA: ca})
	kh := filepath.Join(t.TempDir(), "known_hosts")
	line := "@cert-authority " + h.KnownHostsName() + " " + string(ssh.MarshalAuthorizedKey(ca.PublicKey()))
	os.WriteFile(kh, []byte(line), 0o600)
	cfg := h.config()
	cfg.UserKnownHostsFiles = []string{kh}
	run(t, newRunner(t, cfg, SSHOptions{}), "true")

	// Plain keys only: the certificate is not requested, the plain key is
	// verified.
	sshtest.WriteKnownHosts(t, kh, sshtest.KnownHostsOptions{KeyTypes: []string{"ssh-ed25519"}}, h.Host)
	run(t, newRunner(t, cfg, SSHOptions{}), "true")
}

func TestSSHAuth(t *testing.T) {
	checkLeaks(t)
	e := sshtest.New(t)
	h := startHost(t, e, "auth", sshtest.HostOptions{})
	ctx := context.Background()

	// An agent holding an authorized key not named by any IdentityFile.
	_, agentOnly, _ := ed25519.GenerateKey(rand.Reader)
	pub, _ := ssh.NewPublicKey(agentOnly.Public())
	e.Authorize(pub)
	sock := sshtest.StartAgent(t, agentOnly)

	t.Run("identity file", func(t *testing.T) {
		run(t, newRunner(t, h.cfg, SSHOptions{}), "true")
	})
	t.Run("agent", func(t *testing.T) {
		cfg := h.config()
		cfg.IdentityFiles = []string{filepath.Join(t.TempDir(), "missing")}
		cfg.IdentitiesOnly = false
		cfg.IdentityAgent = sock
		run(t, newRunner(t, cfg, SSHOptions{}), "true")

		t.Setenv("SSH_AUTH_SOCK", sock)
		for _, ia := range []string{"", "SSH_AUTH_SOCK"} {
			cfg.IdentityAgent = ia
			run(t, newRunner(t, cfg, SSHOptions{}), "true")
		}
		cfg.IdentityAgent = "none"
		_, err := newRunner(t, cfg, SSHOptions{}).Run(ctx, []string{"true"}, nil)
		if !errors.Is(err, ErrAuth) {
			t.Errorf("IdentityAgent none: err = %v, want ErrAuth", err)
		}
	})
	t.Run("identities only filters agent keys", func(t *testing.T) {
		unauthorized, _ := e.NewUserKey("stranger", "", false)
		cfg := h.config()
		cfg.IdentityFiles = []string{unauthorized}
		cfg.IdentitiesOnly = true
		cfg.IdentityAgent = sock
		_, err := newRunner(t, cfg, SSHOptions{}).Run(ctx, []string{"true"}, nil)
		if !errors.Is(err, ErrAuth) {
			t.Fatalf("err = %v, want ErrAuth (the agent's key must not be offered)", err)
		}
		mustContain(t, err, "ssh auth: ", unauthorized)
		cfg.IdentitiesOnly = false
		run(t, newRunner(t, cfg, SSHOptions{}), "true")

		// IdentityFile naming only a public key the agent holds.
		pubOnly := filepath.Join(t.TempDir(), "id_agent")
		os.WriteFile(pubOnly+".pub", ssh.MarshalAuthorizedKey(pub), 0o644)
		cfg.IdentityFiles = []string{unauthorized, pubOnly}
		cfg.IdentitiesOnly = true
		run(t, newRunner(t, cfg, SSHOptions{}), "true")
	})
	t.Run("encrypted key", func(t *testing.T) {
		path, signer := e.NewUserKey("locked", "secret", true)
		cfg := h.config()
		cfg.IdentityFiles = []string{path}
		cfg.IdentityAgent = "none"
		_, err := newRunner(t, cfg, SSHOptions{}).Run(ctx, []string{"true"}, nil)
		if !errors.Is(err, ErrAuth) {
			t.Fatalf("err = %v, want ErrAuth", err)
		}
		mustContain(t, err, path, "encrypted", "ssh-add")

		// The same file works when an agent holds its key.
		raw, err := ssh.ParseRawPrivateKeyWithPassphrase(mustRead(t, path), []byte("secret"))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(signer.PublicKey().Marshal(), mustPub(t, raw).Marshal()) {
			t.Fatal("key mismatch")
		}
		cfg.IdentityAgent = sshtest.StartAgent(t, raw)
		cfg.IdentitiesOnly = true
		run(t, newRunner(t, cfg, SSHOptions{}), "true")
	})
}

func mustRead(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustPub(t testing.TB, key any) ssh.PublicKey {
	t.Helper()
	s, err := ssh.NewSignerFromKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return s.PublicKey()
}

func TestSSHProxyJump(t *testing.T) {
	checkLeaks(t)
	e := sshtest.New(t)
	bastion := startHost(t, e, "bastion", sshtest.HostOptions{})
	target := startHost(t, e, "target", sshtest.HostOptions{})
	cfg := target.config()
	cfg.Jumps = []*SSHConfig{bastion.config(), bastion.config()} // two hops
	s := newRunner(t, cfg, SSHOptions{})
	if got := run(t, s, "sh", "-c", "echo $TMUX_TMPDIR"); strings.TrimSpace(string(got.Stdout)) != target.TmuxTmpDir {
		t.Errorf("ran on %q, want the target (%s)", got.Stdout, target.TmuxTmpDir)
	}
	if n := strings.Count(bastion.Log(), "Accepted publickey"); n != 2 {
		t.Errorf("bastion saw %d logins, want 2 (one per hop)", n)
	}
	s.Close()

	// Each hop checks its own host key.
	hop := bastion.config()
	hop.UserKnownHostsFiles = []string{filepath.Join(t.TempDir(), "empty")}
	cfg.Jumps = []*SSHConfig{hop}
	_, err := newRunner(t, cfg, SSHOptions{}).Run(context.Background(), []string{"true"}, nil)
	if !errors.Is(err, ErrHostKeyUnknown) {
		t.Fatalf("err = %v, want ErrHostKeyUnknown", err)
	}
	mustContain(t, err, "ssh target: jump host 1 (bastion): ", bastion.KnownHostsName())

	// A dead bastion makes the target unreachable.
	bastion.Stop()
	cfg.Jumps = []*SSHConfig{bastion.config()}
	_, err = newRunner(t, cfg, SSHOptions{}).Run(context.Background(), []string{"true"}, nil)
	if !errors.Is(err, ErrUnreachable) {
		t.Fatalf("err = %v, want ErrUnreachable", err)
	}
}

// TestSSHRestart: a host that goes away fails the calls made while it is
// down, and the first call after it is back reconnects by itself.
func TestSSHRestart(t *testing.T) {
	checkLeaks(t)
	e := sshtest.New(t)
	h := startHost(t, e, "phoenix", sshtest.HostOptions{})
	for _, p := range bothPaths {
		t.Run(p.name, func(t *testing.T) {
			cfg := h.config()
			cfg.ConnectTimeout = time.Second
			s := newRunner(t, cfg, p.opts)
			run(t, s, "true")

			// Restarted between two calls: the second call does not notice.
			h.Restart()
			run(t, s, "true")

			// Down: calls fail, naming the host, within ConnectTimeout.
			h.Stop()
			start := time.Now()
			_, err := s.Run(context.Background(), []string{"true"}, nil)
			if !errors.Is(err, ErrUnreachable) {
				t.Fatalf("host down: err = %v, want ErrUnreachable", err)
			}
			mustContain(t, err, "ssh phoenix: ")
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("failure took %s", d)
			}
			if st := s.Status(); st.State != SSHUnreachable {
				t.Errorf("status %+v", st)
			}
			h.Restart()
			run(t, s, "true")
			if st := s.Status(); st.State != SSHConnected {
				t.Errorf("status %+v", st)
			}
		})
	}
}

// TestSSHDropMidCommand: a command in flight when the connection dies
// fails, and is not re-run; the next call reconnects.
func TestSSHDropMidCommand(t *testing.T) {
	checkLeaks(t)
	e := sshtest.New(t)
	h := startHost(t, e, "dropper", sshtest.HostOptions{})
	for _, p := range bothPaths {
		t.Run(p.name, func(t *testing.T) {
			s := newRunner(t, h.cfg, p.opts)
			counter := filepath.Join(t.TempDir(), "runs")
			errc := make(chan error, 1)
			go func() {
				_, err := s.Run(context.Background(), []string{"sh", "-c", "echo run >> " + counter + "; sleep 5"}, nil)
				errc <- err
			}()
			waitFor(t, func() bool { b, _ := os.ReadFile(counter); return len(b) > 0 })
			h.Restart()
			select {
			case err := <-errc:
				if err == nil {
					t.Fatal("command survived the connection's death")
				}
				mustContain(t, err, "ssh dropper: ")
			case <-time.After(4 * time.Second):
				t.Fatal("call did not fail when the connection dropped")
			}
			run(t, s, "true")
			if b, _ := os.ReadFile(counter); string(b) != "run\n" {
				t.Errorf("command ran %d times", strings.Count(string(b), "run"))
			}
		})
	}
}

func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestSSHHungHost(t *testing.T) {
	checkLeaks(t)
	addr := sshtest.HungHost(t)
	host, port, _ := strings.Cut(addr, ":")
	var p int
	fmt.Sscan(port, &p)
	cfg := &SSHConfig{Alias: "hung", HostName: host, Port: p, User: "nobody", StrictHostKeyChecking: "yes",
		IdentityAgent: "none", ConnectTimeout: 500 * time.Millisecond}
	s := newRunner(t, cfg, SSHOptions{})
	var wg sync.WaitGroup
	for range 3 { // concurrent callers share one dial
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			_, err := s.Run(context.Background(), []string{"true"}, nil)
			if !errors.Is(err, ErrUnreachable) {
				t.Errorf("err = %v, want ErrUnreachable", err)
			}
			if d := time.Since(start); d < 400*time.Millisecond || d > 1500*time.Millisecond {
				t.Errorf("failed after %s, want about 500ms", d)
			}
			mustContain(t, err, "ssh hung: ", "500ms")
		}()
	}
	wg.Wait()

	// A caller's own deadline ends its wait sooner.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := s.Run(ctx, []string{"true"}, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want deadline exceeded", err)
	}
	if d := time.Since(start); d > 400*time.Millisecond {
		t.Errorf("caller deadline honoured after %s", d)
	}
}

// TestSSHMaxSessions: more concurrent calls than the server's MaxSessions
// queue instead of failing.
func TestSSHMaxSessions(t *testing.T) {
	checkLeaks(t)
	e := sshtest.New(t)
	h := startHost(t, e, "narrow", sshtest.HostOptions{MaxSessions: 3})
	for _, p := range bothPaths {
		t.Run(p.name, func(t *testing.T) {
			opts := p.opts
			opts.MaxSessions = 3
			s := newRunner(t, h.cfg, opts)
			var wg sync.WaitGroup
			for i := range 20 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res, err := s.Run(context.Background(), []string{"sh", "-c", "sleep 0.1; echo $0", fmt.Sprint(i)}, nil)
					if err != nil || strings.TrimSpace(string(res.Stdout)) != fmt.Sprint(i) {
						t.Errorf("call %d: %q, %v", i, res.Stdout, err)
					}
				}()
			}
			wg.Wait()
		})
	}
	// The runner's cap above the server's: refused opens are retried.
	s := newRunner(t, h.cfg, SSHOptions{MaxSessions: 6, PerCommand: true})
	var wg sync.WaitGroup
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.Run(context.Background(), []string{"sleep", "0.1"}, nil); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
}

func TestSSHKeepalive(t *testing.T) {
	checkLeaks(t)
	e := sshtest.New(t)
	h := startHost(t, e, "alive", sshtest.HostOptions{})
	cfg := h.config()
	cfg.ServerAliveInterval = 100 * time.Millisecond
	cfg.ServerAliveCountMax = 2
	s := newRunner(t, cfg, SSHOptions{})
	run(t, s, "true")
	rtt, err := s.Ping(context.Background())
	if err != nil || rtt <= 0 {
		t.Fatalf("Ping = %v, %v", rtt, err)
	}
	// Freeze the server side: keepalives go unanswered and the connection
	// is dropped after about 2 intervals.
	for _, pid := range append(sshtest.Descendants(h.PID()), h.PID()) {
		syscall.Kill(pid, syscall.SIGSTOP)
	}
	waitFor(t, func() bool { return s.Status().State != SSHConnected })
	for _, pid := range append(sshtest.Descendants(h.PID()), h.PID()) {
		syscall.Kill(pid, syscall.SIGCONT)
	}
	st := s.Status()
	if st.LastError == nil || !strings.Contains(st.LastError.Error(), "keepalive") {
		t.Errorf("status %+v", st)
	}
	run(t, s, "true")
}

func TestSSHClose(t *testing.T) {
	checkLeaks(t)
	e := sshtest.New(t)
	h := startHost(t, e, "closer", sshtest.HostOptions{})
	s := NewSSH(h.cfg, SSHOptions{})
	run(t, s, "true")
	errc := make(chan error, 1)
	go func() {
		_, err := s.Run(context.Background(), []string{"sleep", "10"}, nil)
		errc <- err
	}()
	time.Sleep(200 * time.Millisecond)
	s.Close()
	select {
	case err := <-errc:
		if err == nil {
			t.Error("call in flight succeeded after Close")
		}
	case <-time.After(3 * time.Second):
		t.Fatal("call in flight still blocked after Close")
	}
	if _, err := s.Run(context.Background(), []string{"true"}, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
	s.Close()
}
