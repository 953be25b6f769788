package vocab

import "time"

// Job states (Job.State).
const (
	JobRunning = "running" // no exit status seen yet and the pane was there when last looked at
	JobExited  = "exited"  // the command's wrapper recorded its exit status
	JobLost    = "lost"    // the pane (or its tmux server) went away without a recorded status
)

// Job is a command fleetmux typed into a tmux pane that runs on after the
// call that started it (run_command with detach, or a run_command still
// running at --max-call-seconds). Its exit status is kept by the host
// itself (a tmux server option the typed wrapper sets); the record says
// where to read it. The command text is never stored, only its length and
// a SHA-256 prefix.
type Job struct {
	// ID is the job id (the key), chosen by the caller.
	ID string `json:"id"`
	// Host is the host alias the job runs on ("local" for this machine).
	Host string `json:"host"`
	// PaneID is the tmux pane the command was typed into ("%3").
	PaneID string `json:"pane_id"`
	// SocketName, SocketPath and TmuxBin name the tmux server (-L, -S and
	// the binary; the last two only for this machine).
	SocketName string `json:"socket_name,omitempty"`
	SocketPath string `json:"socket_path,omitempty"`
	TmuxBin    string `json:"tmux_bin,omitempty"`
	// ServerPID and PanePID identify the tmux server and the pane's
	// process when the command was typed: a pane id seen later with
	// another server or another process is not the job's pane.
	ServerPID int `json:"server_pid,omitempty"`
	PanePID   int `json:"pane_pid,omitempty"`
	// StartRow is the pane's absolute row (history size + cursor row)
	// where the command was typed: its output starts there.
	StartRow int `json:"start_row"`
	// StatusOption is the tmux server user option the wrapper sets to
	// "<exit status>:<unix seconds>" when the command ends.
	StatusOption string `json:"status_option"`
	// PaneOption is a pane user option the wrapper also sets (a
	// run_command that became a job), unset once the end is seen.
	PaneOption string `json:"pane_option,omitempty"`
	// CommandLen and CommandSHA256 describe the command without its text:
	// length in code points and the first 12 hex digits of its SHA-256.
	CommandLen    int    `json:"command_len"`
	CommandSHA256 string `json:"command_sha256_prefix"`
	// Origin is how the job started: "detach" or "deadline".
	Origin string `json:"origin"`
	// Started is when the command was typed; Ended when it ended (from
	// the wrapper's clock), or when the job was found lost.
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended,omitzero"`
	// State is JobRunning, JobExited or JobLost.
	State string `json:"state"`
	// ExitStatus is the command's exit status once exited.
	ExitStatus *int `json:"exit_status,omitempty"`
	// PID, SessionID and Client are the fleetmux process, its audit
	// session id and the MCP client that started the job.
	PID       int    `json:"pid"`
	SessionID string `json:"session_id"`
	Client    string `json:"client,omitempty"`
	// LostReason says why a lost job was judged lost (the pane dead or
	// gone, the server gone or restarted).
	LostReason string `json:"lost_reason,omitempty"`
	// PaneDeadStatus is the exit status of the pane's process when the
	// job was found lost in a dead pane and tmux had it.
	PaneDeadStatus *int `json:"pane_dead_status,omitempty"`
}
