package tools

import (
	"context"
)

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
