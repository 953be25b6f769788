package tools

import (
	"context"
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
	// Wait is how waits on the host wait: "watch" (a watcher reports
	// output), "poll" (the host cannot run one; WaitNote says why), or
	// null before the first wait there.
	Wait     *string `json:"wait"`
	WaitNote *string `json:"wait_note"`
}

// HostLister is implemented by fleet backends that can describe their
// hosts (persisted state included).
type HostLister interface {
	HostStatuses(ctx context.Context, serverTier Tier) []HostStatus
}

func listHosts(ctx context.Context, c *Call, _ noArgs) (any, error) {
	hl, ok := c.env.Backend.(HostLister)
	if !ok {
		return []HostStatus{}, nil
	}
	hosts := hl.HostStatuses(ctx, c.env.Settings.Safety)
	for i := range hosts {
		if mode, why := c.env.Watch.Mode(hosts[i].Host); mode != "" {
			hosts[i].Wait = &mode
			if why != "" {
				hosts[i].WaitNote = &why
			}
		}
	}
	return hosts, nil
}
