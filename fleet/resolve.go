package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// Resolved holds a host's connection settings exactly as `ssh -G alias`
// prints them: lower-case yes/no, numbers in decimal seconds, tokens and ~
// expanded where OpenSSH expands them before printing (HostName,
// IdentityAgent, UserKnownHostsFile) and left as written where it does not
// (IdentityFile, GlobalKnownHostsFile). A setting `ssh -G` does not print
// (no HostKeyAlias, IdentityAgent or ProxyJump) is "".
type Resolved struct {
	Alias                 string   // the destination as given (ssh -G's "host")
	HostName              string   // hostname
	Port                  string   // port
	User                  string   // user
	IdentityFile          []string // identityfile, one per line of ssh -G
	IdentitiesOnly        string   // identitiesonly: yes or no
	IdentityAgent         string   // identityagent
	ProxyJump             string   // proxyjump
	UserKnownHostsFile    []string // userknownhostsfile, split on spaces
	GlobalKnownHostsFile  []string // globalknownhostsfile, split on spaces
	StrictHostKeyChecking string   // stricthostkeychecking: true, false, ask or accept-new
	ConnectTimeout        string   // connecttimeout: seconds or none
	ServerAliveInterval   string   // serveraliveinterval: seconds
	ServerAliveCountMax   string   // serveralivecountmax
	HostKeyAlias          string   // hostkeyalias (lower case)

	HashKnownHosts string // hashknownhosts: yes or no (not part of Map)
	ProxyCommand   string // proxycommand, when set instead of ProxyJump (not part of Map)
}

// ResolvedKeys are the keys of Resolved.Map, in ssh_config order.
var ResolvedKeys = []string{
	"hostname", "port", "user", "identityfile", "identitiesonly", "identityagent",
	"proxyjump", "userknownhostsfile", "globalknownhostsfile", "stricthostkeychecking",
	"connecttimeout", "serveraliveinterval", "serveralivecountmax", "hostkeyalias",
}

// Map returns the fourteen resolved keywords in lower case with values as
// `ssh -G` writes them: identityfile, userknownhostsfile and
// globalknownhostsfile as []string, the others as string ("" when ssh -G
// prints nothing for the keyword).
func (r Resolved) Map() map[string]any {
	nonNil := func(s []string) []string {
		if s == nil {
			return []string{}
		}
		return append([]string(nil), s...)
	}
	return map[string]any{
		"hostname":              r.HostName,
		"port":                  r.Port,
		"user":                  r.User,
		"identityfile":          nonNil(r.IdentityFile),
		"identitiesonly":        r.IdentitiesOnly,
		"identityagent":         r.IdentityAgent,
		"proxyjump":             r.ProxyJump,
		"userknownhostsfile":    nonNil(r.UserKnownHostsFile),
		"globalknownhostsfile":  nonNil(r.GlobalKnownHostsFile),
		"stricthostkeychecking": r.StrictHostKeyChecking,
		"connecttimeout":        r.ConnectTimeout,
		"serveraliveinterval":   r.ServerAliveInterval,
		"serveralivecountmax":   r.ServerAliveCountMax,
		"hostkeyalias":          r.HostKeyAlias,
	}
}

// Resolve returns the settings of an inventory alias as `ssh -G alias`
// prints them. An alias outside the inventory gives ErrUnknownHost;
// an ssh_config OpenSSH refuses gives ErrConfig. Results are cached.
func (inv *Inventory) Resolve(ctx context.Context, alias string) (Resolved, error) {
	if !inv.aliasSet[alias] {
		return Resolved{}, fmt.Errorf("%w %q", ErrUnknownHost, alias)
	}
	inv.mu.Lock()
	r, ok := inv.cache[alias]
	inv.mu.Unlock()
	if ok {
		return r.clone(), nil
	}
	r, err := inv.resolve(ctx, sshGRequest{host: alias, port: -1})
	if err != nil {
		return Resolved{}, fmt.Errorf("fleet: resolve %q: %w", alias, err)
	}
	inv.mu.Lock()
	inv.cache[alias] = r
	inv.mu.Unlock()
	return r.clone(), nil
}

func (r Resolved) clone() Resolved {
	r.IdentityFile = append([]string(nil), r.IdentityFile...)
	r.UserKnownHostsFile = append([]string(nil), r.UserKnownHostsFile...)
	r.GlobalKnownHostsFile = append([]string(nil), r.GlobalKnownHostsFile...)
	return r
}

// sshGRequest is one `ssh -G` run: the destination and the command-line
// options a ProxyJump hop gets (ssh -l USER -p PORT -J JUMPS HOST).
type sshGRequest struct {
	host string
	user string // "" when not given
	port int    // -1 when not given
	jump string // "" when not given
}

// resolve asks `ssh -G` for one destination.
func (inv *Inventory) resolve(ctx context.Context, req sshGRequest) (Resolved, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	return inv.resolveSSH(ctx, req)
}

// sshConfigArgs returns the -F arguments that make ssh read the same files
// as the inventory, and a cleanup function.
func (inv *Inventory) sshConfigArgs() ([]string, func(), error) {
	noop := func() {}
	switch {
	case inv.opts.OnlyUserConfig:
		if _, err := os.Stat(inv.userPath); err != nil {
			return []string{"-F", "none"}, noop, nil
		}
		return []string{"-F", inv.userPath}, noop, nil
	case inv.useDefault:
		return nil, noop, nil
	}
	// A user file other than ~/.ssh/config plus the system file: ssh -F
	// reads one file, so hand it one that includes both, in order.
	quoted := func(p string) (string, error) {
		if strings.ContainsAny(p, "\t\n\r") {
			return "", fmt.Errorf("path %q cannot be written to an Include line", p)
		}
		var b strings.Builder
		for i := 0; i < len(p); i++ {
			c := p[i]
			switch c {
			case '*', '?', '[':
				b.WriteString(`\\`) // glob escape, itself escaped for argv_split
			case '\\':
				b.WriteString(`\\\\`)
				continue
			case '"', '\'', ' ':
				b.WriteByte('\\')
			}
			b.WriteByte(c)
		}
		return b.String(), nil
	}
	var text strings.Builder
	for _, p := range []string{inv.userPath, inv.systemPath} {
		q, err := quoted(p)
		if err != nil {
			return nil, noop, err
		}
		fmt.Fprintf(&text, "Include %s\n", q)
	}
	f, err := os.CreateTemp("", "fleetmux-ssh-config-*")
	if err != nil {
		return nil, noop, err
	}
	cleanup := func() { os.Remove(f.Name()) }
	if _, err := f.WriteString(text.String()); err != nil {
		f.Close()
		cleanup()
		return nil, noop, err
	}
	if err := f.Close(); err != nil {
		cleanup()
		return nil, noop, err
	}
	return []string{"-F", f.Name()}, cleanup, nil
}

// resolveSSH asks `ssh -G`.
func (inv *Inventory) resolveSSH(ctx context.Context, req sshGRequest) (Resolved, error) {
	cfgArgs, cleanup, err := inv.sshConfigArgs()
	if err != nil {
		return Resolved{}, err
	}
	defer cleanup()
	args := append([]string{"-G", "-T"}, cfgArgs...)
	if req.user != "" {
		args = append(args, "-l", req.user)
	}
	if req.port > 0 {
		args = append(args, "-p", strconv.Itoa(req.port))
	}
	if req.jump != "" {
		args = append(args, "-J", req.jump)
	}
	args = append(args, "--", req.host)
	cmd := exec.CommandContext(ctx, inv.sshPath, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var lines []string
		for _, l := range strings.Split(strings.ReplaceAll(stderr.String(), "\r", ""), "\n") {
			if l = strings.TrimSpace(l); l != "" {
				lines = append(lines, l)
			}
		}
		msg := strings.Join(lines, "; ")
		if ctx.Err() != nil {
			return Resolved{}, fmt.Errorf("ssh -G %s: %w", req.host, ctx.Err())
		}
		if msg == "" {
			return Resolved{}, fmt.Errorf("ssh -G %s: %w", req.host, err)
		}
		return Resolved{}, fmt.Errorf("%w: ssh -G %s: %s", ErrConfig, req.host, msg)
	}
	r, err := parseSSHG(stdout.String())
	if err != nil {
		return Resolved{}, err
	}
	// ssh -G joins the known-hosts files with spaces; put back together
	// the configured paths that contain one.
	if known := spacedPaths(inv.knownHosts, inv.env, r); known != nil {
		r.UserKnownHostsFile = rejoinSpaced(r.UserKnownHostsFile, known)
		r.GlobalKnownHostsFile = rejoinSpaced(r.GlobalKnownHostsFile, known)
	}
	return r, nil
}

// parseSSHG reads the keywords fleet uses from `ssh -G` output.
func parseSSHG(out string) (Resolved, error) {
	var r Resolved
	single := map[string]*string{
		"host": &r.Alias, "hostname": &r.HostName, "port": &r.Port, "user": &r.User,
		"identitiesonly": &r.IdentitiesOnly, "identityagent": &r.IdentityAgent,
		"proxyjump": &r.ProxyJump, "proxycommand": &r.ProxyCommand,
		"stricthostkeychecking": &r.StrictHostKeyChecking, "connecttimeout": &r.ConnectTimeout,
		"serveraliveinterval": &r.ServerAliveInterval, "serveralivecountmax": &r.ServerAliveCountMax,
		"hostkeyalias": &r.HostKeyAlias, "hashknownhosts": &r.HashKnownHosts,
	}
	// Known-hosts lists are printed on one line, joined with spaces.
	spaced := map[string]*[]string{
		"userknownhostsfile": &r.UserKnownHostsFile, "globalknownhostsfile": &r.GlobalKnownHostsFile,
	}
	seen := false
	for _, line := range strings.Split(out, "\n") {
		key, val, _ := strings.Cut(line, " ")
		switch {
		case key == "identityfile": // one line per file
			r.IdentityFile = append(r.IdentityFile, val)
		case single[key] != nil:
			*single[key] = val
			seen = seen || key == "host"
		case spaced[key] != nil:
			*spaced[key] = strings.Split(val, " ")
		}
	}
	if !seen || r.Port == "" {
		return Resolved{}, errors.New("unexpected `ssh -G` output")
	}
	return r, nil
}
