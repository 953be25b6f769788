package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/fleetmux/fleetmux/fleet/vocab"
	"github.com/fleetmux/fleetmux/mcp/age"
	"github.com/fleetmux/fleetmux/mcp/pyfmt"
	"github.com/fleetmux/fleetmux/tmux"
)

// Jobs (extensions only). A job is a command run_command typed into a
// pane and left running: with detach=true, or when its wait reached
// --max-call-seconds. The command is typed in run_command's subshell
// wrapper, whose trailer sets the tmux server option
// @fleetmux_job_<id> to "<exit status>:<unix seconds>" on the host when
// the command ends; the job's record (state file) says which host, server,
// pane and option to read. Reading the option back (get_job, list_jobs,
// cancel_job) is how fleetmux learns the end, after a restart or a
// dropped connection as well; once the end is recorded durably the option
// is unset.

// jobOption is the tmux server option a job's wrapper sets.
func jobOption(id string) string { return "@fleetmux_job_" + id }

// jobStateFormat reads, at the moment a command is typed, the tmux
// server's pid, the pane's process and the pane's absolute cursor row.
const jobStateFormat = "#{pid} #{pane_pid} #{history_size} #{cursor_y}"

// jobStart is what jobStateFormat printed.
type jobStart struct {
	serverPID, panePID, row int
}

func parseJobStart(lines []string) jobStart {
	var st jobStart
	if len(lines) == 0 {
		return st
	}
	f := strings.Fields(lines[0])
	if len(f) != 4 {
		return st
	}
	n := make([]int, 4)
	for i, s := range f {
		n[i], _ = strconv.Atoi(s)
	}
	return jobStart{serverPID: n[0], panePID: n[1], row: n[2] + n[3]}
}

// jobPayload is what a job's run_command types: run_command's subshell
// wrapper whose trailer also records the exit status in the job's server
// option. statusOption and channel are run_command's own (a command that
// may become a job while run_command waits for it); "" leaves them out
// (detach).
//
// The subshell turns SIGINT into exit 130: an interactive shell whose
// foreground job dies of SIGINT (C-c, cancel_job) abandons the rest of
// the command line, trailer included, but carries on after a plain exit.
// A trapped signal is reset to its default in the commands the subshell
// starts, so C-c still stops them as usual.
func jobPayload(srv *tmux.Server, paneID, command string, suppress bool, jobOpt, statusOption, channel string) string {
	open := "(trap 'exit 130' INT"
	if suppress {
		open = " " + open
	}
	trailer := "); s=$?; "
	if statusOption != "" {
		trailer += srv.ShellCommand(tmux.SetPaneOption(paneID, statusOption)) + ` "$s"; `
	}
	trailer += srv.ShellCommand(tmux.SetServerOption(jobOpt)) + ` "$s:$(date +%s.%N)"`
	if channel != "" {
		trailer += "; " + srv.ShellCommand(tmux.Signal(channel))
	}
	return open + "\n" + pyfmt.RStrip(command) + "\n" + trailer
}

// typeJob finds the pane, reads its state and types the payload, in one
// request. Nothing is typed when the pane cannot be found, nor, with
// idleFlag (a pane option unique to the call), when the pane is dead or
// busy: its terminal's foreground process is not its shell at the prompt
// (tmux.IdleShell), so the keys would go to that program.
func typeJob(ctx context.Context, c *Call, idleFlag string, payload func(paneID string) string) (string, jobStart, error) {
	paneID, guarded, idleGuard := "", 0, -1
	act := func(p string) []tmux.Cmd {
		paneID = p
		var cmds []tmux.Cmd
		if idleFlag != "" {
			cmds = tmux.IdleShell(p, idleFlag)
			idleGuard = len(cmds) - 2 // the guard itself (IdleShell's second-to-last)
		}
		// The job wrapper is POSIX sh (jobPayload): a pane whose shell
		// reads another language is refused before anything is typed.
		cmds = append(cmds, tmux.POSIXShell(p))
		guarded = len(cmds)
		return append(cmds, tmux.DisplayMessage(p, jobStateFormat), tmux.SendKeysRaw(p, true, payload(p)), tmux.SendEnter(p))
	}
	row, replies, err := tmux.PaneAct(ctx, c.srv, paneTarget(c), act)
	if err != nil {
		return "", jobStart{}, err
	}
	for i, r := range replies[:guarded] {
		if r.Err != nil {
			switch i {
			case idleGuard: // typing was refused: the pane is busy
				return "", jobStart{}, busyPaneError(paneID, row)
			case guarded - 1: // the shell guard
				return "", jobStart{}, Expectedf("Pane %s runs %s: a job's wrapper (run_command with detach=true, or a timeout past --max-call-seconds) is POSIX sh, which %s does not read; nothing was typed. Run the command without detach and with a timeout within --max-call-seconds, or start sh, bash or zsh in the pane", paneID, pyfmt.Repr(paneShell(row["pane_current_command"])), paneShell(row["pane_current_command"]))
			}
			return "", jobStart{}, r.Err
		}
	}
	replies = replies[guarded:]
	for _, r := range replies[:3] {
		if r.Err != nil {
			return "", jobStart{}, r.Err
		}
	}
	return paneID, parseJobStart(replies[0].Lines), nil
}

// busyPaneError is run_command detach's refusal of a pane that is not a
// shell at its prompt; row is the pane as listed just before.
func busyPaneError(paneID string, row tmux.Attrs) error {
	if row["pane_dead"] == "1" {
		return Expectedf("Pane %s is dead (its process exited); run_command detach=true types only into a live shell and typed nothing. respawn_pane restarts the pane", paneID)
	}
	what := "a program other than its shell"
	if cmd := row["pane_current_command"]; cmd != "" {
		what = pyfmt.Repr(cmd)
	}
	return Expectedf("Pane %s is busy: its foreground process is %s, not its shell at the prompt; run_command detach=true typed nothing (the keys would go to that program). Wait for it to end or stop it (cancel_job, send_keys C-c), or use another pane", paneID, what)
}

// newJob is the record of a job this call started.
func newJob(c *Call, command, id, paneID string, st jobStart, started time.Time, origin, paneOption string) Job {
	sum := sha256.Sum256([]byte(command))
	client := c.deps.Client()
	return Job{
		ID: id, Host: c.Host, PaneID: paneID,
		SocketName: c.srv.SocketName, SocketPath: c.srv.SocketPath, TmuxBin: c.srv.Bin,
		ServerPID: st.serverPID, PanePID: st.panePID, StartRow: st.row,
		StatusOption: jobOption(id), PaneOption: paneOption,
		CommandLen: utf8.RuneCountInString(command), CommandSHA256: hex.EncodeToString(sum[:])[:12],
		Origin: origin, Started: started.UTC(), State: JobRunning,
		PID: os.Getpid(), SessionID: c.env.SessionID, Client: client,
	}
}

// runDetached is run_command with detach=true: it types the command and
// returns at once with the job that carries it.
func runDetached(ctx context.Context, c *Call, a runCommandArgs) (any, error) {
	command, suppress := a.Command, a.SuppressHistory
	id, err := runCommandID()
	if err != nil {
		return nil, Unexpected("RuntimeError", err)
	}
	started := time.Now()
	paneID, st, err := typeJob(ctx, c, "@fleetmux_idle_"+id, func(p string) string {
		return jobPayload(c.srv, p, command, suppress, jobOption(id), "", "")
	})
	if err != nil {
		return nil, err
	}
	c.env.Jobs.put(ctx, newJob(c, command, id, paneID, st, started, "detach", ""))
	noteJob(ctx, id)
	return RunCommandResult{
		PaneID: paneID, TailedOutput: TailedOutput{Output: []string{}}, ElapsedSeconds: PyFloat(time.Since(started).Seconds()),
		EffectiveTimeout: PyFloat(min(runCommandTimeout(a.Timeout), waitCeiling(c))),
		JobID:            &id, Pending: true, Host: c.HostField(),
	}, nil
}

// callLimit is --max-call-seconds when it applies (extensions on), else 0.
func (s *Env) callLimit() float64 {
	if !s.Extended {
		return 0
	}
	return s.MaxCallSeconds
}

// runWithDeadline is run_command when its timeout exceeds
// --max-call-seconds (limit): the command is typed with a trailer that
// also records its status for a job, and the wait ends at the limit (or
// the effective timeout, whichever comes first). A command still running
// then carries on as a job: the result is pending with its id.
func runWithDeadline(ctx context.Context, c *Call, a runCommandArgs, effective, limit float64) (any, error) {
	command, suppress := a.Command, a.SuppressHistory
	srv := c.srv
	id, err := runCommandID()
	if err != nil {
		return nil, Unexpected("RuntimeError", err)
	}
	channel, statusOption, jobOpt := "r_"+id, "@s_"+id, jobOption(id)
	wait := min(effective, limit)
	started := time.Now()
	defer c.tick(ctx, wait, "run_command")()
	paneID, st, err := typeJob(ctx, c, "", func(p string) string {
		return jobPayload(srv, p, command, suppress, jobOpt, statusOption, channel)
	})
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithDeadline(ctx, started.Add(durSeconds(wait)))
	replies, err := srv.Batch(wctx, tmux.WaitFor(channel), tmux.ShowPaneOption(paneID, statusOption),
		tmux.UnsetPaneOption(paneID, statusOption), tmux.UnsetServerOption(jobOpt),
		tmux.Pause(runSettle), tmux.Capture{Target: paneID, Join: true}.Cmd())
	cancel()
	result := RunCommandResult{PaneID: paneID, EffectiveTimeout: PyFloat(effective), Host: c.HostField()}
	var lines []string
	switch {
	case err != nil && ctx.Err() != nil:
		// The client gave up (cancelled): the command runs on, so it is
		// kept as a job that list_jobs shows.
		c.env.Jobs.put(context.WithoutCancel(ctx), newJob(c, command, id, paneID, st, started, "deadline", statusOption))
		noteJob(ctx, id)
		return nil, ctx.Err()
	case err != nil && errors.Is(wctx.Err(), context.DeadlineExceeded):
		// Still running: it goes on as a job.
		c.env.Jobs.put(ctx, newJob(c, command, id, paneID, st, started, "deadline", statusOption))
		noteJob(ctx, id)
		result.JobID, result.Pending = &id, true
		result.TimedOut = wait >= effective
		out, err := srv.Exec(ctx, tmux.Capture{Target: paneID, Join: true}.Cmd())
		if err != nil {
			return nil, err
		}
		lines = out.Lines()
	case err != nil:
		return nil, err
	case replies[0].Err != nil:
		return nil, Expectedf("wait-for failed for run_command channel %s: %s", pyfmt.Repr(channel), replyErrText(replies[0]))
	default:
		n, err := exitStatusOf(replies[1], statusOption)
		if err != nil {
			return nil, err
		}
		result.ExitStatus = &n
		r := replies[5]
		if r.Err != nil {
			return nil, r.Err
		}
		lines = r.Lines
	}
	result.ElapsedSeconds = PyFloat(time.Since(started).Seconds())
	result.TailedOutput = tailOutput(filterRunCommandLines(lines, channel, statusOption), a.MaxLines)
	return result, nil
}

// ---- reading a job back ----

// jobView is what one look at a job's host found.
type jobView struct {
	state  string
	exit   *int
	ended  time.Time
	output []string // nil: not read
	err    error    // the host could not be asked; state is the stored one
	// lost: why, and the dead pane's exit status when tmux had it.
	reason     string
	deadStatus *int
}

// storedView is a job's view as recorded, without asking its host.
func storedView(j Job) jobView {
	return jobView{state: j.State, exit: j.ExitStatus, ended: j.Ended, reason: j.LostReason, deadStatus: j.PaneDeadStatus}
}

// jobPaneFormat is how lookJob reads the job's pane: its id (empty when
// the pane is gone: display-message then prints the server's fields
// only), the server's and the pane's process (the job's pane is the one with both pids of the
// record) and whether the pane is dead, with its process's exit status
// or signal (pane_dead_signal is empty before tmux 3.3).
const jobPaneFormat = "#{pane_id}|#{pid}|#{pane_pid}|#{pane_dead}|#{pane_dead_status}|#{pane_dead_signal}"

// jobPane is what jobPaneFormat printed.
type jobPane struct {
	id, serverPID, panePID string
	dead                   bool
	status, signal         string
}

func parseJobPane(lines []string) (jobPane, bool) {
	if len(lines) == 0 {
		return jobPane{}, false
	}
	f := strings.Split(lines[0], "|")
	if len(f) != 6 || f[0] == "" {
		return jobPane{}, false
	}
	return jobPane{id: f[0], serverPID: f[1], panePID: f[2], dead: f[3] == "1", status: f[4], signal: f[5]}, true
}

// mismatch says how the pane differs from the job's record ("" when it is
// the job's pane).
func (p jobPane) mismatch(j Job) string {
	switch {
	case p.id != j.PaneID:
		return goneReason(j.PaneID)
	case j.ServerPID != 0 && p.serverPID != strconv.Itoa(j.ServerPID):
		return fmt.Sprintf("the tmux server was restarted (pid %s, the job's was %d); pane %s is not the job's pane", p.serverPID, j.ServerPID, j.PaneID)
	case j.PanePID != 0 && p.panePID != strconv.Itoa(j.PanePID):
		return fmt.Sprintf("pane %s runs another process (pid %s, the job's was %d): it was respawned", j.PaneID, p.panePID, j.PanePID)
	}
	return ""
}

// deadReason describes a dead pane and returns its exit status when
// tmux had one.
func (p jobPane) deadReason(paneID string) (string, *int) {
	var status *int
	how := "its process ended"
	if n, err := strconv.Atoi(p.status); err == nil && p.status != "" {
		status = &n
		how = fmt.Sprintf("its process exited with status %d", n)
	} else if p.signal != "" {
		how = "its process was killed by signal " + p.signal
	}
	return fmt.Sprintf("pane %s is dead: %s before the command recorded an exit status (remain-on-exit keeps the pane)", paneID, how), status
}

// jobStatusRE is the value a job's wrapper sets: exit status, ':', Unix
// seconds (empty when date failed), '.' and nanoseconds where date knows
// %N (GNU; BSD date prints "N", Debian's busybox date "%N").
var jobStatusRE = regexp.MustCompile(`^(-?[0-9]+):([0-9]*)(?:\.([0-9]{1,9}|%?N))?$`)

// parseJobStatus reads a job's status option: its exit status and end
// (now when the wrapper's date printed nothing; never before started, as
// the host's clock may be behind ours or lack sub-second precision).
func parseJobStatus(value string, started, now time.Time) (int, time.Time, bool) {
	m := jobStatusRE.FindStringSubmatch(strings.TrimSpace(value))
	if m == nil {
		return 0, time.Time{}, false
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return 0, time.Time{}, false
	}
	end := now
	if sec, err := strconv.ParseInt(m[2], 10, 64); err == nil {
		frac, _ := strconv.Atoi((m[3] + "000000000")[:9])
		end = time.Unix(sec, int64(frac))
	}
	if end.Before(started) {
		end = started
	}
	return n, end, true
}

// jobRowFormat is the first row of a job's output for capture-pane,
// computed by tmux: the row the command was typed on, or the top of the
// visible screen when that row has scrolled into the history (the same
// screen-sized limit as run_command's output).
func jobRowFormat(startRow int) string {
	d := fmt.Sprintf("#{e|-:%d,#{history_size}}", startRow)
	return "#{?#{e|<:" + d + ",0},0," + d + "}"
}

// jobTmux is the tmux server a job runs on.
func (s *Env) jobTmux(ctx context.Context, gate Deps, j Job) (*tmux.Server, error) {
	if err := gate.HostGate(j.Host); err != nil {
		return nil, err
	}
	ex, err := s.executor(ctx, j.Host)
	if err != nil {
		return nil, err
	}
	return &tmux.Server{Executor: ex, SocketName: j.SocketName, SocketPath: j.SocketPath, Bin: j.TmuxBin}, nil
}

// lookJob asks the job's host, in one request, for the status option, the
// pane's identity and (withOutput) the pane's rows from the job's start.
func (s *Env) lookJob(ctx context.Context, gate Deps, j Job, withOutput bool) jobView {
	v := storedView(j)
	srv, err := s.jobTmux(ctx, gate, j)
	if err != nil {
		v.err = err
		return v
	}
	cmds := []tmux.Cmd{tmux.ShowServerOption(j.StatusOption), tmux.DisplayMessage(j.PaneID, jobPaneFormat)}
	if withOutput {
		cmds = append(cmds, tmux.CaptureFromRow(j.PaneID, jobRowFormat(j.StartRow)))
	}
	replies, err := srv.Batch(ctx, cmds...)
	if err != nil {
		v.err = &HostError{Host: j.Host, Err: err}
		return v
	}
	if r := replies[0]; r.Err != nil {
		if tmux.NoServer(r.Err) {
			if j.State != JobRunning {
				return v
			}
			v.reason = "the tmux server " + jobServerName(j) + " is gone (no server running on its socket)"
			return s.settled(v, JobLost, nil, time.Time{})
		}
		v.err = r.Err
		return v
	}
	exited := false
	if l := replies[0].Lines; len(l) > 0 {
		if n, end, ok := parseJobStatus(l[0], j.Started, time.Now()); ok {
			v = s.settled(v, JobExited, &n, end)
			exited = true
		}
	}
	// The job's pane is the one with the record's server and pane
	// process; a dead one (remain-on-exit) is still its pane, and its
	// rows can still be read.
	ours, reason := false, ""
	pane, read := jobPane{}, false
	if r := replies[1]; r.Err == nil {
		pane, read = parseJobPane(r.Lines)
	}
	if read {
		if reason = pane.mismatch(j); reason == "" {
			ours = true
		}
	}
	if withOutput && ours && len(replies) > 2 && replies[2].Ran && replies[2].Err == nil {
		v.output = trimTrailingBlank(replies[2].Lines)
	}
	switch {
	case j.State != JobRunning: // ended before: only the output was new
		stored := storedView(j)
		stored.output = v.output
		v = stored
	case exited:
	case ours && !pane.dead:
		v.state = JobRunning
	case ours:
		v.reason, v.deadStatus = pane.deadReason(j.PaneID)
		v = s.settled(v, JobLost, nil, time.Time{})
	default:
		v.reason = goneReason(j.PaneID)
		if reason != "" {
			v.reason = reason
		}
		v = s.settled(v, JobLost, nil, time.Time{})
	}
	return v
}

// goneReason is the lost reason of a job whose pane is not there.
func goneReason(paneID string) string {
	return fmt.Sprintf("pane %s is gone (the pane, its window or its session was killed)", paneID)
}

// jobServerName names a job's tmux server for a message.
func jobServerName(j Job) string {
	switch {
	case j.SocketPath != "":
		return pyfmt.Repr(j.SocketPath)
	case j.SocketName != "":
		return pyfmt.Repr(j.SocketName)
	}
	return "(default socket)"
}

// settled marks a view as ended (exited or lost).
func (s *Env) settled(v jobView, state string, exit *int, ended time.Time) jobView {
	if ended.IsZero() {
		ended = time.Now()
	}
	v.state, v.exit, v.ended = state, exit, ended
	return v
}

func trimTrailingBlank(lines []string) []string {
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// refreshJob looks at a running job's host and records an end it finds
// (once: the store decides which process writes it, and that one appends
// the job_end audit record). Jobs already ended are only looked at for
// their output. It returns the job as recorded and what was seen.
func (s *Env) refreshJob(ctx context.Context, gate Deps, j Job, withOutput bool) (Job, jobView) {
	if j.State != JobRunning && !withOutput {
		return j, storedView(j)
	}
	v := s.lookJob(ctx, gate, j, withOutput)
	if j.State != JobRunning || v.err != nil || v.state == JobRunning {
		return j, v
	}
	rec, changed, fellBack, err := s.Jobs.update(ctx, j.ID, func(x *Job) bool {
		if x.State != JobRunning {
			return false
		}
		x.State, x.ExitStatus, x.Ended = v.state, v.exit, v.ended.UTC()
		x.LostReason, x.PaneDeadStatus = v.reason, v.deadStatus
		return true
	})
	if err != nil {
		s.Log.Warn("job end not recorded", "job", j.ID, "error", err.Error())
		j.State, j.ExitStatus, j.Ended = v.state, v.exit, v.ended
		j.LostReason, j.PaneDeadStatus = v.reason, v.deadStatus
		return j, v
	}
	if !changed {
		// Another call or process recorded the end first: report what
		// it recorded.
		out := v.output
		v = storedView(rec)
		v.output = out
	}
	if changed {
		s.auditJobEnd(ctx, rec)
	}
	// The host's copy is dropped only once the end is kept where every
	// later reader looks (the state file; memory without one).
	// It is dropped behind the call (shutdown waits for it).
	if rec.State == JobExited && !fellBack {
		if srv, err := s.jobTmux(ctx, gate, rec); err == nil {
			cmds := []tmux.Cmd{tmux.UnsetServerOption(rec.StatusOption)}
			if rec.PaneOption != "" {
				cmds = append(cmds, tmux.UnsetPaneOption(rec.PaneID, rec.PaneOption))
			}
			s.Background.Go(func() {
				cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), jobCleanupTimeout)
				defer cancel()
				_, _ = srv.Exec(cctx, cmds...)
			})
		}
	}
	return rec, v
}

// jobCleanupTimeout bounds the removal of a recorded job's status from
// its host.
const jobCleanupTimeout = 5 * time.Second

// auditJobEnd appends the job_end record of a job whose end this process
// recorded: linked to the run_command call that started it (parent
// run_command, same job id), outcome ok for exit status 0.
func (s *Env) auditJobEnd(ctx context.Context, j Job) {
	args, _ := json.Marshal(map[string]any{
		"job_id":  j.ID,
		"pane_id": j.PaneID,
		"command": map[string]any{"len": j.CommandLen, "sha256_prefix": j.CommandSHA256},
	})
	ev := AuditEvent{
		Time: time.Now().UTC(), SessionID: s.SessionID, Client: j.Client, Host: j.Host,
		Tool: "job_end", Args: args, Outcome: "ok", Duration: j.Ended.Sub(j.Started),
		Parent: "run_command", Job: j.ID,
	}
	switch {
	case j.State == JobLost:
		ev.Outcome, ev.ErrorType, ev.Error = "error", "JobLost", "the pane or its tmux server went away before the command recorded an exit status"
		if j.LostReason != "" {
			ev.Error = j.LostReason
		}
	case j.ExitStatus != nil && *j.ExitStatus != 0:
		ev.Outcome, ev.ErrorType, ev.Error = "error", "ExitStatus", fmt.Sprintf("exit status %d", *j.ExitStatus)
	}
	if s.Auditor == nil {
		return
	}
	if err := s.Auditor.Append(context.WithoutCancel(ctx), ev); err != nil {
		s.AuditWarn.Do(func() {
			s.Log.Error("audit unavailable; tool calls continue without persisted records", "error", err.Error())
		})
	}
}

// ---- results ----

// JobInfo is what get_job, list_jobs and cancel_job report for a job.
type JobInfo struct {
	JobID          string  `json:"job_id"`
	Host           string  `json:"host"`
	PaneID         string  `json:"pane_id"`
	Status         string  `json:"status"`
	ExitStatus     *int    `json:"exit_status"`
	StartedAt      string  `json:"started_at"`
	EndedAt        *string `json:"ended_at"`
	ElapsedSeconds PyFloat `json:"elapsed_seconds"`
	Origin         string  `json:"origin"`
	CommandLen     int     `json:"command_len"`
	CommandSHA256  string  `json:"command_sha256_prefix"`
	SocketName     *string `json:"socket_name"`
	TailedOutput
	LostReason     *string `json:"lost_reason"`
	PaneDeadStatus *int    `json:"pane_dead_status"`
	Error          *string `json:"error"`
}

// CancelJobResult is cancel_job's result.
type CancelJobResult struct {
	Job         JobInfo  `json:"job"`
	SignalsSent []string `json:"signals_sent"`
	Note        *string  `json:"note"`
}

const jobTimeFormat = "2006-01-02T15:04:05.000Z07:00"

func jobInfo(j Job, v jobView, maxLines *int) JobInfo {
	info := JobInfo{
		JobID: j.ID, Host: j.Host, PaneID: j.PaneID, Status: v.state, ExitStatus: v.exit,
		StartedAt: j.Started.UTC().Format(jobTimeFormat), Origin: j.Origin,
		CommandLen: j.CommandLen, CommandSHA256: j.CommandSHA256, TailedOutput: TailedOutput{Output: []string{}},
	}
	end := time.Now()
	if v.state != JobRunning && !v.ended.IsZero() {
		end = v.ended
		e := end.UTC().Format(jobTimeFormat)
		info.EndedAt = &e
	}
	info.ElapsedSeconds = PyFloat(max(end.Sub(j.Started), 0).Seconds())
	if j.SocketName != "" {
		sn := j.SocketName
		info.SocketName = &sn
	}
	if v.output != nil {
		other := j.PaneOption
		if other == "" {
			other = j.StatusOption
		}
		info.TailedOutput = tailOutput(filterRunCommandLines(v.output, j.StatusOption, other), maxLines)
	}
	if v.state == JobLost && v.reason != "" {
		r := v.reason
		info.LostReason = &r
	}
	info.PaneDeadStatus = v.deadStatus
	if v.err != nil {
		e := DescribeError(v.err).Text
		info.Error = &e
	}
	return info
}

// ---- tools ----

// jobIDArg is the job_id argument of get_job and cancel_job.
type jobIDArg struct {
	JobID string // checked by checkJobID
}

func checkJobID(a jobIDArg) error {
	if strings.TrimSpace(a.JobID) == "" {
		return Expectedf("job_id must not be empty")
	}
	return nil
}

func checkCancelJob(a cancelJobArgs) error {
	if err := checkJobID(a.jobIDArg); err != nil {
		return err
	}
	if g := a.GraceSeconds; g != nil && (*g < 0 || *g > maxGrace) {
		return Expectedf("grace_seconds must be between 0 and %s", pyfmt.Float(maxGrace))
	}
	return nil
}

// findJob returns the job named id (the call's job_id).
func findJob(ctx context.Context, c *Call, id string) (Job, error) {
	j, ok := c.env.Jobs.get(ctx, id)
	if !ok {
		return Job{}, Expectedf("job %s not found: list_jobs shows the known jobs (they are kept as long as --audit-retention keeps audit records)", pyfmt.Repr(id))
	}
	return j, nil
}

type getJobArgs struct {
	jobIDArg
	MaxLines *int
}

func getJob(ctx context.Context, c *Call, a getJobArgs) (any, error) {
	j, err := findJob(ctx, c, a.JobID)
	if err != nil {
		return nil, err
	}
	j, v := c.env.refreshJob(ctx, c.deps, j, true)
	return jobInfo(j, v, a.MaxLines), nil
}

// listJobsConcurrency bounds the hosts list_jobs asks at once, and
// listJobsTimeout each question.
const (
	listJobsConcurrency = 8
	listJobsTimeout     = 15 * time.Second
)

func checkListJobs(a listJobsArgs) error {
	if l := a.Limit; l != nil && *l < 1 {
		return Expectedf("limit must be at least 1")
	}
	if s := a.Since; s != nil {
		if _, err := parseSince(*s, time.Now()); err != nil {
			return err
		}
	}
	return nil
}

type listJobsArgs struct {
	Since        *string // checked by checkListJobs
	Host, Status *string
	Limit        *int // checked by checkListJobs
}

func listJobs(ctx context.Context, c *Call, a listJobsArgs) (any, error) {
	var since time.Time
	if s := a.Since; s != nil {
		since, _ = parseSince(*s, time.Now())
	}
	hostPat := a.Host
	var jobs []Job
	for _, j := range c.env.Jobs.list(ctx, since) {
		if hostPat == nil || j.Host == *hostPat || vocab.MatchHost(*hostPat, j.Host) {
			jobs = append(jobs, j)
		}
	}
	views := make([]jobView, len(jobs))
	sem := make(chan struct{}, listJobsConcurrency)
	var wg sync.WaitGroup
	for i := range jobs {
		if jobs[i].State != JobRunning {
			views[i] = storedView(jobs[i])
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			jctx, cancel := context.WithTimeout(ctx, listJobsTimeout)
			defer cancel()
			jobs[i], views[i] = c.env.refreshJob(jctx, c.deps, jobs[i], false)
		})
	}
	wg.Wait()
	status := a.Status
	limit := 20
	if l := a.Limit; l != nil {
		limit = *l
	}
	out := []JobInfo{}
	for i, j := range jobs {
		if status != nil && views[i].state != *status {
			continue
		}
		if len(out) == limit {
			break
		}
		out = append(out, jobInfo(j, views[i], nil))
	}
	return out, nil
}

// parseSince reads list_jobs' since: an age (90m, 36h, 7d, 1d12h; read by
// package age, as fleetmux audit --since is) or a time (RFC 3339).
func parseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	d, ok, err := age.Parse(s)
	if !ok || err != nil {
		return time.Time{}, Expectedf("since %s is neither an age (90m, 36h, 7d, 1d12h) nor an RFC 3339 time (2026-03-01T12:00:00Z)", pyfmt.Repr(s))
	}
	return now.Add(-d), nil
}

// cancel_job: how long each signal is given before the next.
const (
	maxGrace      = 600.0
	signalGrace   = 2 * time.Second
	cancelPollGap = 100 * time.Millisecond
)

type cancelJobArgs struct {
	jobIDArg
	GraceSeconds *float64 // checked by checkCancelJob
}

// cancelJob interrupts a running job: C-c typed into its pane (SIGINT to
// the terminal's foreground process group, as a person would), then, if
// the job has not ended after grace_seconds, SIGTERM and after 2 s SIGKILL
// to the pane's foreground process group (never the pane's shell itself),
// each followed by a look at the job's status. The pane and its shell stay;
// the job's wrapper records the exit status the signal caused (130, 143,
// 137 in bash).
//
// Nothing is sent to a job that is not running: a look at its host just
// before finds a dead or missing pane lost. A signal goes only to a group
// the host confirms in the same request (tmux.SignalForeground: the pane
// live, its process the job's, the group the foreground of the pane's
// terminal); when it cannot, nothing is sent and the note says why.
func cancelJob(ctx context.Context, c *Call, a cancelJobArgs) (any, error) {
	j, err := findJob(ctx, c, a.JobID)
	if err != nil {
		return nil, err
	}
	j, v := c.env.refreshJob(ctx, c.deps, j, false) // also checks the host's safety cap
	if v.err != nil {
		return nil, v.err
	}
	res := CancelJobResult{SignalsSent: []string{}}
	if v.state != JobRunning {
		note := "the job had already ended; nothing was sent"
		if v.state == JobLost {
			note = "the job is lost (" + v.reason + "); nothing was sent"
		}
		res.Note = &note
		j, v = c.env.refreshJob(ctx, c.deps, j, true)
		res.Job = jobInfo(j, v, nil)
		return res, nil
	}
	srv, err := c.env.jobTmux(ctx, c.deps, j)
	if err != nil {
		return nil, err
	}
	grace := 5.0
	if g := a.GraceSeconds; g != nil {
		grace = *g
	}
	steps := []struct {
		name   string
		cmd    tmux.Cmd
		signal bool // sent only when the host confirmed the group
		wait   time.Duration
	}{
		{"C-c", tmux.SendKeys(j.PaneID, false, "C-c"), false, durSeconds(grace)},
		{"SIGTERM", tmux.SignalForeground(j.PaneID, j.PanePID, "TERM"), true, signalGrace},
		{"SIGKILL", tmux.SignalForeground(j.PaneID, j.PanePID, "KILL"), true, signalGrace},
	}
	refused := ""
	for _, st := range steps {
		replies, err := srv.Batch(ctx, st.cmd)
		if err != nil || replies[0].Err != nil {
			break // the pane went away: the look below says so
		}
		if st.signal && !slices.Contains(replies[0].Lines, tmux.SignalSent) {
			refused = st.name
			break
		}
		res.SignalsSent = append(res.SignalsSent, st.name)
		deadline := time.Now().Add(st.wait)
		for {
			j, v = c.env.refreshJob(ctx, c.deps, j, false)
			if v.err != nil || v.state != JobRunning || !time.Now().Before(deadline) {
				break
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(cancelPollGap):
			}
		}
		if v.err != nil || v.state != JobRunning {
			break
		}
	}
	j, v = c.env.refreshJob(ctx, c.deps, j, true)
	switch {
	case v.err != nil:
	case v.state == JobLost:
		note := "the job is lost (" + v.reason + "); nothing more was sent"
		res.Note = &note
	case v.state == JobRunning && refused != "":
		note := fmt.Sprintf("%s was not sent: the host could not confirm that pane %s is live with the job's process (pid %d) and has a foreground process group other than its shell on its terminal (the command may have ended or left that group, or ps on the host cannot tell); nothing was signalled. kill_pane or respawn_pane ends everything in the pane", refused, j.PaneID, j.PanePID)
		res.Note = &note
	case v.state == JobRunning:
		note := "the job is still running after C-c, SIGTERM and SIGKILL to its pane's foreground process group (its process may have left that group); kill_pane or respawn_pane ends everything in the pane"
		res.Note = &note
	}
	res.Job = jobInfo(j, v, nil)
	return res, nil
}
