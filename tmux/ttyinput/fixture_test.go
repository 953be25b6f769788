package ttyinput

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetmux/fleetmux/tmux"
	"github.com/fleetmux/fleetmux/tmux/tmuxtest"
	"github.com/fleetmux/fleetmux/transport"
	"github.com/fleetmux/fleetmux/transport/sshtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	tmuxtest.SweepSockets(os.Getpid())
	os.Exit(code)
}

// fixtureCase is a real program in a pane and what the probe must say of
// it once it has settled.
type fixtureCase struct {
	name string
	cmd  string // the pane's command (sh -c), {dir} is a scratch directory
	want State
}

// fixture holds at least 12 real prompts, 4 silent-but-busy programs and
// shells at their prompts. Full-screen programs (less, vi) are Screen:
// not waiting for input (see State).
func fixture(sshPort int) []fixtureCase {
	cs := []fixtureCase{
		// Prompts.
		{"read -s (password, echo off)", `bash --norc --noprofile -c 'read -s -p Password: x'`, Password},
		{"python getpass", `python3 -c 'import getpass; getpass.getpass()'`, Password},
		{"ssh-keygen passphrase", `ssh-keygen -q -t ed25519 -f {dir}/k`, Password},
		{"stty -echo; read (sh)", `sh -c 'stty -echo; printf "secret: "; read x'`, Password},
		{"read -p", `bash --norc --noprofile -c 'read -p "Name: " x'`, Line},
		{"rm -i (y/n)", `touch {dir}/f && rm -i {dir}/f`, Line},
		{"python input()", `python3 -c 'input("q? ")'`, Line},
		{"bash select", `bash --norc --noprofile -c 'select x in a b; do :; done'`, Line},
		{"cat with no input", `cat`, Line},
		{"make asks (read in a recipe)", `printf 'all:\n\t@sh -c "read -p ok? x"\n' > {dir}/Makefile && make -s -C {dir}`, Line},
		{"python REPL", `python3 -q`, Keys},
		{"node REPL", `node`, Keys},
		{"bc", `bc -q`, Keys},
		{"less (full screen)", `less /etc/passwd`, Screen},
		{"vi (full screen)", `vi {dir}/x.txt`, Screen},
		// Silent but busy.
		{"sleep", `sleep 1000`, Busy},
		{"busy loop", `sh -c 'while :; do :; done'`, Busy},
		{"make waiting on a silent child", `printf 'all:\n\t@sleep 1000\n' > {dir}/Makefile && make -s -C {dir}`, Busy},
		{"cat reading a silent pipe", `sh -c 'sleep 1000 | cat'`, Busy},
		{"network accept", `python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(); s.accept()'`, Busy},
		{"network poll", `python3 -c 'import socket,select; s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(); select.select([s],[],[])'`, Busy},
		// Shells at their prompts.
		{"bash prompt", `exec bash --norc --noprofile`, Shell},
		{"zsh prompt", `exec zsh -f`, Shell},
		{"fish prompt", `exec fish --no-config`, Shell},
		{"dash prompt", `exec dash`, Shell},
	}
	if sshPort > 0 {
		cs = append(cs, fixtureCase{"ssh host-key question",
			fmt.Sprintf(`ssh -F /dev/null -o UserKnownHostsFile={dir}/kh -o GlobalKnownHostsFile=/dev/null -o StrictHostKeyChecking=ask -p %d 127.0.0.1 true`, sshPort), Line})
	}
	return cs
}

// need are the programs the fixture runs; the README's test command
// installs them (.ci/test.sh).
var need = []string{"python3", "node", "bc", "less", "vi", "make", "zsh", "fish", "dash", "ssh", "ssh-keygen"}

func checkNeeds(t *testing.T) {
	t.Helper()
	for _, n := range need {
		if _, err := exec.LookPath(n); err != nil {
			t.Fatalf("fixture needs %s: %v", n, err)
		}
	}
}

// runFixture starts every case in its own window of srv and probes them
// all, round after round, until each has said what it should twice in a
// row, or a generous bound passes. It returns the last line and report
// of each case.
func runFixture(t *testing.T, srv *testServer, cs []fixtureCase, local bool) (lines []string, got []Report) {
	t.Helper()
	ctx := context.Background()
	run := func(args ...string) string {
		t.Helper()
		out, err := srv.Cmd(ctx, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return strings.Join(out, "\n")
	}
	panes := make([]string, len(cs))
	for i, c := range cs {
		dir := t.TempDir()
		cmd := strings.ReplaceAll(c.cmd, "{dir}", dir)
		panes[i] = run("new-window", "-d", "-P", "-F", "#{pane_id}", "-e", "HOME="+dir, "-c", dir, cmd)
	}
	lines, got = make([]string, len(cs)), make([]Report, len(cs))
	streak := make([]int, len(cs))
	deadline := time.Now().Add(90 * time.Second)
	for {
		done := true
		for i, pane := range panes {
			if streak[i] >= 2 {
				continue
			}
			req, err := NewRequest(pane, local)
			if err != nil {
				t.Fatal(err)
			}
			replies, err := srv.Batch(ctx, req.Cmds()...)
			if err != nil {
				t.Fatalf("%s: %v", cs[i].name, err)
			}
			lines[i], got[i], _ = req.read(ctx, replies)
			if got[i].State == cs[i].want {
				streak[i]++
			} else {
				streak[i] = 0
			}
			done = done && streak[i] >= 2
		}
		if done || time.Now().After(deadline) {
			return lines, got
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func reportFixture(t *testing.T, cs []fixtureCase, lines []string, got []Report) {
	t.Helper()
	for i, c := range cs {
		waiting := "null"
		if w := got[i].Waiting(); w != nil {
			waiting = fmt.Sprint(*w)
		}
		t.Logf("%-34s %-8s waiting_for_input=%s", c.name, got[i].State, waiting)
		if got[i].State != c.want {
			t.Errorf("%s: probe said %s, want %s\nline: %s", c.name, got[i].State, c.want, lines[i])
		}
		if s, ok := parse(lines[i]); ok && s.String() != lines[i] {
			t.Errorf("%s: line does not write back as itself:\n%s\n%s", c.name, lines[i], s.String())
		}
		// Where /proc/PID/syscall is not readable the answer is the same
		// or unknown, never another one.
		if fb := judge(lines[i], false); fb.State != c.want && fb.State != Unknown {
			t.Errorf("%s: without syscall the probe said %s, want %s or unknown\nline: %s", c.name, fb.State, c.want, lines[i])
		}
	}
}

// testServer is a tmux server of the tests with the runner that reaches
// it, for the commands that set panes up (plain argv).
type testServer struct {
	*tmux.Server
	r transport.Runner
}

// Cmd runs one tmux command given as its arguments; stderr is an error.
func (s *testServer) Cmd(ctx context.Context, args ...string) ([]string, error) {
	res, err := s.r.Run(ctx, s.Argv(args...), nil)
	if err != nil {
		return nil, err
	}
	if res.ExitCode != 0 || len(res.Stderr) > 0 {
		return nil, fmt.Errorf("%v: exit %d: %s", args, res.ExitCode, res.Stderr)
	}
	return tmux.SplitLines(res.Stdout), nil
}

func localServer(t *testing.T) *testServer { return localServerB(t) }

func localServerB(t testing.TB) *testServer {
	t.Helper()
	sock := fmt.Sprintf("fleetmux-test-ttyinput-%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)
	if out, err := tmuxtest.Command("-L", sock, "-f", "/dev/null", "new-session", "-d", "-s", "s", "-x", "100", "-y", "30", "bash --norc --noprofile").CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	t.Cleanup(func() { _ = tmuxtest.Command("-L", sock, "kill-server").Run() })
	r := transport.NewLocal()
	return &testServer{&tmux.Server{Executor: tmux.NewExecutor(r), SocketName: sock, Bin: os.Getenv(tmuxtest.EnvBin)}, r}
}

// TestFixtureLocal: every prompt, busy program and shell of the fixture,
// on a local tmux server, read in Go (the local probe) and by the script
// (the remote probe, run here).
func TestFixtureLocal(t *testing.T) {
	checkNeeds(t)
	e := sshtest.New(t)
	h := e.StartHost("hostkey", sshtest.HostOptions{})
	cs := fixture(h.Port)
	for _, mode := range []struct {
		name  string
		local bool
	}{{"go", true}, {"script", false}} {
		t.Run(mode.name, func(t *testing.T) {
			lines, got := runFixture(t, localServer(t), cs, mode.local)
			reportFixture(t, cs, lines, got)
		})
	}
}

// remoteServer is a tmux server on a real sshd of the test suite,
// reached through the SSH transport.
func remoteServer(t *testing.T, e *sshtest.Env) *testServer {
	t.Helper()
	h := e.StartHost("ttyinput", sshtest.HostOptions{})
	kh := filepath.Join(h.Dir, "known_hosts")
	sshtest.WriteKnownHosts(t, kh, sshtest.KnownHostsOptions{}, h)
	r := transport.NewSSH(&transport.SSHConfig{
		Alias: "ttyinput", HostName: "127.0.0.1", Port: h.Port, User: e.User,
		IdentityFiles: []string{e.UserKeyFile}, IdentitiesOnly: true, IdentityAgent: "none",
		UserKnownHostsFiles: []string{kh}, StrictHostKeyChecking: "yes", ConnectTimeout: 10 * time.Second,
	}, transport.SSHOptions{})
	t.Cleanup(func() { _ = r.Close() })
	srv := &testServer{&tmux.Server{Executor: tmux.NewExecutor(r), SocketName: fmt.Sprintf("fleetmux-test-ttyinput-remote-%d", os.Getpid()), Bin: os.Getenv(tmuxtest.EnvBin)}, r}
	ctx := context.Background()
	if _, err := srv.Cmd(ctx, "-f", "/dev/null", "new-session", "-d", "-s", "s", "-x", "100", "-y", "30", "bash --norc --noprofile"); err != nil {
		t.Fatalf("remote new-session: %v", err)
	}
	t.Cleanup(func() { _, _ = srv.Cmd(context.Background(), "kill-server") })
	return srv
}

// TestFixtureRemote: the same fixture on a tmux server behind a real
// sshd, probed through the SSH transport (one request per probe).
func TestFixtureRemote(t *testing.T) {
	checkNeeds(t)
	e := sshtest.New(t)
	kh := e.StartHost("hostkey", sshtest.HostOptions{})
	cs := fixture(kh.Port)
	lines, got := runFixture(t, remoteServer(t, e), cs, false)
	reportFixture(t, cs, lines, got)
}
