package vocab

import (
	"encoding/json"
	"time"
)

// Outcomes of a tool call (AuditRecord.Outcome); a fan-out host can also
// be skipped (mcp/surface).
const (
	OutcomeOK      = "ok"      // the call returned a normal result
	OutcomeError   = "error"   // the call failed (tool error or exception)
	OutcomeRefused = "refused" // the safety gate or host selection refused the call
)

// AuditRecord is one audited tool call: what mcp hands its auditor (Seq,
// PID and JID left zero) and what store keeps. The JSON form (snake_case
// keys) is what the state file stores and `fleetmux audit --json` prints.
type AuditRecord struct {
	// Seq is assigned by store.Append: unique in the file and increasing in commit
	// order (not necessarily in Time order across processes). Callers leave
	// it zero.
	Seq uint64 `json:"seq,omitempty"`
	// Time is when the call started (as fleetmux's MCP layer records it),
	// UTC with nanoseconds. store.Append fills in the current time when it is
	// zero.
	Time time.Time `json:"time"`
	// PID is the fleetmux process id.
	PID int `json:"pid"`
	// SessionID is a random id chosen once per fleetmux process (the MCP
	// SDK has no session id on stdio).
	SessionID string `json:"session_id"`
	// MCPSessionID is the MCP session the call came in on: the
	// Mcp-Session-Id of a streamable HTTP client of `fleetmux serve
	// --http`, one per connected agent. Empty on stdio and in records
	// written before fleetmux served HTTP (no schema change: an absent key
	// reads as empty, and older readers ignore it).
	MCPSessionID string `json:"mcp_session_id,omitempty"`
	// Client and ClientVersion come from the MCP client's implementation info.
	Client        string `json:"client,omitempty"`
	ClientVersion string `json:"client_version,omitempty"`
	// Host is the host alias the call ran on ("local" for this machine).
	Host string `json:"host"`
	// Tool is the tool name as called.
	Tool string `json:"tool"`
	// Args are the call's arguments, already summarised by mcp/redact.
	// store.Append replaces anything that is not valid JSON by a
	// digest so raw bytes never reach the file.
	Args json.RawMessage `json:"args,omitempty"`
	// Outcome is OutcomeOK, OutcomeError or OutcomeRefused.
	Outcome string `json:"outcome"`
	// ErrorType is the error class on failure (for example "ToolError").
	ErrorType string `json:"error_type,omitempty"`
	// Error is the error text on failure, at most store.MaxErrorBytes.
	Error string `json:"error,omitempty"`
	// Duration is how long the call took.
	Duration time.Duration `json:"duration_ns"`
	// Parent is the batch tool name when the call ran nested in a batch
	// ("run_command" on a job_end record).
	Parent string `json:"parent,omitempty"`
	// JID identifies a record that went through a Journal, so that it is
	// stored once however often its journal is replayed.
	JID string `json:"jid,omitempty"`
	// Job is the id of the job the call started (run_command with detach,
	// or one still running at --max-call-seconds; several ids are
	// comma-separated), or, on a job_end record, the job that ended.
	Job string `json:"job,omitempty"`
}
