package mcp

import (
	"context"
	"encoding/json"
)

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
}

// HostLister is implemented by fleet backends that can describe their
// hosts (persisted state included).
type HostLister interface {
	HostStatuses(ctx context.Context, serverTier Tier) []HostStatus
}

func init() {
	spec.Models["HostStatus"] = []modelField{
		{Field: "host", Type: "string", Required: true},
		{Field: "hostname", Type: "string", Nullable: true},
		{Field: "port", Type: "integer", Nullable: true},
		{Field: "user", Type: "string", Nullable: true},
		{Field: "safety", Type: "string", Required: true},
		{Field: "state", Type: "string", Required: true},
		{Field: "tmux_version", Type: "string", Nullable: true},
		{Field: "last_error", Type: "string", Nullable: true},
		{Field: "last_error_at", Type: "string", Nullable: true},
		{Field: "last_connect", Type: "string", Nullable: true},
		{Field: "rtt_ms", Type: "number", Nullable: true},
	}
	register("list_hosts", listHosts)
}

// fleetOnlyTools are the tools that exist only in fleet mode.
func fleetOnlyTools() []*toolSpec {
	return []*toolSpec{{
		Name:           "list_hosts",
		Title:          "List Fleet Hosts",
		Tier:           "readonly",
		Tags:           []string{"readonly"},
		Annotations:    map[string]bool{"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false},
		Preset:         "ANNOTATIONS_RO",
		Returns:        "array<HostStatus>",
		Wrapped:        true,
		NoHostParam:    true,
		InputSchemaRaw: json.RawMessage(`{"additionalProperties": false, "properties": {}, "type": "object"}`),
	}}
}

func listHosts(ctx context.Context, c *Call) (any, error) {
	hl, ok := c.s.opts.Backend.(HostLister)
	if !ok {
		return []HostStatus{}, nil
	}
	return hl.HostStatuses(ctx, c.s.opts.Settings.Safety), nil
}
