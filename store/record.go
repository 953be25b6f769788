package store

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fleetmux/fleetmux/fleet/vocab"
)

// Outcomes of a tool call, as stored in Record.Outcome.
const (
	OutcomeOK      = vocab.OutcomeOK
	OutcomeError   = vocab.OutcomeError
	OutcomeRefused = vocab.OutcomeRefused
)

// MaxNameBytes bounds the short text fields of a Record (host, tool, client,
// ...), which come from clients and could be arbitrarily long.
const MaxNameBytes = 256

// MaxErrorBytes bounds Record.Error; longer text is cut at a UTF-8 boundary
// and suffixed with TruncationSuffix.
const MaxErrorBytes = 2000

// Record is the audit record of the shared vocabulary
// (vocab.AuditRecord): what the file stores and `fleetmux audit --json`
// prints.
type Record = vocab.AuditRecord

// truncationSuffix marks a field Append cut to its limit.
const truncationSuffix = "...<truncated>"

// normalize returns r as Append stores it.
func normalize(r Record, now time.Time) Record {
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
