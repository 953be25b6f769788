package tmux

import (
	"context"
	"testing"

	"github.com/fleetmux/fleetmux/transport"
)

type wrapRunner struct{ next transport.Runner }

func (w wrapRunner) Run(ctx context.Context, argv []string, stdin []byte) (transport.Result, error) {
	return w.next.Run(ctx, argv, stdin)
}

// TestNewExecutorChoice: the one place native-or-exec is decided. The
// native client stands in only for transport.Local (the binary on this
// machine); any other runner, a wrapper of Local included, sees every
// request as argv.
func TestNewExecutorChoice(t *testing.T) {
	local := transport.NewLocal()
	for _, tc := range []struct {
		name   string
		r      transport.Runner
		native bool
	}{
		{"local", local, true},
		{"wrapped local", wrapRunner{local}, false},
		{"ssh-like", wrapRunner{}, false},
	} {
		ex := NewExecutor(tc.r)
		_, native := ex.(nativeExecutor)
		if native != tc.native {
			t.Errorf("%s: native = %v, want %v", tc.name, native, tc.native)
		}
		if ex != NewExecutor(tc.r) {
			t.Errorf("%s: two executors of one runner differ", tc.name)
		}
	}
}

// TestRequestAsData: the native client receives the command list as
// data: one entry per command, arguments escaped as the binary's argv
// carries them, the stdin of a LoadBuffer, the unnested flag of
// new-session, and the server's address.
func TestRequestAsData(t *testing.T) {
	s := &Server{Bin: "/opt/tmux", SocketName: "x", SocketPath: "/tmp/s"}
	name := "made"
	req := Request{Cmds: []Cmd{DisplayMessage("", "a;"), LoadBuffer("b", []byte("data")), NewSession{Name: &name}.Cmd()}}
	got := nativeExecutor{}.request(s, req)
	if got.Bin != "/opt/tmux" || got.SocketName != "x" || got.SocketPath != "/tmp/s" || string(got.Stdin) != "data" || !got.Unnested {
		t.Errorf("request %+v", got)
	}
	if len(got.Cmds) != 3 || got.Cmds[0][0] != "display-message" || got.Cmds[0][len(got.Cmds[0])-1] != `a\;` || got.Cmds[1][0] != "load-buffer" || got.Cmds[2][0] != "new-session" {
		t.Errorf("commands %q", got.Cmds)
	}
	if argv := s.CmdArgv(req.Cmds...); len(argv) < 3 || argv[1] != "-u" {
		t.Errorf("argv %q", argv)
	}
}
