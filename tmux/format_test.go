package tmux

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetmux/fleetmux/tmux/tmuxtest"
	"github.com/fleetmux/fleetmux/transport"
)

func TestCheckFormat(t *testing.T) {
	for _, tc := range []struct {
		format string
		ok     bool
	}{
		{"", true},
		{"plain text, with commas } and braces", true},
		{"#{pane_width}x#{pane_height}", true},
		{"#S:#I.#P #W #T #D #F #H #h", true},
		{"## #, #} #[fg=red]", true},
		{"#{@user_option} #{status-left}", true},
		{"#{=10:pane_title} #{=-5:pane_title} #{p20:pane_id} #{p-20:pane_id}", true},
		{"#{b:pane_current_path} #{d:pane_current_path} #{q:pane_title} #{n:pane_title} #{w:pane_title} #{t:window_activity}", true},
		{"#{=10;b:pane_current_path}", true},
		{"#{?pane_active,active,idle}", true},
		{"#{?pane_active,#{pane_id} on,#{=3:pane_title}}", true},
		{"#{==:#{pane_id},%1} #{!=:a,b} #{<=:1,2} #{||:#{pane_active},0} #{&&:1,1}", true},
		{"#{?pane_active,a#,b,c}", true},
		{"#{?#{==:#{pane_index},0},first,other}", true},
		{"#{?,a,b}", false},
		{strings.Repeat("x", MaxFormatLen), true},

		// Shell jobs, directly or built by double expansion.
		{"#(touch /tmp/x)", false},
		{"a #( b", false},
		{"#{E:#{a:35}(touch /tmp/x)}", false},
		{"#{T:#{a:35}(touch /tmp/x)}", false},
		{"#{a:35}", false},
		{"#{l:#(touch /tmp/x)}", false},
		{"#{S:#{p9999:}}", false},
		{"#{W:x} #{P:x} #{L:x}", false},
		{"#{s/a/b/:pane_title}", false},
		{"#{C:needle}", false},
		{"#{m:*x*,#{pane_title}}", false},
		{"#{e|+|:1,2}", false},
		{"#{N/s:name}", false},
		{"#{R:x}", false},
		{"#{?#{E:x},a,b}", false},
		{"#{?#(x),a,b}", false},
		{"#{?pane_active,#{E:x},b}", false},
		{"#{==:#{a:35},#}", false},
		{"#{=10:#{pane_title}}", false},
		{"#{pane_title#(x)}", false},
		{"#{p9999:pane_id}", false},
		{"#{=1001:pane_id}", false},
		{"#{pane_id", false},
		{"#{}", false},
		{"#{@}", false},
		{"#", false},
		{"#1 #x #(", false},
		{"#{?pane_active,a}", false},
		{strings.Repeat("x", MaxFormatLen+1), false},
		{strings.Repeat("#{?a,", 9) + "x" + strings.Repeat(",y}", 9), false},
		{"a\x00b", false},
	} {
		err := CheckFormat(tc.format)
		if (err == nil) != tc.ok {
			t.Errorf("CheckFormat(%.60q) = %v, want ok=%v", tc.format, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrFormatNotAllowed) {
			t.Errorf("CheckFormat(%.60q) error %v does not wrap ErrFormatNotAllowed", tc.format, err)
		}
	}
}

func TestCheckName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"status-left", true},
		{"@my-opt", true},
		{"after-new-window", true},
		{"#{E:#{a:35}(x)}", false},
		{"a#b", false},
	} {
		if err := CheckName("option", tc.name); (err == nil) != tc.ok {
			t.Errorf("CheckName(%q) = %v", tc.name, err)
		}
	}
}

// testServer starts a private tmux server whose pane runs bash without rc
// files.
func testServer(t *testing.T, tag string) *Server {
	t.Helper()
	sock := fmt.Sprintf("fleetmux-test-%s-%d", tag, os.Getpid())
	if out, err := tmuxtest.Command("-L", sock, "-f", "/dev/null", "new-session", "-d", "-s", "s", "bash --norc --noprofile").CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	t.Cleanup(func() { tmuxtest.Command("-L", sock, "kill-server").Run() })
	return &Server{Executor: execExecutor{r: transport.NewLocal()}, SocketName: sock, Bin: os.Getenv(tmuxtest.EnvBin)}
}

// TestEscapeLiteralRoundTrip: every argument tmux expands as a format
// keeps an escaped value literally.
func TestEscapeLiteralRoundTrip(t *testing.T) {
	srv := testServer(t, "escape")
	ctx := context.Background()
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	hostile := "a#b#{session_id}##x#S#(touch " + marker + ")#{E:#{a:35}(touch " + marker + ")}"
	check := func(what, got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("%s came back as %q, want %q", what, got, want)
		}
	}
	// tmux turns ':' and '.' in session names into '_'.
	sessName := "a#b#{session_id}##x#S#(touch " + strings.ReplaceAll(marker, ".", "") + ")"
	if _, err := srv.Do(ctx, cmd("rename-session", "-t", "s", EscapeLiteral(sessName))); err != nil {
		t.Fatal(err)
	}
	lines, _ := srv.Do(ctx, cmd("list-sessions", "-F", "#{session_name}"))
	check("session name", strings.Join(lines, "\n"), sessName)

	if _, err := srv.Do(ctx, cmd("rename-window", "-t", "$0:", EscapeLiteral(hostile))); err != nil {
		t.Fatal(err)
	}
	lines, _ = srv.Do(ctx, cmd("list-windows", "-a", "-F", "#{window_name}"))
	check("window name", strings.Join(lines, "\n"), hostile)

	if _, err := srv.Do(ctx, cmd("select-pane", "-t", "$0:", "-T", EscapeLiteral(hostile))); err != nil {
		t.Fatal(err)
	}
	lines, _ = srv.Do(ctx, cmd("list-panes", "-a", "-F", "#{pane_title}"))
	check("pane title", strings.Join(lines, "\n"), hostile)

	sub := filepath.Join(dir, "d#S#{session_id}##")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	lines, err := srv.Do(ctx, cmd("new-window", "-d", "-P", "-F", "#{window_id}", "-n", EscapeLiteral("w#{window_id}"), "-c", EscapeLiteral(sub), "bash --norc --noprofile"))
	if err != nil || len(lines) != 1 {
		t.Fatalf("new-window: %v %q", err, lines)
	}
	waitPath := func(id string) string {
		var got []string
		for range 100 {
			got, _ = srv.Do(ctx, cmd("display-message", "-p", "-t", id, "#{pane_current_path}"))
			if len(got) == 1 && got[0] != "" {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		return strings.Join(got, "")
	}
	check("start directory", waitPath(lines[0]), sub)
	lines, _ = srv.Do(ctx, cmd("display-message", "-p", "-t", lines[0], "#{window_name}"))
	check("new window name", strings.Join(lines, ""), "w#{window_id}")

	time.Sleep(200 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("an escaped argument ran a shell command")
	}
}

// formatFragments are pieces of tmux's format grammar, the hostile ones
// included; generated formats combine them.
func formatFragments(cmd string) []string {
	return []string{
		"#", "##", "#{", "}", "{", ",", ":", "(", ")", "#(", cmd, "(" + cmd + ")",
		"#{a:35}", "#{E:", "#{T:", "#{S:", "#{W:", "#{P:", "#{l:", "#{s/x/#/:", "#{C:",
		"#{?", "#{==:", "#{m:", "#{e|+|:", "#{p9999:}", "#{=3:", "#{p5:", "#{b:",
		"pane_id", "pane_title", "session_name", "@o", "#{pane_id}", "#S", "#,", "#}",
		"#{?pane_active,", "a", " ", ";", "#[fg=red]",
	}
}

func genFormat(r *rand.Rand, frags []string) string {
	var b strings.Builder
	for range 1 + r.IntN(8) {
		b.WriteString(frags[r.IntN(len(frags))])
	}
	return b.String()
}

// runHeld runs "display-message -p F" for each format in one tmux
// client, followed by a short run-shell sleep: tmux kills a format's job
// when the client that asked for it goes away, so without the sleep a job
// could start and die unseen.
func runHeld(srv *Server, formats []string) {
	args := []string{"-L", srv.SocketName}
	for _, f := range formats {
		args = append(args, "display-message", "-p", "-t", "$0:", f, ";")
	}
	args = append(args, "run-shell", "sleep 0.1")
	_ = tmuxtest.Command(args...).Run()
}

// assertNoJob runs every accepted format with display-message against a
// real tmux server and fails if any of them started a process (marker
// must never appear). It returns how many formats were accepted.
func assertNoJob(t *testing.T, srv *Server, marker string, formats []string) int {
	t.Helper()
	var accepted []string
	for _, f := range formats {
		if CheckFormat(f) == nil {
			accepted = append(accepted, f)
		}
	}
	for i := 0; i < len(accepted); i += 100 {
		chunk := accepted[i:min(i+100, len(accepted))]
		runHeld(srv, chunk)
		if _, err := os.Stat(marker); err == nil {
			for _, f := range chunk {
				t.Logf("accepted: %q", f)
			}
			t.Fatal("an accepted format started a shell command")
		}
	}
	time.Sleep(200 * time.Millisecond) // jobs run asynchronously
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("an accepted format started a shell command")
	}
	return len(accepted)
}

// TestFormatAllowlistAgainstTmux generates formats from the grammar's
// fragments and checks, against real tmux, that no accepted one runs a
// command. It first proves the marker detects a job that does run.
func TestFormatAllowlistAgainstTmux(t *testing.T) {
	srv := testServer(t, "fmtgen")
	marker := filepath.Join(t.TempDir(), "ran")
	cmd := "touch " + marker

	// The detector works: the known bypass does run a command when it is
	// handed to tmux unchecked.
	runHeld(srv, []string{"#{E:#{a:35}(" + cmd + ")}"})
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the unchecked bypass did not create the marker; the detector would miss real jobs")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := os.Remove(marker); err != nil {
		t.Fatal(err)
	}
	if CheckFormat("#{E:#{a:35}("+cmd+")}") == nil {
		t.Fatal("the known bypass is accepted")
	}

	frags := formatFragments(cmd)
	r := rand.New(rand.NewPCG(1, 2))
	formats := make([]string, 0, 3000)
	for range 3000 {
		formats = append(formats, genFormat(r, frags))
	}
	accepted := assertNoJob(t, srv, marker, formats)
	if accepted == 0 {
		t.Fatal("the generator produced no accepted format; it tests nothing")
	}
	t.Logf("%d generated formats, %d accepted and run without starting a process", len(formats), accepted)
}

// FuzzCheckFormat: whatever the fuzzer finds, an accepted format never
// makes tmux start a process. Seeds run as a normal test.
func FuzzCheckFormat(f *testing.F) {
	for _, s := range []string{"#{pane_id}", "#{E:#{a:35}(touch x)}", "#{?pane_active,#{pane_id},b}", "#{==:#{pane_id},%1}", "##(x)", "#{p5:pane_id}"} {
		f.Add(s)
	}
	srv := testServerF(f, "fuzzfmt")
	marker := filepath.Join(f.TempDir(), "ran")
	f.Fuzz(func(t *testing.T, s string) {
		if CheckFormat(s) != nil {
			return
		}
		// The fuzzer's own strings cannot name our marker, so also try the
		// string with a job appended inside its last reference.
		var run []string
		for _, v := range []string{s, strings.ReplaceAll(s, "x", "(touch "+marker+")")} {
			if CheckFormat(v) == nil {
				run = append(run, v)
			}
		}
		runHeld(srv, run)
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("accepted format %q started a shell command", s)
		}
	})
}

func testServerF(f *testing.F, tag string) *Server {
	sock := fmt.Sprintf("fleetmux-test-%s-%d", tag, os.Getpid())
	if out, err := tmuxtest.Command("-L", sock, "-f", "/dev/null", "new-session", "-d", "-s", "s", "bash --norc --noprofile").CombinedOutput(); err != nil {
		f.Fatalf("%v %s", err, out)
	}
	f.Cleanup(func() { tmuxtest.Command("-L", sock, "kill-server").Run() })
	return &Server{Executor: execExecutor{r: transport.NewLocal()}, SocketName: sock, Bin: os.Getenv(tmuxtest.EnvBin)}
}
