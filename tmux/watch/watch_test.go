package watch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
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

func TestParseRchar(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"rchar: 11118\nwchar: 10\n", 11118, true},
		{"rchar: 0\n", 0, true},
		{"wchar: 1\n", 0, false},
		{"rchar: \n", 0, false},
		{"rchar: 99999999999999999999\n", 0, false},
		{"", 0, false},
	} {
		got, err := parseRchar([]byte(tc.in))
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseRchar(%q) = %d, %v; want %d ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// TestLearner: a look is due exactly when the counter is not where the
// last look (and its learned cost) left it; output during a look is
// never taken for the look's own cost.
func TestLearner(t *testing.T) {
	type step struct {
		read  int64 // counter at a tick
		due   bool  // want a look
		after int64 // counter after the look (when due)
		why   string
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"free looks, silence", []step{
			{100, true, 100, "first look"},
			{100, true, 100, "second look learns the cost"},
			{100, false, 0, "silent"},
			{100, false, 0, "silent"},
			{130, true, 130, "output"},
			{130, false, 0, "silent again"},
		}},
		{"looks cost 12", []step{
			{100, true, 112, "first look"},
			{112, true, 124, "second look"},
			{124, false, 0, "its own cost does not set off a look"},
			{150, true, 162, "output"},
			{162, false, 0, "silent"},
		}},
		{"output during the first look", []step{
			{100, true, 150, "first look, output during it"},
			{150, true, 150, "second look: cost 0 learned"},
			{150, false, 0, "silent"},
		}},
		{"output during a later look", []step{
			{100, true, 100, ""},
			{100, true, 100, ""},
			{120, true, 140, "output after the capture"},
			{140, true, 140, "looked again"},
			{140, false, 0, "silent"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l learner
			for i, s := range tc.steps {
				if got := l.due(s.read); got != s.due {
					t.Fatalf("step %d (%s): due(%d) = %v, want %v", i, s.why, s.read, got, s.due)
				}
				if s.due {
					l.looked(s.read, s.after)
				}
			}
		})
	}
}

var socketSeq atomic.Int64

// localServer starts a private tmux server whose pane runs bash without
// rc files.
func localServer(t *testing.T) *tmux.Server {
	t.Helper()
	sock := fmt.Sprintf("fleetmux-test-watch-%d-%d", os.Getpid(), socketSeq.Add(1))
	if out, err := tmuxtest.Command("-L", sock, "-f", "/dev/null", "new-session", "-d", "-s", "s", "bash --norc --noprofile").CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	t.Cleanup(func() { tmuxtest.Command("-L", sock, "kill-server").Run() })
	return &tmux.Server{Executor: tmux.NewExecutor(transport.NewLocal()), SocketName: sock, Bin: os.Getenv(tmuxtest.EnvBin)}
}

func firstPane(t *testing.T, srv *tmux.Server) string {
	t.Helper()
	lines, err := srv.Do(context.Background(), tmux.ListIDs("pane", ""))
	if err != nil || len(lines) == 0 {
		t.Fatalf("list panes: %v %q", err, lines)
	}
	return lines[0]
}

// paneLook is a subscriber's look: the pane's history size and screen.
func paneLook(pane string) []tmux.Cmd {
	return []tmux.Cmd{tmux.DisplayMessage(pane, "#{history_size}"), tmux.Capture{Target: pane, Start: "0", Join: true}.Cmd()}
}

// nextLook waits (bounded) for the subscriber's next look.
func nextLook(t *testing.T, s *Sub) []tmux.Reply {
	t.Helper()
	select {
	case <-s.Ready():
	case <-time.After(20 * time.Second):
		t.Fatal("no look within 20 s")
	}
	r, ok, err := s.Next()
	if err != nil {
		t.Fatalf("watcher: %v", err)
	}
	if !ok {
		t.Fatal("signalled without a look")
	}
	return r
}

// awaitText waits for a look whose screen has text.
func awaitText(t *testing.T, s *Sub, text string) []tmux.Reply {
	t.Helper()
	for {
		r := nextLook(t, s)
		if r[1].Err != nil {
			t.Fatalf("look failed: %v", r[1].Err)
		}
		if strings.Contains(strings.Join(r[1].Lines, "\n"), text) {
			return r
		}
	}
}

// quietLooks counts the looks a subscriber gets while nothing prints.
func quietLooks(s *Sub, d time.Duration) int {
	n := 0
	end := time.After(d)
	for {
		select {
		case <-s.Ready():
			if _, ok, _ := s.Next(); ok {
				n++
			}
		case <-end:
			return n
		}
	}
}

func sendLine(t *testing.T, srv *tmux.Server, pane, line string) {
	t.Helper()
	if _, err := srv.Do(context.Background(), tmux.SendKeys(pane, true, line), tmux.SendEnter(pane)); err != nil {
		t.Fatal(err)
	}
}

// quietThenSees checks a subscriber s of pane on host's watcher: after
// its first look and the shell's prompt, at most 3 looks in 500 ms of
// silence (polling would make 25); a look asked for (LookNow) comes
// while the pane is silent; then a printed word reaches a look, and the
// host waits by watching.
func quietThenSees(t *testing.T, hub *Hub, host string, s *Sub, srv *tmux.Server, pane, word string) {
	t.Helper()
	nextLook(t, s)
	quietLooks(s, 300*time.Millisecond) // bash prints its prompt
	quiet := quietLooks(s, 500*time.Millisecond)
	t.Logf("looks during 500 ms of silence: %d (polling would make 25)", quiet)
	if quiet > 3 {
		t.Errorf("%d looks during 500 ms of silence; the watcher looks only after output", quiet)
	}
	s.LookNow()
	nextLook(t, s)
	// The quotes keep the typed command line from matching word.
	sendLine(t, srv, pane, "echo "+word[:len(word)/2]+"''"+word[len(word)/2:])
	awaitText(t, s, word)
	if m, _ := hub.Mode(host); m != ModeWatch {
		t.Errorf("Mode = %q, want %q", m, ModeWatch)
	}
}

// TestLocalWatch: a subscriber gets a look at once, a look after output,
// and (almost) none while the pane is silent.
func TestLocalWatch(t *testing.T) {
	srv := localServer(t)
	pane := firstPane(t, srv)
	hub := NewHub(Options{})
	defer hub.Close()
	ctx := context.Background()
	s, err := hub.Watch(ctx, "local", true, srv, paneLook(pane))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	quietThenSees(t, hub, "local", s, srv, pane, "watched-1")
	// A second subscriber shares the watcher and gets its own look.
	s2, err := hub.Watch(ctx, "local", true, srv, []tmux.Cmd{tmux.DisplayMessage(pane, "#{pane_id}")})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if r := nextLook(t, s2); len(r) != 1 || len(r[0].Lines) != 1 || r[0].Lines[0] != pane {
		t.Errorf("second subscriber's look = %+v", r)
	}
	sendLine(t, srv, pane, "echo wat''ched-2")
	awaitText(t, s, "watched-2")
}

// TestLocalWatchFailedCommand: a subscriber whose pane went away gets
// the failure once; the others keep getting looks.
func TestLocalWatchFailedCommand(t *testing.T) {
	srv := localServer(t)
	pane := firstPane(t, srv)
	ctx := context.Background()
	out, err := srv.Do(ctx, tmux.SplitWindow(tmux.Split{Target: pane, Shell: "bash --norc --noprofile"}))
	if err != nil || len(out) != 1 {
		t.Fatalf("split: %v %q", err, out)
	}
	other := out[0]
	hub := NewHub(Options{})
	defer hub.Close()
	gone, err := hub.Watch(ctx, "local", true, srv, paneLook(other))
	if err != nil {
		t.Fatal(err)
	}
	defer gone.Close()
	s, err := hub.Watch(ctx, "local", true, srv, paneLook(pane))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	nextLook(t, gone)
	nextLook(t, s)
	if _, err := srv.Do(ctx, tmux.KillPane(other)); err != nil {
		t.Fatal(err)
	}
	sendLine(t, srv, pane, "echo after-kill")
	r := nextLook(t, gone)
	for r[1].Err == nil && r[0].Err == nil {
		r = nextLook(t, gone)
	}
	awaitText(t, s, "after-kill")
}

// TestLocalWatchServerGone: when the tmux server exits the subscribers
// are told: by a look that failed, or by the watcher's end.
func TestLocalWatchServerGone(t *testing.T) {
	srv := localServer(t)
	pane := firstPane(t, srv)
	hub := NewHub(Options{})
	defer hub.Close()
	s, err := hub.Watch(context.Background(), "local", true, srv, paneLook(pane))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	nextLook(t, s)
	tmuxtest.Command("-L", srv.SocketName, "kill-server").Run()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case <-s.Ready():
		case <-deadline:
			t.Fatal("subscriber not told within 20 s")
		}
		r, ok, err := s.Next()
		if err != nil {
			if !errors.Is(err, ErrStopped) {
				t.Errorf("err = %v, want ErrStopped", err)
			}
			return
		}
		if ok && (r[0].Err != nil || r[1].Err != nil) {
			return
		}
	}
}

// remoteHost is an sshd of the test suite and a tmux server on it.
func remoteHost(t *testing.T, opts sshtest.HostOptions) (*sshtest.Host, *transport.SSH, *tmux.Server) {
	t.Helper()
	env := sshtest.New(t)
	h := env.StartHost("watch", opts)
	kh := filepath.Join(h.Dir, "known_hosts")
	sshtest.WriteKnownHosts(t, kh, sshtest.KnownHostsOptions{}, h)
	r := transport.NewSSH(&transport.SSHConfig{
		Alias: "watch", HostName: "127.0.0.1", Port: h.Port, User: env.User,
		IdentityFiles: []string{env.UserKeyFile}, IdentitiesOnly: true, IdentityAgent: "none",
		UserKnownHostsFiles: []string{kh}, StrictHostKeyChecking: "yes", ConnectTimeout: 5 * time.Second,
	}, transport.SSHOptions{})
	t.Cleanup(func() { r.Close() })
	sock := fmt.Sprintf("fleetmux-test-watchr-%d-%d", os.Getpid(), socketSeq.Add(1))
	srv := &tmux.Server{Executor: tmux.NewExecutor(r), SocketName: sock, Bin: h.Tmux}
	res, err := r.Run(context.Background(), append(srv.Prefix(), "-f", "/dev/null", "new-session", "-d", "-s", "s", "bash --norc --noprofile"), nil)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("remote new-session: %v %s", err, res.Stderr)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r.Run(ctx, append(srv.Prefix(), "kill-server"), nil)
	})
	return h, r, srv
}

// TestRemoteWatch: the watcher on an SSH host pushes a look after output
// and (almost) none while the pane is silent.
func TestRemoteWatch(t *testing.T) {
	_, _, srv := remoteHost(t, sshtest.HostOptions{})
	pane := firstPane(t, srv)
	hub := NewHub(Options{})
	defer hub.Close()
	s, err := hub.Watch(context.Background(), "h", false, srv, paneLook(pane))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	quietThenSees(t, hub, "h", s, srv, pane, "remote-watched")
}

// TestRemoteWatchTicks: the loop on the host wakes as often as its most
// demanding subscriber needs, and not at all while it has none. It
// counts the loop's wakeups (voluntary context switches), not time.
func TestRemoteWatchTicks(t *testing.T) {
	h, _, srv := remoteHost(t, sshtest.HostOptions{})
	pane := firstPane(t, srv)
	hub := NewHub(Options{})
	defer hub.Close()
	ctx := context.Background()
	slow, err := hub.WatchEvery(ctx, "h", false, srv, 200*time.Millisecond, paneLook(pane))
	if err != nil {
		t.Fatal(err)
	}
	nextLook(t, slow)
	quietLooks(slow, 300*time.Millisecond)
	loop := watchLoopPID(t, h.PID())
	if n := wakeups(t, loop, time.Second); n > 12 {
		t.Errorf("a 200 ms subscriber alone: the loop woke %d times in 1 s, want about 5", n)
	}
	fast, err := hub.Watch(ctx, "h", false, srv, paneLook(pane))
	if err != nil {
		t.Fatal(err)
	}
	nextLook(t, fast)
	sendLine(t, srv, pane, "echo fast''-tick")
	awaitText(t, fast, "fast-tick")
	awaitText(t, slow, "fast-tick")
	fast.Close()
	slow.Close()
	time.Sleep(200 * time.Millisecond) // the loop takes the empty look
	if n := wakeups(t, loop, time.Second); n > 2 {
		t.Errorf("no subscribers: the loop woke %d times in 1 s, want none", n)
	}
}

// TestLeavingCostsNoLook: when a subscriber leaves, those left get no
// look (they have theirs); when one comes, it gets its first look.
// Locally and on an SSH host.
func TestLeavingCostsNoLook(t *testing.T) {
	_, _, rsrv := remoteHost(t, sshtest.HostOptions{})
	lsrv := localServer(t)
	for _, tc := range []struct {
		host  string
		local bool
		srv   *tmux.Server
	}{{"local", true, lsrv}, {"h", false, rsrv}} {
		pane := firstPane(t, tc.srv)
		hub := NewHub(Options{})
		ctx := context.Background()
		stay, err := hub.Watch(ctx, tc.host, tc.local, tc.srv, paneLook(pane))
		if err != nil {
			t.Fatal(err)
		}
		nextLook(t, stay)
		quietLooks(stay, 300*time.Millisecond) // bash prints its prompt
		leave, err := hub.Watch(ctx, tc.host, tc.local, tc.srv, []tmux.Cmd{tmux.DisplayMessage(pane, "#{pane_id}")})
		if err != nil {
			t.Fatal(err)
		}
		nextLook(t, leave)
		quietLooks(stay, 300*time.Millisecond)
		leave.Close()
		if n := quietLooks(stay, 500*time.Millisecond); n > 0 {
			t.Errorf("%s: %d looks after a subscriber left a silent server, want none", tc.host, n)
		}
		sendLine(t, tc.srv, pane, "echo still''-seen")
		awaitText(t, stay, "still-seen")
		stay.Close()
		hub.Close()
	}
}

// watchLoopPID finds the watcher's bash loop among the sshd's
// descendants.
func watchLoopPID(t *testing.T, sshd int) int {
	t.Helper()
	for _, pid := range sshtest.Descendants(sshd) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if strings.Contains(string(b), "IFS= read -r s || exit 0") {
			return pid
		}
	}
	t.Fatal("no watcher loop on the host")
	return 0
}

// wakeups is how many times pid went to sleep voluntarily during d.
func wakeups(t *testing.T, pid int, d time.Duration) int {
	t.Helper()
	read := func() int {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			t.Fatalf("watcher loop: %v", err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "voluntary_ctxt_switches:"); ok {
				n, _ := strconv.Atoi(strings.TrimSpace(v))
				return n
			}
		}
		t.Fatal("no voluntary_ctxt_switches in /proc/<pid>/status")
		return 0
	}
	n0 := read()
	time.Sleep(d)
	return read() - n0
}

// TestRemoteWatchDropped: a dropped connection stops the watcher (the
// subscriber is told); the next Watch starts one on a new connection.
func TestRemoteWatchDropped(t *testing.T) {
	h, _, srv := remoteHost(t, sshtest.HostOptions{})
	pane := firstPane(t, srv)
	hub := NewHub(Options{})
	defer hub.Close()
	ctx := context.Background()
	s, err := hub.Watch(ctx, "h", false, srv, paneLook(pane))
	if err != nil {
		t.Fatal(err)
	}
	nextLook(t, s)
	h.DropConnections()
	for {
		select {
		case <-s.Ready():
		case <-time.After(30 * time.Second):
			t.Fatal("subscriber not told of the drop within 30 s")
		}
		if _, _, err := s.Next(); err != nil {
			if !errors.Is(err, ErrStopped) {
				t.Errorf("err = %v, want ErrStopped", err)
			}
			break
		}
	}
	s.Close()
	s, err = hub.Watch(ctx, "h", false, srv, paneLook(pane))
	if err != nil {
		t.Fatalf("watch after the drop: %v", err)
	}
	defer s.Close()
	sendLine(t, srv, pane, "echo after''-drop")
	awaitText(t, s, "after-drop")
}

// TestRemoteWatchUnsupported: a host without bash cannot run the
// watcher: Watch says ErrUnsupported (the caller polls), Mode says poll
// and why, and the host is not asked again at once.
func TestRemoteWatchUnsupported(t *testing.T) {
	_, _, srv := remoteHost(t, sshtest.HostOptions{})
	pane := firstPane(t, srv)
	old := remoteBash
	remoteBash = "fleetmux-no-such-bash"
	defer func() { remoteBash = old }()
	hub := NewHub(Options{})
	defer hub.Close()
	for i := 0; i < 2; i++ {
		_, err := hub.Watch(context.Background(), "h", false, srv, paneLook(pane))
		if !errors.Is(err, ErrUnsupported) {
			t.Fatalf("Watch #%d: err = %v, want ErrUnsupported", i, err)
		}
	}
	m, why := hub.Mode("h")
	if m != ModePoll || !strings.Contains(why, "bash") {
		t.Errorf("Mode = %q (%q), want %q naming bash", m, why, ModePoll)
	}
}

// TestRcharReaderRereads: one reader, its file opened once, sees the
// counter of a process grow as the process reads, and fails once the
// process is gone.
func TestRcharReaderRereads(t *testing.T) {
	cmd := exec.Command("cat")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r, err := openRchar(fmt.Sprintf("/proc/%d/io", cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	prev, err := r.read()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := in.Write([]byte("0123456789\n")); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			n, err := r.read()
			if err != nil {
				t.Fatalf("read %d: %v", i, err)
			}
			if n >= prev+11 {
				prev = n
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("read %d: counter stayed at %d (was %d)", i, n, prev)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	in.Close()
	cmd.Wait()
	if n, err := r.read(); err == nil {
		t.Fatalf("read after the process ended: %d, no error", n)
	}
}
