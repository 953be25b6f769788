// Result models: the reference's (written by hand from surface.json; the
// schema tests hold them to it), then list_hosts' (surface_fleet.json).
// The jobs' models are in jobs.go.

package tools

import "github.com/fleetmux/fleetmux/mcp/pyfmt"

// SessionInfo is the reference's SessionInfo result model.
type SessionInfo struct {
	SessionID       string  `json:"session_id"`
	SessionName     *string `json:"session_name"`
	WindowCount     int     `json:"window_count"`
	SessionAttached *string `json:"session_attached"`
	SessionCreated  *string `json:"session_created"`
	ActivePaneID    *string `json:"active_pane_id"`
	Host            *string `json:"host,omitempty"`
}

// WindowInfo is the reference's WindowInfo result model.
type WindowInfo struct {
	WindowID     string  `json:"window_id"`
	WindowName   *string `json:"window_name"`
	WindowIndex  *string `json:"window_index"`
	SessionID    *string `json:"session_id"`
	SessionName  *string `json:"session_name"`
	PaneCount    int     `json:"pane_count"`
	WindowLayout *string `json:"window_layout"`
	WindowActive *string `json:"window_active"`
	WindowWidth  *string `json:"window_width"`
	WindowHeight *string `json:"window_height"`
	ActivePaneID *string `json:"active_pane_id"`
	Host         *string `json:"host,omitempty"`
}

// PaneEdges is where a pane sits in its window: the edge coordinates and
// which window edges it touches. The pane models embed it where the
// reference lists these fields (encoding/json keeps them in place).
type PaneEdges struct {
	PaneLeft     *int  `json:"pane_left"`
	PaneTop      *int  `json:"pane_top"`
	PaneRight    *int  `json:"pane_right"`
	PaneBottom   *int  `json:"pane_bottom"`
	PaneAtLeft   *bool `json:"pane_at_left"`
	PaneAtRight  *bool `json:"pane_at_right"`
	PaneAtTop    *bool `json:"pane_at_top"`
	PaneAtBottom *bool `json:"pane_at_bottom"`
}

// PaneInfo is the reference's PaneInfo result model.
type PaneInfo struct {
	PaneID     string  `json:"pane_id"`
	PaneIndex  *string `json:"pane_index"`
	PaneWidth  *string `json:"pane_width"`
	PaneHeight *string `json:"pane_height"`
	PaneEdges
	PaneTty            *string `json:"pane_tty"`
	PaneCurrentCommand *string `json:"pane_current_command"`
	PaneCurrentPath    *string `json:"pane_current_path"`
	PanePid            *string `json:"pane_pid"`
	PaneTitle          *string `json:"pane_title"`
	PaneActive         *string `json:"pane_active"`
	WindowID           *string `json:"window_id"`
	SessionID          *string `json:"session_id"`
	IsCaller           *bool   `json:"is_caller"`
	Host               *string `json:"host,omitempty"`
}

// PaneContentMatch is the reference's PaneContentMatch result model.
type PaneContentMatch struct {
	PaneID string `json:"pane_id"`
	PaneEdges
	PaneTty            *string  `json:"pane_tty"`
	PaneCurrentCommand *string  `json:"pane_current_command"`
	PaneCurrentPath    *string  `json:"pane_current_path"`
	WindowID           *string  `json:"window_id"`
	WindowName         *string  `json:"window_name"`
	SessionID          *string  `json:"session_id"`
	SessionName        *string  `json:"session_name"`
	MatchedLines       []string `json:"matched_lines"`
	IsCaller           *bool    `json:"is_caller"`
	Host               *string  `json:"host,omitempty"`
}

// ServerInfo is the reference's ServerInfo result model.
type ServerInfo struct {
	IsAlive      bool    `json:"is_alive"`
	SocketName   *string `json:"socket_name"`
	SocketPath   *string `json:"socket_path"`
	SessionCount int     `json:"session_count"`
	Version      *string `json:"version"`
	Host         *string `json:"host,omitempty"`
	// Servers holds one entry per host when get_server_info runs on a
	// host pattern in fleet mode; the other fields then summarise them.
	Servers []ServerInfo `json:"servers,omitempty"`
}

// OptionResult is the reference's OptionResult result model.
type OptionResult struct {
	Option string `json:"option"`
	Value  any    `json:"value"`
}

// OptionSetResult is the reference's OptionSetResult result model.
type OptionSetResult struct {
	Option string `json:"option"`
	Value  string `json:"value"`
	Status string `json:"status"`
}

// EnvironmentResult is the reference's EnvironmentResult result model.
type EnvironmentResult struct {
	Variables *pyfmt.OMap `json:"variables"`
}

// EnvironmentSetResult is the reference's EnvironmentSetResult result model.
type EnvironmentSetResult struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Status string `json:"status"`
}

// WaitForTextResult is the reference's WaitForTextResult result model.
type WaitForTextResult struct {
	Found            bool     `json:"found"`
	Outcome          string   `json:"outcome"`
	MatchedIndex     *int     `json:"matched_index"`
	MatchedLines     []string `json:"matched_lines"`
	Tail             []string `json:"tail"`
	SawNewOutput     bool     `json:"saw_new_output"`
	MatchedAtEntry   bool     `json:"matched_at_entry"`
	AlternateScreen  bool     `json:"alternate_screen"`
	PaneID           string   `json:"pane_id"`
	ElapsedSeconds   PyFloat  `json:"elapsed_seconds"`
	EffectiveTimeout PyFloat  `json:"effective_timeout"`
}

// CaptureSinceResult is the reference's CaptureSinceResult result model.
type CaptureSinceResult struct {
	PaneID         string   `json:"pane_id"`
	Cursor         string   `json:"cursor"`
	Lines          []string `json:"lines"`
	ElapsedSeconds PyFloat  `json:"elapsed_seconds"`
	LinesMissed    bool     `json:"lines_missed"`
	Truncated      bool     `json:"truncated"`
	TruncatedLines int      `json:"truncated_lines"`
	TruncatedBytes int      `json:"truncated_bytes"`
}

// TailedOutput is a command's output lines cut to the last max_lines, as
// run_command and the job tools report it; the result models embed it
// where the reference lists these fields (encoding/json keeps them in
// place).
type TailedOutput struct {
	Output               []string `json:"output"`
	OutputTruncated      bool     `json:"output_truncated"`
	OutputTruncatedLines int      `json:"output_truncated_lines"`
}

// RunCommandResult is the reference's RunCommandResult result model.
type RunCommandResult struct {
	PaneID         string  `json:"pane_id"`
	ExitStatus     *int    `json:"exit_status"`
	TimedOut       bool    `json:"timed_out"`
	ElapsedSeconds PyFloat `json:"elapsed_seconds"`
	TailedOutput
	EffectiveTimeout PyFloat `json:"effective_timeout"`
	// Extensions only (never set in the reference's local mode): the job
	// that carries on a command still running (detach, or the wait cut
	// at --max-call-seconds), and the host in fleet mode.
	JobID   *string `json:"job_id,omitempty"`
	Pending bool    `json:"pending,omitempty"`
	Host    *string `json:"host,omitempty"`
	// printed is what the command itself printed (no prompt, no echoed
	// input), for grouping a fan-out's hosts; nil when unknown.
	printed []string
}

// Printed is what the command itself printed (no prompt, no echoed
// input); nil when unknown.
func (r RunCommandResult) Printed() []string { return r.printed }

// SendKeysOperationResult is the reference's SendKeysOperationResult result model.
type SendKeysOperationResult struct {
	Index          int     `json:"index"`
	PaneID         *string `json:"pane_id"`
	Success        bool    `json:"success"`
	Error          *string `json:"error"`
	ElapsedSeconds PyFloat `json:"elapsed_seconds"`
}

// SendKeysBatchResult is the reference's SendKeysBatchResult result model.
type SendKeysBatchResult struct {
	Results   []SendKeysOperationResult `json:"results"`
	Succeeded int                       `json:"succeeded"`
	Failed    int                       `json:"failed"`
	StoppedAt *int                      `json:"stopped_at"`
}

// ToolCallOperationResult is the reference's result model of one batch
// operation, with ordered JSON payloads: nested
// content blocks, structured content and meta keep the key order of the
// nested result, as the reference's rows do.
type ToolCallOperationResult struct {
	Index             int     `json:"index"`
	Tool              string  `json:"tool"`
	Success           bool    `json:"success"`
	Error             *string `json:"error"`
	Content           []any   `json:"content"`
	StructuredContent any     `json:"structured_content"`
	Meta              any     `json:"meta"`
	ElapsedSeconds    PyFloat `json:"elapsed_seconds"`
}

// ToolCallBatchResult is the reference's ToolCallBatchResult result model.
type ToolCallBatchResult struct {
	Results                []ToolCallOperationResult `json:"results"`
	Succeeded              int                       `json:"succeeded"`
	Failed                 int                       `json:"failed"`
	StoppedAt              *int                      `json:"stopped_at"`
	ResponseTruncated      bool                      `json:"response_truncated"`
	ResponseTruncatedBytes int                       `json:"response_truncated_bytes"`
}

// PaneSnapshot is the reference's PaneSnapshot result model.
type PaneSnapshot struct {
	PaneID     string `json:"pane_id"`
	Content    string `json:"content"`
	CursorX    int    `json:"cursor_x"`
	CursorY    int    `json:"cursor_y"`
	PaneWidth  int    `json:"pane_width"`
	PaneHeight int    `json:"pane_height"`
	PaneEdges
	PaneTty               *string `json:"pane_tty"`
	PanePid               *string `json:"pane_pid"`
	PaneDead              *bool   `json:"pane_dead"`
	AlternateOn           *bool   `json:"alternate_on"`
	PaneInMode            bool    `json:"pane_in_mode"`
	PaneMode              *string `json:"pane_mode"`
	ScrollPosition        *int    `json:"scroll_position"`
	HistorySize           int     `json:"history_size"`
	Title                 *string `json:"title"`
	PaneCurrentCommand    *string `json:"pane_current_command"`
	PaneCurrentPath       *string `json:"pane_current_path"`
	IsCaller              *bool   `json:"is_caller"`
	ContentTruncated      bool    `json:"content_truncated"`
	ContentTruncatedLines int     `json:"content_truncated_lines"`
	Host                  *string `json:"host,omitempty"`
}

// SearchPanesResult is the reference's SearchPanesResult result model.
type SearchPanesResult struct {
	Matches           []PaneContentMatch `json:"matches"`
	Truncated         bool               `json:"truncated"`
	TruncatedPanes    []string           `json:"truncated_panes"`
	TotalPanesMatched int                `json:"total_panes_matched"`
	Offset            int                `json:"offset"`
	Limit             *int               `json:"limit"`
}

// HookEntry is the reference's HookEntry result model.
type HookEntry struct {
	HookName string `json:"hook_name"`
	Index    *int   `json:"index"`
	Command  string `json:"command"`
}

// HookListResult is the reference's HookListResult result model.
type HookListResult struct {
	Entries []HookEntry `json:"entries"`
}

// BufferRef is the reference's BufferRef result model.
type BufferRef struct {
	BufferName  string  `json:"buffer_name"`
	LogicalName *string `json:"logical_name"`
}

// BufferContent is the reference's BufferContent result model.
type BufferContent struct {
	BufferName            string `json:"buffer_name"`
	Content               string `json:"content"`
	ContentTruncated      bool   `json:"content_truncated"`
	ContentTruncatedLines int    `json:"content_truncated_lines"`
}

// PyFloat is a float that encodes the way Python's json module writes
// floats (10.0, not 10), so text content matches the reference byte for byte.
type PyFloat float64

// MarshalJSON implements json.Marshaler.
func (f PyFloat) MarshalJSON() ([]byte, error) { return []byte(pyfmt.Float(float64(f))), nil }

// InputFields are the extension fields of get_pane_info and
// snapshot_pane (fleet mode or --extensions): whether the pane's
// foreground program waits for the user to type, and the state it is in
// (package tmux/ttyinput); WaitingForInput is nil when that cannot be
// told.
type InputFields struct {
	WaitingForInput *bool   `json:"waiting_for_input"`
	InputState      *string `json:"input_state"`
}

// PaneInfoInput is get_pane_info's result with the extensions on.
type PaneInfoInput struct {
	PaneInfo
	InputFields
}

// PaneSnapshotInput is snapshot_pane's result with the extensions on.
type PaneSnapshotInput struct {
	PaneSnapshot
	InputFields
}

// HostStatus is what list_hosts reports for one host.
type HostStatus struct {
	Host        string   `json:"host"`
	HostName    *string  `json:"hostname"`
	Port        *int     `json:"port"`
	User        *string  `json:"user"`
	Safety      string   `json:"safety"`
	State       string   `json:"state"`
	TmuxVersion *string  `json:"tmux_version"`
	LastError   *string  `json:"last_error"`
	LastErrorAt *string  `json:"last_error_at"`
	LastConnect *string  `json:"last_connect"`
	RTTMillis   *float64 `json:"rtt_ms"`
	// Wait is how waits on the host wait: "watch" (a watcher reports
	// output), "poll" (the host cannot run one; WaitNote says why), or
	// null before the first wait there.
	Wait     *string `json:"wait"`
	WaitNote *string `json:"wait_note"`
}
