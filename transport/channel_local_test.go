package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// procChannel is an ssh.Channel whose "exec" request runs the command with
// a local shell, the way sshd runs `$SHELL -c COMMAND`. It lets the command
// loop be tested (and benchmarked) against dash and bash without sshd.
type procChannel struct {
	shell          string
	inR, inW       *os.File
	outR, outW     *os.File
	errR, errW     *os.File
	reqs           chan *ssh.Request
	mu             sync.Mutex
	cmd            *exec.Cmd
	closeOnce      sync.Once
	closeWriteOnce sync.Once
}

func newProcChannel(t testing.TB, shell string) *procChannel {
	t.Helper()
	p := &procChannel{shell: shell, reqs: make(chan *ssh.Request)}
	var err error
	for _, pp := range []struct{ r, w **os.File }{{&p.inR, &p.inW}, {&p.outR, &p.outW}, {&p.errR, &p.errW}} {
		if *pp.r, *pp.w, err = os.Pipe(); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func (p *procChannel) Read(b []byte) (int, error)  { return p.outR.Read(b) }
func (p *procChannel) Write(b []byte) (int, error) { return p.inW.Write(b) }
func (p *procChannel) Stderr() io.ReadWriter       { return stderrRW{p} }

type stderrRW struct{ p *procChannel }

func (s stderrRW) Read(b []byte) (int, error)  { return s.p.errR.Read(b) }
func (s stderrRW) Write(b []byte) (int, error) { return 0, errors.New("not supported") }

func (p *procChannel) CloseWrite() error {
	p.closeWriteOnce.Do(func() { p.inW.Close() })
	return nil
}

func (p *procChannel) Close() error {
	p.CloseWrite()
	p.closeOnce.Do(func() {
		p.mu.Lock()
		started := p.cmd != nil
		p.mu.Unlock()
		if !started {
			p.outR.Close()
			p.errR.Close()
			close(p.reqs)
		}
	})
	return nil
}

func (p *procChannel) SendRequest(name string, _ bool, payload []byte) (bool, error) {
	if name != "exec" {
		return false, nil
	}
	var req struct{ Command string }
	if err := ssh.Unmarshal(payload, &req); err != nil {
		return false, err
	}
	cmd := exec.Command(p.shell, "-c", req.Command)
	// sshd starts each session in a new session and process group; the
	// loop relies on it (kill 0).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.inR, p.outW, p.errW
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := cmd.Start(); err != nil {
		return false, err
	}
	p.cmd = cmd
	p.inR.Close()
	p.outW.Close()
	p.errW.Close()
	go func() {
		cmd.Wait()
		close(p.reqs) // like sshd closing the channel after exit-status
	}()
	return true, nil
}

// localLoopConn is an sshConn without a network connection, on which
// command channels run locally through procChannel.
func localLoopConn(t testing.TB) *sshConn {
	s := NewSSH(&SSHConfig{Alias: "loop", ConnectTimeout: 5 * time.Second}, SSHOptions{})
	t.Cleanup(func() { s.Close() })
	return newSSHConn(s, nil, nil)
}

func startLocalLoop(t testing.TB, c *sshConn, shell string) *cmdChannel {
	t.Helper()
	c.sem <- struct{}{}
	c.pmu.Lock()
	c.nchan++
	c.pmu.Unlock()
	p := newProcChannel(t, shell)
	cc, err := c.startLoop(context.Background(), p, p.reqs)
	if err != nil {
		t.Fatalf("start loop with %s: %v", shell, err)
	}
	t.Cleanup(func() { cc.fail(ErrClosed) })
	return cc
}

func loopShells(t testing.TB) []string {
	var out []string
	for _, s := range []string{"dash", "bash", "zsh", "ksh"} {
		if p, err := exec.LookPath(s); err == nil {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		t.Fatal("no shell to run the command loop")
	}
	return out
}

type diffCase struct {
	name    string
	argv    []string
	stdin   []byte
	noLocal bool // os/exec reports a signal death as -1, SSH as 128+signal
}

// differentialCases are argv lists whose results must be byte-identical
// whatever path runs them.
func differentialCases() []diffCase {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	hostile := append([]string{"printf", `[%s]\n`}, hostileArgs...)
	hostile = append(hostile, "\x01\x7f\x81\x88\x80", "trailing\n\n", " lead and trail ", strings.Repeat("long'arg ", 5000))
	return []diffCase{
		{name: "hostile args", argv: hostile},
		{name: "tmux version", argv: []string{"tmux", "-V"}},
		{name: "empty output", argv: []string{"true"}},
		{name: "false", argv: []string{"false"}},
		{name: "exit 255 with stderr", argv: []string{"sh", "-c", `printf 'out no newline'; printf 'err\000 no newline' >&2; exit 255`}},
		{name: "interleaved", argv: []string{"sh", "-c", `for i in 1 2 3; do echo out$i; echo err$i >&2; done; exit 7`}},
		{name: "binary and escapes", argv: []string{"printf", `\000\001\033[31mred\033[0m\377\r\n`}},
		{name: "unicode", argv: []string{"printf", "%s|%s", "héllo wörld", "日本語 🙂"}},
		{name: "10 MB", argv: []string{"sh", "-c", "yes 0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_ | head -c 10485760"}},
		{name: "10 MB stderr", argv: []string{"sh", "-c", "yes 'é' | head -c 10485760 >&2"}},
		{name: "stdin all bytes", argv: []string{"cat"}, stdin: bytes.Repeat(all, 64)},
		{name: "stdin leading dash", argv: []string{"cat"}, stdin: []byte("-v %s %d \\n\n")},
		{name: "stdin empty", argv: []string{"wc", "-c"}, stdin: []byte{}},
		{name: "stdin nil", argv: []string{"wc", "-c"}},
		{name: "stdin unread", argv: []string{"true"}, stdin: []byte("ignored")},
		{name: "killed by signal", argv: []string{"sh", "-c", "kill -9 $$"}, noLocal: true},
		{name: "marker-like output", argv: []string{"printf", "%s\n", "0123456789abcdef0123456789abcdef 1 0", "r"}},
	}
}

// TestChannelLoopLocal runs every differential case through the command
// loop under each installed shell and compares with the Local runner.
func TestChannelLoopLocal(t *testing.T) {
	checkLeaks(t)
	local := NewLocal()
	// Its own deadline: 10 MB through -race on a loaded machine can take
	// longer than the default bound of a call (LocalTimeout).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, sh := range loopShells(t) {
		t.Run(sh, func(t *testing.T) {
			c := localLoopConn(t)
			cc := startLocalLoop(t, c, sh)
			line := func(argv []string) string {
				l, err := QuoteArgv(argv)
				if err != nil {
					t.Fatal(err)
				}
				return l
			}
			for _, tc := range differentialCases() {
				if tc.noLocal {
					continue
				}
				want, err := local.Run(ctx, tc.argv, tc.stdin)
				if err != nil {
					t.Fatalf("%s: local: %v", tc.name, err)
				}
				got, started, err := cc.run(ctx, line(tc.argv), tc.stdin)
				if err != nil || !started {
					t.Fatalf("%s: loop: started=%v err=%v", tc.name, started, err)
				}
				if d := diffResults(want, got); d != "" {
					t.Errorf("%s: local vs loop: %s", tc.name, d)
				}
			}
		})
	}
}

// TestChannelLoopCancel: cancelling a blocking command kills it on the
// "remote" side and breaks only that channel.
func TestChannelLoopCancel(t *testing.T) {
	checkLeaks(t)
	c := localLoopConn(t)
	cc := startLocalLoop(t, c, "dash")
	pids := filepath.Join(t.TempDir(), "pids")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	line, _ := QuoteArgv([]string{"sh", "-c", "sleep 30 & echo $$ $! > " + pids + "; wait"})
	_, started, err := cc.run(ctx, line, nil)
	if !errors.Is(err, context.DeadlineExceeded) || !started {
		t.Fatalf("run: started=%v err=%v, want deadline exceeded after start", started, err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("cancel took %s", d)
	}
	if !cc.isDead() {
		t.Error("channel still alive after a cancelled command")
	}
	// The watcher kills the command and its children once the channel's
	// stdin closes.
	b, err := os.ReadFile(pids)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Fields(string(b)) {
		pid, _ := strconv.Atoi(f)
		waitFor(t, func() bool {
			st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			return err != nil || strings.Contains(string(st), ") Z ") // gone, or a zombie nobody reaps
		})
	}
}

func TestPrintfLines(t *testing.T) {
	got := printfLines([]byte("-a%b\\c\n\x00é"))
	want := []string{`\055a\045b\134c\012\000\303\251`}
	if len(got) != 1 || got[0] != want[0] {
		t.Errorf("printfLines = %q, want %q", got, want)
	}
	long := printfLines(bytes.Repeat([]byte{0}, 5000))
	for _, l := range long {
		if len(l) > 4100 || len(l)%4 != 0 {
			t.Errorf("line of %d bytes splits an escape", len(l))
		}
	}
}

func TestChannelLoopHasNoQuotes(t *testing.T) {
	if strings.ContainsAny(channelLoop, "'\\\n") {
		t.Error("channelLoop must not contain ', \\ or newline: any login shell has to pass it through")
	}
}

func BenchmarkLoopLocal(b *testing.B) {
	c := localLoopConn(b)
	cc := startLocalLoop(b, c, "dash")
	ctx := context.Background()
	for b.Loop() {
		if _, _, err := cc.run(ctx, "'true'", nil); err != nil {
			b.Fatal(err)
		}
	}
}
