package tmux

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/fleetmux/fleetmux/tmux/tmuxtest"
	"github.com/fleetmux/fleetmux/transport"
)

// TestEscapeArgRoundTrip checks, against real tmux, that values ending in
// ';' reach tmux unchanged.
func TestEscapeArgRoundTrip(t *testing.T) {
	sock := fmt.Sprintf("fleetmux-test-semi-%d", os.Getpid())
	if out, err := tmuxtest.Command("-L", sock, "-f", "/dev/null", "new-session", "-d", "-s", "s", "cat").CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	defer tmuxtest.Command("-L", sock, "kill-server").Run()
	srv := &Server{Executor: execExecutor{r: transport.NewLocal()}, SocketName: sock, Bin: os.Getenv(tmuxtest.EnvBin)}
	ctx := context.Background()
	id := "$0"
	for _, name := range []string{"a;", "c;;", "d"} {
		if _, err := srv.Do(ctx, cmd("rename-session", "-t", id, name)); err != nil {
			t.Fatal(err)
		}
		rows, err := srv.Sessions(ctx)
		if err != nil || len(rows) != 1 || rows[0]["session_name"] != name {
			t.Fatalf("name %q came back as %v (%v)", name, rows, err)
		}
		id = rows[0]["session_id"]
	}
	for _, v := range []string{"x;", `y\;`, `z\\;`, "plain"} {
		if _, err := srv.Do(ctx, cmd("set-option", "-g", "@fleetmux_test", v)); err != nil {
			t.Fatal(err)
		}
		lines, err := srv.Do(ctx, cmd("show-option", "-gv", "@fleetmux_test"))
		if err != nil || len(lines) != 1 || lines[0] != v {
			t.Fatalf("value %q came back as %q (%v)", v, lines, err)
		}
	}
	if got := Literal(";"); got != `\;` {
		t.Fatalf("Literal(;) = %q", got)
	}
}
