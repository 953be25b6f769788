package tmux

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fleetmux/fleetmux/transport"
)

// TestUnnestedKeepsServer: fleetmux running in a pane of a private tmux
// server (TMUX set, no -L or -S) acts on that server whatever the
// arguments say: keys or a session name equal to "new" (new-session's
// alias) go to it, and new-session itself, which runs with TMUX removed
// so that tmux does not refuse it as nested, creates its session there,
// not on the default server. Through the native client and with
// FLEETMUX_TMUX_EXEC=1 (the binary).
func TestUnnestedKeepsServer(t *testing.T) {
	tmp := sockDir(t)
	t.Setenv("TMUX_TMPDIR", tmp) // the "default" server lives here: never the user's
	label := fmt.Sprintf("fleetmux-test-unnest-%d", os.Getpid())
	dflt := filepath.Join(tmp, "tmux-"+strconv.Itoa(os.Getuid()), "default")
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", dflt, "kill-server").Run() })
	for _, mode := range []string{"native", "exec"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "exec" {
				t.Setenv("FLEETMUX_TMUX_EXEC", "1")
			}
			name := label + "-" + mode
			tm := func(args ...string) string {
				t.Helper()
				out, err := exec.Command("tmux", append([]string{"-L", name, "-f", "/dev/null"}, args...)...).Output()
				if err != nil {
					t.Fatalf("tmux %q: %v", args, err)
				}
				return strings.TrimSpace(string(out))
			}
			info := tm("new-session", "-d", "-s", "main", "-P", "-F", "#{socket_path},#{pid},#{session_id}|#{pane_id}|#{session_id}")
			t.Cleanup(func() { _ = exec.Command("tmux", "-L", name, "kill-server").Run() })
			parts := strings.Split(info, "|")
			tm("set-option", "-g", "default-command", "cat")
			tm("respawn-pane", "-k", "-t", parts[1], "cat")
			t.Setenv("TMUX", parts[0])
			srv := &Server{Executor: NewExecutor(transport.NewLocal())}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()

			if _, err := srv.Do(ctx, SendKeys(parts[1], true, "new"), SendEnter(parts[1])); err != nil {
				t.Fatalf("send-keys new: %v", err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for !strings.Contains(tm("capture-pane", "-p", "-t", parts[1]), "new") {
				if time.Now().After(deadline) {
					t.Fatalf("the keys \"new\" never reached %s of %s", parts[1], name)
				}
				time.Sleep(20 * time.Millisecond)
			}
			if _, err := srv.Do(ctx, RenameSession(parts[2], "new")); err != nil {
				t.Fatalf("rename-session to new: %v", err)
			}
			if got := tm("display-message", "-p", "-t", parts[2], "#{session_name}"); got != "new" {
				t.Fatalf("session %s is named %q, want new", parts[2], got)
			}
			made := "made-" + mode
			row, err := Created(ctx, srv, NewSession{Name: &made}.Cmd(), SessionFields, "session")
			if err != nil {
				t.Fatalf("new-session under TMUX: %v", err)
			}
			if got := tm("display-message", "-p", "-t", row["session_id"], "#{session_name}"); got != made {
				t.Fatalf("session %s on %s is %q, want %q", row["session_id"], name, got, made)
			}
			if err := exec.Command("tmux", "-S", dflt, "has-session").Run(); err == nil {
				t.Fatalf("a server runs on the default socket %s", dflt)
			}
		})
	}
}
