package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetmux/fleetmux/mcp"
	"github.com/fleetmux/fleetmux/tmux/tmuxtest"
	"github.com/fleetmux/fleetmux/transport/sshtest"
)

// jobsFleet is a fleet of one real sshd host (dev-1) served by the
// fleetmux binary on a state file that outlives each process.
type jobsFleet struct {
	t     *testing.T
	host  *sshtest.Host
	cfg   string
	state string
	sock  string
}

func newJobsFleet(t *testing.T) *jobsFleet {
	env := sshtest.New(t)
	h := env.StartHost("dev-1", sshtest.HostOptions{})
	dir := t.TempDir()
	cfg, _ := env.WriteFleetFiles(dir, h)
	return &jobsFleet{t: t, host: h, cfg: cfg, state: filepath.Join(dir, "state.db"), sock: fmt.Sprintf("fleetmux-test-jobs-%d", os.Getpid())}
}

// start runs a fleetmux process on the fleet; progress, when set, gets the
// client's progress notifications.
func (f *jobsFleet) start(progress func(*sdk.ProgressNotificationParams)) *fleetClient {
	f.t.Helper()
	cmd := exec.Command(binPath, "--ssh-config", f.cfg, "--hosts", "dev-*", "--state", f.state, "--max-call-seconds", "3")
	cmd.Env = append(os.Environ(), "LIBTMUX_SOCKET="+f.sock, "TMUX=", "TMUX_PANE=", "LIBTMUX_SAFETY=mutating", "LIBTMUX_MCP_WAIT_MAX_SECONDS=60")
	cmd.Stderr = os.Stderr
	opts := &sdk.ClientOptions{}
	if progress != nil {
		opts.ProgressNotificationHandler = func(_ context.Context, req *sdk.ProgressNotificationClientRequest) { progress(req.Params) }
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "jobs-e2e", Version: "1"}, opts).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { cs.Close() })
	return &fleetClient{t: f.t, cs: cs}
}

func decodeInto(t *testing.T, s string, out any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), out); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
}

func (c *fleetClient) detach(pane, command string) (string, time.Duration) {
	c.t.Helper()
	t0 := time.Now()
	var r mcp.RunCommandResult
	decodeInto(c.t, c.ok("run_command", map[string]any{"host": "dev-1", "pane_id": pane, "command": command, "detach": true}), &r)
	d := time.Since(t0)
	if r.JobID == nil || !r.Pending || r.Host == nil || *r.Host != "dev-1" {
		c.t.Fatalf("detach: %+v", r)
	}
	return *r.JobID, d
}

// jobUntil polls get_job until the job is no longer running; it returns
// the job and the latencies of the get_job calls.
func (c *fleetClient) jobUntil(id string) (mcp.JobInfo, []time.Duration) {
	c.t.Helper()
	var lat []time.Duration
	deadline := time.Now().Add(30 * time.Second)
	for {
		var info mcp.JobInfo
		t0 := time.Now()
		decodeInto(c.t, c.ok("get_job", map[string]any{"job_id": id}), &info)
		lat = append(lat, time.Since(t0))
		if info.Status != mcp.JobRunning || time.Now().After(deadline) {
			return info, lat
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func wantExit(t *testing.T, what string, info mcp.JobInfo, code int) {
	t.Helper()
	if info.Status != mcp.JobExited || info.ExitStatus == nil || *info.ExitStatus != code || info.Host != "dev-1" {
		t.Fatalf("%s: want exited %d, got %+v", what, code, info)
	}
}

// TestJobsEndToEnd: detached jobs on a real sshd host survive a fleetmux
// restart and a dropped SSH connection; cancel, list filters, the pending
// answer at --max-call-seconds, progress notifications, and the audit.
func TestJobsEndToEnd(t *testing.T) {
	f := newJobsFleet(t)
	defer tmuxtest.Command("-L", f.sock, "kill-server").Run()
	var (
		mu       sync.Mutex
		progress []*sdk.ProgressNotificationParams
	)
	c := f.start(func(p *sdk.ProgressNotificationParams) {
		mu.Lock()
		progress = append(progress, p)
		mu.Unlock()
	})
	var sess mcp.SessionInfo
	decodeInto(t, c.ok("create_session", map[string]any{"host": "dev-1", "session_name": "jobs"}), &sess)
	pane := *sess.ActivePaneID
	c.ok("respawn_pane", map[string]any{"host": "dev-1", "pane_id": pane, "kill": true, "shell": "/bin/sh"})
	time.Sleep(300 * time.Millisecond) // the shell's first prompt

	// Exit statuses 0 and non-zero.
	id0, d0 := c.detach(pane, "sleep 0.5; echo zero-$((4*5))")
	info, lat := c.jobUntil(id0)
	wantExit(t, "exit 0", info, 0)
	if !strings.Contains(strings.Join(info.Output, "\n"), "zero-20") {
		t.Fatalf("output %q", info.Output)
	}
	id5, d5 := c.detach(pane, "sleep 0.3; exit 5")
	info, lat5 := c.jobUntil(id5)
	wantExit(t, "exit 5", info, 5)
	t.Logf("detach call: %v, %v; get_job calls over ssh: %v", d0, d5, append(lat, lat5...))

	// A fleetmux restart between detach and get_job.
	idR, _ := c.detach(pane, "sleep 2; echo after-restart")
	c.cs.Close()
	c = f.start(nil)
	info, _ = c.jobUntil(idR)
	wantExit(t, "after restart", info, 0)
	if !strings.Contains(strings.Join(info.Output, "\n"), "after-restart") {
		t.Fatalf("output after restart %q", info.Output)
	}

	// A dropped SSH connection between detach and get_job.
	idD, _ := c.detach(pane, "sleep 1.5; exit 9")
	f.host.DropConnections()
	info, _ = c.jobUntil(idD)
	wantExit(t, "after a dropped connection", info, 9)

	// cancel_job on sleep 1000: C-c.
	idC, _ := c.detach(pane, "sleep 1000")
	// C-c must find sleep running (a C-c that reaches the subshell before
	// it started sleep waits for sleep to end; SIGTERM then does the work).
	// The "remote" host is this machine: ps sees the pane's terminal.
	var pi mcp.PaneInfo
	decodeInto(t, c.ok("get_pane_info", map[string]any{"host": "dev-1", "pane_id": pane}), &pi)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		out, _ := exec.Command("ps", "-o", "comm=", "-t", *pi.PaneTty).Output()
		if strings.Contains(string(out), "sleep") || time.Now().After(deadline) {
			break
		}
	}
	var cr mcp.CancelJobResult
	decodeInto(t, c.ok("cancel_job", map[string]any{"job_id": idC}), &cr)
	wantExit(t, "cancelled", cr.Job, 130)
	if len(cr.SignalsSent) == 0 || cr.SignalsSent[0] != "C-c" {
		t.Fatalf("cancel: %+v", cr)
	}

	// list_jobs filters.
	list := func(args map[string]any) []mcp.JobInfo {
		t.Helper()
		var w struct {
			Result []mcp.JobInfo `json:"result"`
		}
		decodeInto(t, c.ok("list_jobs", args), &w)
		return w.Result
	}
	if l := list(map[string]any{"host": "dev-*", "status": "exited"}); len(l) != 5 || l[0].JobID != idC || l[4].JobID != id0 {
		t.Fatalf("exited jobs on dev-*: %+v", l)
	}
	if l := list(map[string]any{"host": "local"}); len(l) != 0 {
		t.Fatalf("jobs on local: %+v", l)
	}
	if l := list(map[string]any{"status": "running"}); len(l) != 0 {
		t.Fatalf("running jobs: %+v", l)
	}
	if l := list(map[string]any{"limit": 2}); len(l) != 2 || l[0].JobID != idC {
		t.Fatalf("limit 2: %+v", l)
	}

	// A timeout beyond --max-call-seconds (3) answers pending with a job.
	t0 := time.Now()
	var r mcp.RunCommandResult
	decodeInto(t, c.ok("run_command", map[string]any{"host": "dev-1", "pane_id": pane, "command": "sleep 5; echo late", "timeout": 30}), &r)
	pendingAfter := time.Since(t0)
	if !r.Pending || r.JobID == nil || r.TimedOut || r.ExitStatus != nil {
		t.Fatalf("pending: %+v", r)
	}
	info, _ = c.jobUntil(*r.JobID)
	wantExit(t, "pending job", info, 0)
	t.Logf("pending answered after %v (--max-call-seconds 3)", pendingAfter)

	// Progress notifications to a client that gave a progress token.
	c.cs.Close()
	c = f.start(func(p *sdk.ProgressNotificationParams) {
		mu.Lock()
		progress = append(progress, p)
		mu.Unlock()
	})
	p := &sdk.CallToolParams{Name: "run_command", Arguments: map[string]any{"host": "dev-1", "pane_id": pane, "command": "sleep 2.5", "timeout": 3}}
	p.SetProgressToken("e2e")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	res, err := c.cs.CallTool(ctx, p)
	cancel()
	if err != nil || res.IsError {
		t.Fatalf("run_command with progress: %v %s", err, resultText(res))
	}
	mu.Lock()
	n := len(progress)
	mu.Unlock()
	if n < 2 {
		t.Fatalf("%d progress notifications", n)
	}
	c.cs.Close()

	// The audit links each job's start and end.
	out, err := exec.Command(binPath, "audit", "--state", f.state, "--json", "--limit", "0").Output()
	if err != nil {
		t.Fatalf("audit: %v", err)
	}
	starts, ends := map[string]bool{}, map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var rec struct {
			Tool, Job, Parent, Outcome, Error string
		}
		decodeInto(t, line, &rec)
		switch {
		case rec.Tool == "run_command" && rec.Job != "":
			starts[rec.Job] = true
		case rec.Tool == "job_end":
			if rec.Parent != "run_command" {
				t.Errorf("job_end without parent: %s", line)
			}
			ends[rec.Job] = rec.Outcome + " " + rec.Error
		}
	}
	for _, id := range []string{id0, id5, idR, idD, idC, *r.JobID} {
		if !starts[id] || ends[id] == "" {
			t.Errorf("job %s: start audited %v, end %q", id, starts[id], ends[id])
		}
	}
	if ends[id5] != "error exit status 5" || ends[id0] != "ok " {
		t.Errorf("job_end outcomes: %v", ends)
	}
	if strings.Contains(string(out), "zero-") || strings.Contains(string(out), "sleep 1000") {
		t.Error("a command's text reached the audit")
	}
	table, err := exec.Command(binPath, "audit", "--state", f.state, "--job", id5).Output()
	if err != nil {
		t.Fatalf("audit --job: %v", err)
	}
	if lines := strings.Split(strings.TrimSpace(string(table)), "\n"); len(lines) != 3 || !strings.Contains(lines[1], "run_command job="+id5) || !strings.Contains(lines[2], "run_command/job_end job="+id5) || !strings.Contains(lines[2], "exit status 5") {
		t.Errorf("audit --job %s:\n%s", id5, table)
	}
}

// BenchmarkJobCalls measures run_command detach and get_job (of a job that
// has just ended: the end is recorded) through the fleetmux binary on a
// real sshd host (loopback), per call, next to a blocking run_command of
// the same command.
func BenchmarkJobCalls(b *testing.B) {
	env := sshtest.New(b)
	h := env.StartHost("dev-1", sshtest.HostOptions{})
	dir := b.TempDir()
	cfg, _ := env.WriteFleetFiles(dir, h)
	sock := fmt.Sprintf("fleetmux-test-jobbench-%d", os.Getpid())
	defer tmuxtest.Command("-L", sock, "kill-server").Run()
	cmd := exec.Command(binPath, "--ssh-config", cfg, "--hosts", "dev-*", "--state", filepath.Join(dir, "state.db"))
	cmd.Env = append(os.Environ(), "LIBTMUX_SOCKET="+sock, "TMUX=", "TMUX_PANE=")
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	call := func(name string, args map[string]any) (*sdk.CallToolResult, time.Duration) {
		t0 := time.Now()
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			b.Fatalf("%s: %v %+v", name, err, res)
		}
		return res, time.Since(t0)
	}
	res, _ := call("create_session", map[string]any{"host": "dev-1", "session_name": "bench"})
	var sess mcp.SessionInfo
	raw, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(raw, &sess)
	pane := *sess.ActivePaneID
	call("respawn_pane", map[string]any{"host": "dev-1", "pane_id": pane, "kill": true, "shell": "/bin/sh"})
	time.Sleep(300 * time.Millisecond)
	var det, get, run []time.Duration
	for b.Loop() {
		_, d0 := call("run_command", map[string]any{"host": "dev-1", "pane_id": pane, "command": "true"})
		run = append(run, d0)
		res, d := call("run_command", map[string]any{"host": "dev-1", "pane_id": pane, "command": "true", "detach": true})
		det = append(det, d)
		var r mcp.RunCommandResult
		raw, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(raw, &r)
		_, g := call("get_job", map[string]any{"job_id": *r.JobID})
		get = append(get, g)
		time.Sleep(20 * time.Millisecond) // let the shell take the next line
	}
	b.ReportMetric(float64(p50(det).Microseconds())/1000, "detach-p50-ms")
	b.ReportMetric(float64(p50(get).Microseconds())/1000, "get_job-p50-ms")
	b.ReportMetric(float64(p50(run).Microseconds())/1000, "run_command-p50-ms")
}

// TestJobsDeadPaneRemote: on a real sshd host, a job whose pane's shell is
// killed (remain-on-exit keeps the pane) ends lost with the reason,
// list_jobs shows it lost, cancel_job sends nothing (a decoy sleep in
// another pane survives), and detach refuses the decoy's busy pane.
func TestJobsDeadPaneRemote(t *testing.T) {
	f := newJobsFleet(t)
	defer exec.Command("tmux", "-L", f.sock, "kill-server").Run()
	c := f.start(nil)
	var sess mcp.SessionInfo
	decodeInto(t, c.ok("create_session", map[string]any{"host": "dev-1", "session_name": "dead"}), &sess)
	pane := *sess.ActivePaneID
	c.ok("respawn_pane", map[string]any{"host": "dev-1", "pane_id": pane, "kill": true, "shell": "/bin/sh"})
	// The "remote" host is this machine: tmux and ps are read out of band.
	tm := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("tmux", append([]string{"-L", f.sock}, args...)...)
		cmd.Env = append(os.Environ(), "TMUX_TMPDIR="+f.host.TmuxTmpDir, "TMUX=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	untilForeground := func(p string) string {
		t.Helper()
		pid, tty := tm("display-message", "-p", "-t", p, "#{pane_pid}"), tm("display-message", "-p", "-t", p, "#{pane_tty}")
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if out, _ := exec.Command("ps", "-o", "comm=", "-t", tty).Output(); strings.Contains(string(out), "sleep") {
				out, _ := exec.Command("ps", "-o", "tpgid=", "-p", pid).Output()
				return strings.TrimSpace(string(out))
			}
			if time.Now().After(deadline) {
				t.Fatalf("sleep never ran in %s", p)
			}
		}
	}
	tm("set-option", "-g", "remain-on-exit", "on")
	decoyPane := tm("split-window", "-t", pane, "-P", "-F", "#{pane_id}", "/bin/sh")
	time.Sleep(300 * time.Millisecond) // the shell's first prompt
	tm("send-keys", "-t", decoyPane, "sleep 1001", "Enter")
	decoy := untilForeground(decoyPane)

	res := c.call("run_command", map[string]any{"host": "dev-1", "pane_id": decoyPane, "command": "echo typed", "detach": true})
	if !res.IsError || !strings.Contains(resultText(res), "is busy: its foreground process is 'sleep'") {
		t.Fatalf("detach into a busy pane: %s", resultText(res))
	}

	id, _ := c.detach(pane, "sleep 1000")
	untilForeground(pane)
	if err := exec.Command("kill", "-KILL", tm("display-message", "-p", "-t", pane, "#{pane_pid}")).Run(); err != nil {
		t.Fatal(err)
	}
	info, _ := c.jobUntil(id)
	if info.Status != mcp.JobLost || info.LostReason == nil || !strings.Contains(*info.LostReason, "pane "+pane+" is dead") || info.EndedAt == nil || info.Host != "dev-1" {
		t.Fatalf("dead pane: %+v", info)
	}
	var w struct {
		Result []mcp.JobInfo `json:"result"`
	}
	decodeInto(t, c.ok("list_jobs", map[string]any{"status": "lost"}), &w)
	if len(w.Result) != 1 || w.Result[0].JobID != id {
		t.Fatalf("lost jobs: %+v", w.Result)
	}
	var cr mcp.CancelJobResult
	decodeInto(t, c.ok("cancel_job", map[string]any{"job_id": id, "grace_seconds": 0}), &cr)
	if len(cr.SignalsSent) != 0 || cr.Job.Status != mcp.JobLost || cr.Note == nil || !strings.Contains(*cr.Note, "lost") {
		t.Fatalf("cancel of a lost job: %+v", cr)
	}
	if exec.Command("kill", "-0", decoy).Run() != nil {
		t.Fatal("the decoy sleep was signalled")
	}
}
