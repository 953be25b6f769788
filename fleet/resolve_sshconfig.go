package fleet

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fleetmux/fleetmux/transport"
)

// maxJumpDepth bounds ProxyJump chains (a loop would never end in ssh).
const maxJumpDepth = 16

// hopResolveTimeout bounds the resolution of all ProxyJump hops when
// SSHConfig is called without a context.
const hopResolveTimeout = 30 * time.Second

// SSHConfig converts r into the SSH transport's settings, resolving each
// ProxyJump hop the way ssh does (a hop naming an alias gets that alias's
// settings; "-l user -p port" from the hop spec win over them). It uses a
// background context bounded to 30 s; see SSHConfigContext.
func (r Resolved) SSHConfig(inv *Inventory) (*transport.SSHConfig, error) {
	ctx, cancel := context.WithTimeout(context.Background(), hopResolveTimeout)
	defer cancel()
	return r.SSHConfigContext(ctx, inv)
}

// SSHConfigContext is SSHConfig with a caller-supplied context for the
// resolution of ProxyJump hops.
func (r Resolved) SSHConfigContext(ctx context.Context, inv *Inventory) (*transport.SSHConfig, error) {
	cfg, err := inv.sshConfig(ctx, r, map[string]bool{}, 0)
	if err != nil {
		return nil, fmt.Errorf("fleet: %s: %w", r.Alias, err)
	}
	return cfg, nil
}

func (inv *Inventory) sshConfig(ctx context.Context, r Resolved, visiting map[string]bool, depth int) (*transport.SSHConfig, error) {
	if r.ProxyCommand != "" {
		return nil, fmt.Errorf("%w: ProxyCommand %q (use ProxyJump)", ErrUnsupported, r.ProxyCommand)
	}
	port, err := strconv.Atoi(r.Port)
	if err != nil || port <= 0 || port > 65535 {
		return nil, fmt.Errorf("bad port %q", r.Port)
	}
	cfg := &transport.SSHConfig{
		Alias:          r.Alias,
		HostName:       r.HostName,
		Port:           port,
		User:           r.User,
		IdentitiesOnly: r.IdentitiesOnly == "yes",
		HashKnownHosts: r.HashKnownHosts == "yes",
		HostKeyAlias:   r.HostKeyAlias,
	}
	toks := clientTokens(inv.env, r)
	for _, id := range r.IdentityFile {
		p, err := tildeExpand(id, inv.env.home, inv.env.lookupHome)
		if err != nil {
			return nil, fmt.Errorf("IdentityFile %q: %w", id, err)
		}
		p, err = percentDollarExpand(p, toks, true, inv.env.getenv)
		if err != nil {
			return nil, fmt.Errorf("IdentityFile %q: %w", id, err)
		}
		cfg.IdentityFiles = append(cfg.IdentityFiles, p)
	}
	cfg.IdentityAgent = agentSetting(r.IdentityAgent, inv.env.getenv)
	if !isNoneList(r.UserKnownHostsFile) {
		cfg.UserKnownHostsFiles = append([]string(nil), r.UserKnownHostsFile...)
	}
	if !isNoneList(r.GlobalKnownHostsFile) {
		for _, g := range r.GlobalKnownHostsFile {
			p, err := tildeExpand(g, inv.env.home, inv.env.lookupHome)
			if err != nil {
				return nil, fmt.Errorf("GlobalKnownHostsFile %q: %w", g, err)
			}
			cfg.GlobalKnownHostsFiles = append(cfg.GlobalKnownHostsFiles, p)
		}
	}
	switch r.StrictHostKeyChecking {
	case "true", "yes":
		cfg.StrictHostKeyChecking = "yes"
	case "false", "no", "off":
		cfg.StrictHostKeyChecking = "no"
	case "ask", "accept-new":
		cfg.StrictHostKeyChecking = r.StrictHostKeyChecking
	default:
		return nil, fmt.Errorf("bad StrictHostKeyChecking %q", r.StrictHostKeyChecking)
	}
	if cfg.ConnectTimeout, err = seconds(r.ConnectTimeout, true); err != nil {
		return nil, fmt.Errorf("ConnectTimeout: %w", err)
	}
	if cfg.ServerAliveInterval, err = seconds(r.ServerAliveInterval, false); err != nil {
		return nil, fmt.Errorf("ServerAliveInterval: %w", err)
	}
	if cfg.ServerAliveCountMax, err = strconv.Atoi(r.ServerAliveCountMax); err != nil {
		return nil, fmt.Errorf("bad ServerAliveCountMax %q", r.ServerAliveCountMax)
	}
	if r.ProxyJump == "" {
		return cfg, nil
	}
	hop, err := inv.resolveHop(ctx, r.ProxyJump, visiting, depth)
	if err != nil {
		return nil, err
	}
	cfg.Jumps = append(append([]*transport.SSHConfig(nil), hop.Jumps...), hop)
	return cfg, nil
}

// resolveHop resolves the last hop of a ProxyJump value the way ssh's
// implicit ProxyCommand does: `ssh -l USER -p PORT -J EARLIER HOST`.
func (inv *Inventory) resolveHop(ctx context.Context, jump string, visiting map[string]bool, depth int) (*transport.SSHConfig, error) {
	if depth >= maxJumpDepth {
		return nil, fmt.Errorf("ProxyJump chain deeper than %d hops", maxJumpDepth)
	}
	extra, last := "", jump
	if i := strings.LastIndexByte(jump, ','); i >= 0 {
		extra, last = jump[:i], jump[i+1:]
	}
	h, err := parseHop(last)
	if err != nil {
		return nil, err
	}
	req := sshGRequest{host: h.host, user: h.user, port: h.port, jump: extra}
	key := fmt.Sprintf("%q %q %d %q", req.host, req.user, req.port, req.jump)
	if visiting[key] {
		return nil, fmt.Errorf("ProxyJump loop via %s", last)
	}
	visiting[key] = true
	defer delete(visiting, key)
	hr, err := inv.resolve(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("ProxyJump hop %q: %w", last, err)
	}
	cfg, err := inv.sshConfig(ctx, hr, visiting, depth+1)
	if err != nil {
		return nil, fmt.Errorf("ProxyJump hop %q: %w", last, err)
	}
	return cfg, nil
}

// agentSetting maps a resolved IdentityAgent to the transport's form, the
// way ssh applies it: "" and "SSH_AUTH_SOCK" use $SSH_AUTH_SOCK, "none"
// disables the agent, "$VAR" reads VAR (unset: no agent), anything else is
// a socket path.
func agentSetting(v string, getenv func(string) (string, bool)) string {
	switch {
	case v == "" || v == "SSH_AUTH_SOCK" || v == "none":
		return v
	case strings.HasPrefix(v, "$") && !strings.HasPrefix(v, "${"):
		p, ok := getenv(v[1:])
		if !ok || p == "" {
			return "none"
		}
		return p
	}
	return v
}

func isNoneList(v []string) bool {
	return len(v) == 0 || len(v) == 1 && strings.EqualFold(v[0], "none")
}

// seconds parses a decimal number of seconds as printed by ssh -G; "none"
// is 0 when allowed.
func seconds(v string, noneOK bool) (time.Duration, error) {
	if noneOK && v == "none" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad value %q", v)
	}
	return time.Duration(n) * time.Second, nil
}
