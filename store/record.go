package store

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"
)

// Outcomes of a tool call, as stored in Record.Outcome.
const (
	OutcomeOK      = "ok"      // the call returned a normal result
	OutcomeError   = "error"   // the call failed (tool error or exception)
	OutcomeRefused = "refused" // the safety gate or host selection refused the call
)

// MaxNameBytes bounds the short text fields of a Record (host, tool, client,
// ...), which come from clients and could be arbitrarily long.
const MaxNameBytes = 256

// MaxErrorBytes bounds Record.Error; longer text is cut at a UTF-8 boundary
// and suffixed with TruncationSuffix.
const MaxErrorBytes = 2000

// Record is one audited tool call. The JSON form (snake_case keys) is what the
// file stores and what `fleetmux audit --json` prints.
type Record struct {
	// Seq is assigned by Append: unique in the file and increasing in commit
	// order (not necessarily in Time order across processes). Callers leave
	// it zero.
	Seq uint64 `json:"seq,omitempty"`
	// Time is when the call started (as fleetmux's MCP layer records it),
	// UTC with nanoseconds. Append fills in the current time when it is
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
	// Args are the call's arguments, already summarised by Redact or
	// RedactJSON. Append replaces anything that is not valid JSON by a
	// digest so raw bytes never reach the file.
	Args json.RawMessage `json:"args,omitempty"`
	// Outcome is OutcomeOK, OutcomeError or OutcomeRefused.
	Outcome string `json:"outcome"`
	// ErrorType is the error class on failure (for example "ToolError").
	ErrorType string `json:"error_type,omitempty"`
	// Error is the error text on failure, at most MaxErrorBytes.
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

// truncationSuffix marks a field Append cut to its limit.
const truncationSuffix = "...<truncated>"

// normalize returns the record as Append stores it.
func (r Record) normalize(now time.Time) Record {
	r.Seq = 0
	if r.Time.IsZero() {
		r.Time = now
	}
	r.Time = r.Time.UTC()
	for _, f := range []*string{&r.SessionID, &r.MCPSessionID, &r.Client, &r.ClientVersion, &r.Host, &r.Tool, &r.Outcome, &r.ErrorType, &r.Parent, &r.Job} {
		*f = truncateBytes(*f, MaxNameBytes)
	}
	if len(r.Error) > MaxErrorBytes {
		r.Error = truncateBytes(r.Error, MaxErrorBytes-len(truncationSuffix)) + truncationSuffix
	}
	if len(r.Args) > 0 && !json.Valid(r.Args) {
		sum := sha256.Sum256(r.Args)
		r.Args, _ = json.Marshal(map[string]any{"invalid_json": map[string]any{
			"len":           len(r.Args),
			"sha256_prefix": hex.EncodeToString(sum[:])[:12],
		}})
	}
	return r
}

// truncateBytes cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncateBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Query selects audit records. Zero fields do not filter.
type Query struct {
	Host    string    // exact host alias
	Tool    string    // exact tool name
	Outcome string    // exact outcome
	Session string    // exact SessionID (a process) or MCPSessionID (an HTTP client)
	Job     string    // records of this job (its start or its end)
	Since   time.Time // records with Time >= Since
	Until   time.Time // records with Time < Until
	// AfterSeq keeps only records with Seq > AfterSeq. With Since set a
	// little before the newest record seen, it lets a poller (`--follow`)
	// pick up records committed late by other processes without repeats.
	AfterSeq uint64
	// Limit keeps the newest Limit matches (still returned oldest first);
	// 0 returns all matches.
	Limit int
}

func (q Query) match(r *Record) bool {
	return (q.Host == "" || r.Host == q.Host) &&
		(q.Tool == "" || r.Tool == q.Tool) &&
		(q.Outcome == "" || r.Outcome == q.Outcome) &&
		(q.Session == "" || r.SessionID == q.Session || r.MCPSessionID == q.Session) &&
		(q.Job == "" || hasJob(r.Job, q.Job))
}

// hasJob reports whether the comma-separated list ids holds id.
func hasJob(ids, id string) bool {
	for len(ids) > 0 {
		one, rest, _ := strings.Cut(ids, ",")
		if one == id {
			return true
		}
		ids = rest
	}
	return false
}

// HostState is what fleetmux remembers about a host across restarts.
type HostState struct {
	// Host is the host alias (the key).
	Host string `json:"host"`
	// LastConnect is the last successful connection.
	LastConnect time.Time `json:"last_connect,omitzero"`
	// TmuxVersion is the tmux version seen on the last connection.
	TmuxVersion string `json:"tmux_version,omitempty"`
	// LastError and LastErrorTime describe the last failure. A failure is
	// current when LastErrorTime is after LastConnect.
	LastError     string    `json:"last_error,omitempty"`
	LastErrorTime time.Time `json:"last_error_time,omitzero"`
	// RTT is a recent round-trip time.
	RTT time.Duration `json:"rtt_ns,omitempty"`
	// State is the last known connection state (for example "connected",
	// "idle", "unreachable").
	State string `json:"state,omitempty"`
}

// merge overlays the non-zero fields of upd on s.
func (s HostState) merge(upd HostState) HostState {
	if !upd.LastConnect.IsZero() {
		s.LastConnect = upd.LastConnect.UTC()
	}
	if upd.TmuxVersion != "" {
		s.TmuxVersion = upd.TmuxVersion
	}
	if upd.LastError != "" {
		s.LastError = truncateBytes(upd.LastError, MaxErrorBytes)
	}
	if !upd.LastErrorTime.IsZero() {
		s.LastErrorTime = upd.LastErrorTime.UTC()
	}
	if upd.RTT != 0 {
		s.RTT = upd.RTT
	}
	if upd.State != "" {
		s.State = upd.State
	}
	s.Host = upd.Host
	return s
}
