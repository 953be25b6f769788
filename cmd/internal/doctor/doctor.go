// Package doctor is `fleetmux doctor`: it checks what fleetmux needs (the
// tmux binary and server, the state file, ssh and the selected hosts, the
// MCP client configs under $HOME) and prints one line per check with the
// fix for each problem. It changes nothing.
package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/fleetmux/fleetmux/cmd/internal/cli"
	"github.com/fleetmux/fleetmux/fleet"
	"github.com/fleetmux/fleetmux/mcp"
	"github.com/fleetmux/fleetmux/store"
	"github.com/fleetmux/fleetmux/tmux"
	"github.com/fleetmux/fleetmux/transport"
)

const doctorUsage = `Usage: fleetmux doctor [--hosts PATTERNS] [--ssh-config FILE] [--state FILE] [--json]

Checks what fleetmux needs and prints one line per check: OK, WARN (works,
but probably not as you meant) or FAIL (does not work), each problem with
the fix. It changes nothing.

  tmux          the tmux binary (LIBTMUX_TMUX_BIN, else tmux on PATH), its
                version, and the server on LIBTMUX_SOCKET / LIBTMUX_SOCKET_PATH
  state file    path, mode 0600, size, readable (opened read-only, briefly)
  ssh           the OpenSSH client, ssh -G, and the Host aliases of ssh_config
  host ALIAS    each host --hosts selects: resolve (ssh -G), TCP connect,
                host key verified against known_hosts (never recorded),
                authentication, remote tmux version, connect and round-trip
                time
  client ...    the MCP client configs found under $HOME (Claude Code
                ~/.claude.json with its per-project entries, Claude Desktop,
                Cursor ~/.cursor/mcp.json, Gemini CLI ~/.gemini/settings.json,
                Codex ~/.codex/config.toml) and in the current directory: is
                fleetmux registered, with an absolute path that exists, valid
                arguments, and the environment it needs (variables such as
                LIBTMUX_SOCKET and TMUX_TMPDIR set in your shell but not in
                the entry's env are reported: clients start servers with a
                minimal environment). An entry with a URL is fleetmux's when
                its name says so, it sends the token of fleetmux's token
                file, or the URL, on this machine, answers as fleetmux; doctor
                then sends it an MCP initialize: is the daemon running, does
                it take the token

Flags:
  --hosts PATTERNS   hosts to check, as for serving (env FLEETMUX_HOSTS);
                     without it no host is contacted
  --ssh-config FILE  ssh_config to read instead of ~/.ssh/config (env
                     FLEETMUX_SSH_CONFIG)
  --state FILE       state file (env FLEETMUX_STATE; default
                     $XDG_STATE_HOME/fleetmux/state.db, else
                     ~/.local/state/fleetmux/state.db)
  --json             print {"checks": [{"check", "status", "detail", "fix"}],
                     "ok", "warnings", "failures"} instead of lines

Exit status: 0 when no check failed (warnings allowed), 1 when one did, 2 on
bad usage.
`

// Check outcomes.
const (
	StatusOK   = "OK"
	StatusWarn = "WARN"
	StatusFail = "FAIL"
)

// Check is one line of `fleetmux doctor`.
type Check struct {
	Check  string `json:"check"`
	Status string `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// Options are what doctor takes from the fleetmux command: its version
// and how it parses its own command line, so that what doctor accepts in a
// client's entry is what fleetmux accepts.
type Options struct {
	// Version is fleetmux's version (sent in the MCP initialize of HTTP
	// entries).
	Version string
	// Subcommand reports whether name is a fleetmux subcommand.
	Subcommand func(name string) bool
	// ServeArgs parses an entry's args as serving would, with the entry's
	// env giving the flags' defaults: whether they select hosts (fleet
	// mode), the first argument left after the flags, and the parse
	// error.
	ServeArgs func(args []string, env map[string]string) (fleetMode bool, extra string, err error)
	// TokenPath is the token file of a fleetmux serve --http started with
	// the state file state ("" for the default).
	TokenPath func(state string) (string, error)
}

// doctorEnv is what the checks read from the process: the environment,
// the home and working directories. Tests point HOME at a temporary
// directory.
type doctorEnv struct {
	getenv func(string) string
	home   string
	cwd    string
	state  string // --state: the token file of fleetmux serve --http is next to it
	opts   Options
}

// doctorCmdTimeout bounds tmux -V, ssh -V and ssh -G.
const doctorCmdTimeout = 10 * time.Second

// LockTimeout bounds the wait for the state file's lock; tests
// shorten it.
var LockTimeout = 2 * time.Second

// Run is `fleetmux doctor`.
func Run(args []string, stdout, stderr io.Writer, o Options) int {
	fs := flag.NewFlagSet("fleetmux doctor", flag.ContinueOnError)
	hosts := fs.String("hosts", os.Getenv(fleet.EnvHosts), "")
	sshConfig := fs.String("ssh-config", os.Getenv(fleet.EnvSSHConfig), "")
	state := fs.String("state", os.Getenv("FLEETMUX_STATE"), "")
	asJSON := fs.Bool("json", false, "")
	if rc := cli.ParseFlags(fs, args, doctorUsage, stdout, stderr); rc >= 0 {
		return rc
	}
	if _, err := fleet.ParseSelection(*hosts); err != nil {
		fmt.Fprintf(stderr, "fleetmux doctor: --hosts: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	env := doctorEnv{getenv: os.Getenv, state: *state, opts: o}
	env.home, _ = os.UserHomeDir()
	env.cwd, _ = os.Getwd()

	var checks []Check
	checks = append(checks, checkTmux(ctx, env)...)
	checks = append(checks, checkStateFile(ctx, *state))
	checks = append(checks, checkSSHAndHosts(ctx, *hosts, *sshConfig)...)
	checks = append(checks, checkClients(env)...)

	failures, warnings := 0, 0
	for _, c := range checks {
		switch c.Status {
		case StatusFail:
			failures++
		case StatusWarn:
			warnings++
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		_ = enc.Encode(struct {
			Checks   []Check `json:"checks"`
			OK       bool    `json:"ok"`
			Warnings int     `json:"warnings"`
			Failures int     `json:"failures"`
		}{checks, failures == 0, warnings, failures})
	} else {
		for _, c := range checks {
			line := fmt.Sprintf("%-4s  %s: %s", c.Status, c.Check, cli.OneLine(c.Detail))
			if c.Fix != "" {
				line += " -> fix: " + cli.OneLine(c.Fix)
			}
			fmt.Fprintln(stdout, line)
		}
		fmt.Fprintf(stdout, "\n%s: %d failed, %s.\n", cli.CountOf(len(checks), "check", "checks"), failures, cli.CountOf(warnings, "warning", "warnings"))
	}
	if failures > 0 {
		return 1
	}
	return 0
}

// runQuiet runs a command with a deadline and returns its stdout and the
// first line of its stderr.
func runQuiet(ctx context.Context, name string, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(ctx, doctorCmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Stdin = nil
	err := cmd.Run()
	first, _, _ := strings.Cut(strings.TrimSpace(errb.String()), "\n")
	return out.String(), first, err
}

// checkTmux finds the tmux binary as serving does (LIBTMUX_TMUX_BIN, else
// tmux on PATH), asks its version and whether a server runs on the socket
// fleetmux would use.
func checkTmux(ctx context.Context, env doctorEnv) []Check {
	c := Check{Check: "tmux"}
	bin, fromEnv := env.getenv("LIBTMUX_TMUX_BIN"), true
	if bin == "" {
		bin, fromEnv = "tmux", false
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		c.Status = StatusFail
		if fromEnv {
			c.Detail = fmt.Sprintf("LIBTMUX_TMUX_BIN=%s: not an executable file", bin)
			c.Fix = "point LIBTMUX_TMUX_BIN at the tmux binary (command -v tmux prints it), or unset it"
		} else {
			c.Detail = "tmux not found on PATH"
			c.Fix = "install tmux 3.2a or newer (e.g. apt-get install tmux), or set LIBTMUX_TMUX_BIN to its path"
		}
		return []Check{c}
	}
	vctx, cancel := context.WithTimeout(ctx, doctorCmdTimeout)
	version, err := tmux.ProbeVersion(vctx, transport.NewLocal(), path)
	cancel()
	if err != nil {
		c.Status, c.Detail = StatusFail, fmt.Sprintf("%s -V failed: %s", path, probeFailure(err))
		c.Fix = "reinstall tmux, or point LIBTMUX_TMUX_BIN at a working tmux"
		return []Check{c}
	}
	c.Status, c.Detail = StatusOK, fmt.Sprintf("%s, tmux %s", path, version)
	if fromEnv {
		c.Detail += " (LIBTMUX_TMUX_BIN)"
	}
	if !tmux.VersionAtLeast(version, tmux.MinVersion) {
		c.Status = StatusWarn
		c.Detail += ": older than 3.2a, which fleetmux needs"
		c.Fix = "install tmux 3.2a or newer"
	}
	// Which path local tool calls take, and why.
	_, how := tmux.NativeStatus(ctx, path, env.getenv)
	c.Detail += "; local calls: " + how
	checks := []Check{c}

	// The server the tools reach by default.
	srv := Check{Check: "tmux server", Status: StatusOK}
	sock := mcp.TmuxServer(nil, nil, true, env.getenv) // the tools' own socket rule
	where := "the default socket"
	switch {
	case sock.SocketPath != "": // tmux takes -S over -L
		where = "socket " + sock.SocketPath + " (LIBTMUX_SOCKET_PATH)"
	case sock.SocketName != "":
		where = "socket name " + sock.SocketName + " (LIBTMUX_SOCKET)"
	}
	out, errLine, err := runQuiet(ctx, path, append(sock.Prefix()[1:], "list-sessions", "-F", "#{session_name}")...)
	if err != nil {
		srv.Detail = where + ": no server running (" + errLine + "); create_session starts one"
	} else {
		n := len(strings.Fields(out))
		srv.Detail = where + ": " + cli.CountOf(n, "session", "sessions")
	}
	return append(checks, srv)
}

// checkStateFile inspects the state file without changing it: it is
// opened read-only, which takes bbolt's shared lock for one short
// transaction.
func checkStateFile(ctx context.Context, flagPath string) Check {
	c := Check{Check: "state file"}
	path := flagPath
	if path == "" {
		p, err := store.DefaultPath()
		if err != nil {
			c.Status, c.Detail = StatusFail, err.Error()
			c.Fix = "set HOME, or pass --state FILE (FLEETMUX_STATE)"
			return c
		}
		path = p
	}
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		c.Status, c.Detail = StatusOK, path+": not created yet; the first audited tool call creates it (mode 0600)"
		if dirOK, why := creatableDir(filepath.Dir(path)); !dirOK {
			c.Status, c.Detail = StatusFail, path+": cannot be created: "+why
			c.Fix = "make " + filepath.Dir(path) + " writable for you, or pass --state FILE"
		}
		return c
	case err != nil:
		c.Status, c.Detail, c.Fix = StatusFail, err.Error(), "pass --state FILE with a path you can write"
		return c
	}
	detail := fmt.Sprintf("%s, mode %04o, %s", path, fi.Mode().Perm(), byteSize(fi.Size()))
	st, err := store.OpenContext(ctx, path, store.Options{ReadOnly: true, LockTimeout: LockTimeout})
	switch {
	case err == nil:
		c.Status = StatusOK
		if seq, err := st.LastSeq(ctx); err == nil {
			detail += ", " + cli.CountOf(int(seq), "audit record", "audit records") + " written"
		}
	case errors.Is(err, store.ErrLocked):
		c.Status, detail = StatusWarn, fmt.Sprintf("%s: locked by another process for over %s", detail, LockTimeout)
		c.Fix = "a fleetmux holds the lock unusually long; look for a hung fleetmux process (pgrep -a fleetmux)"
	case errors.Is(err, store.ErrOldSchema):
		c.Status, detail = StatusOK, detail+": older schema, migrated by the next fleetmux that writes to it"
	case errors.Is(err, store.ErrNewerSchema):
		c.Status, detail = StatusFail, detail+": written by a newer fleetmux"
		c.Fix = "install the newer fleetmux, or pass --state FILE to use another file"
	case errors.Is(err, store.ErrCorrupt), errors.Is(err, store.ErrForeign):
		c.Status, detail = StatusFail, detail+": "+err.Error()
		c.Fix = "move it aside (mv " + path + " " + path + ".bad); fleetmux creates a new one"
	case errors.Is(err, store.ErrUnsafePath):
		c.Status, detail = StatusFail, err.Error()
		c.Fix = "give --state the path of a regular file you own"
	default:
		c.Status, detail = StatusFail, detail+": "+err.Error()
		c.Fix = "check the file's permissions, or pass --state FILE"
	}
	if c.Status == StatusOK && fi.Mode().Perm() != 0o600 {
		c.Status = StatusWarn
		detail += ": readable by others"
		c.Fix = "chmod 600 " + path + " (fleetmux also restricts it the next time it writes)"
	}
	c.Detail = detail
	return c
}

// probeFailure says why `tmux -V` failed the way exec's error and the
// first line of stderr would: "exit status 1 unknown option".
func probeFailure(err error) string {
	var ve *tmux.VersionError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	first, _, _ := strings.Cut(strings.TrimSpace(ve.Stderr), "\n")
	return fmt.Sprintf("exit status %d %s", ve.ExitCode, first)
}

// creatableDir reports whether a file could be created in dir: the
// nearest existing ancestor is a writable directory.
func creatableDir(dir string) (bool, string) {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err == nil {
			if !fi.IsDir() {
				return false, d + " is not a directory"
			}
			if syscall.Access(d, 0x2|0x1) != nil { // W_OK|X_OK
				return false, d + " is not writable"
			}
			return true, ""
		}
		if d == filepath.Dir(d) {
			return false, "no existing parent directory"
		}
	}
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// checkSSHAndHosts checks the OpenSSH client, ssh -G and the hosts the
// selection picks.
func checkSSHAndHosts(ctx context.Context, patterns, sshConfig string) []Check {
	fleetMode := strings.Trim(patterns, " ,") != ""
	c := Check{Check: "ssh"}
	path, err := exec.LookPath("ssh")
	if err != nil {
		c.Detail = "ssh not found on PATH"
		c.Fix = "install the OpenSSH client (e.g. apt-get install openssh-client)"
		c.Status = StatusWarn
		if fleetMode {
			c.Status = StatusFail
		} else {
			c.Detail += "; local mode does not need it, fleet mode (--hosts) does"
		}
		return []Check{c}
	}
	_, version, _ := runQuiet(ctx, path, "-V") // ssh -V writes to stderr
	version, _, _ = strings.Cut(version, ",")
	probe := []string{"-G", "-T"}
	if sshConfig != "" {
		probe = append(probe, "-F", sshConfig)
	}
	if _, errLine, err := runQuiet(ctx, path, append(probe, "--", "fleetmux-doctor.invalid")...); err != nil {
		c.Status, c.Detail = StatusFail, fmt.Sprintf("%s (%s): ssh -G failed: %s", path, version, orText(errLine, err.Error()))
		c.Fix = "fix the ssh_config error ssh -G reports (ssh -G HOST shows it)"
		return []Check{c}
	}
	sel, inv, err := cli.LoadInventory(patterns, sshConfig)
	if err != nil {
		c.Status, c.Detail = StatusFail, fmt.Sprintf("%s (%s): %v", path, version, err)
		c.Fix = "fix the ssh_config named above, or pass --ssh-config FILE"
		return []Check{c}
	}
	c.Status = StatusOK
	files := cli.SSHConfigsLookedAt(inv)
	c.Detail = fmt.Sprintf("%s (%s), ssh -G works; %s in %s", path, version, cli.CountOf(len(inv.Aliases()), "Host alias", "Host aliases"), files)
	if w := inv.Warnings(); len(w) > 0 {
		c.Status = StatusWarn
		c.Detail += "; " + strings.Join(w, "; ")
		c.Fix = "fix the ssh_config lines named above"
	}
	checks := []Check{c}
	if !fleetMode {
		return append(checks, Check{Check: "hosts", Status: StatusOK, Detail: "none selected (local mode); pass --hosts PATTERNS to check hosts"})
	}
	selected := inv.Select(sel)
	if len(selected) == 0 {
		return append(checks, Check{Check: "hosts", Status: StatusFail,
			Detail: fmt.Sprintf("--hosts %q matches no Host alias of %s", patterns, files),
			Fix:    "list the aliases with fleetmux hosts, and fix --hosts (FLEETMUX_HOSTS) or add Host entries"})
	}
	rows := make([]Check, len(selected))
	cli.ForEachLimited(len(selected), 8, func(i int) {
		rows[i] = checkHost(ctx, inv, selected[i])
	})
	return append(checks, rows...)
}

func orText(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// checkHost takes one host through every stage a tool call needs:
// resolve (ssh -G), TCP connect, host key, authentication, remote tmux.
// The host key is checked against known_hosts and never recorded: an
// accept-new host whose key is unknown is reported, not trusted.
func checkHost(ctx context.Context, inv *fleet.Inventory, alias string) Check {
	c := Check{Check: "host " + alias}
	fail := func(stage string, err error, fix string) Check {
		c.Status, c.Detail, c.Fix = StatusFail, stage+": "+err.Error(), fix
		return c
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := inv.Resolve(rctx, alias)
	if err != nil {
		return fail("resolve", err, "fix the host's ssh_config entry (ssh -G "+alias+" shows what OpenSSH makes of it)")
	}
	cfg, err := res.SSHConfigContext(rctx, inv)
	if err != nil {
		return fail("resolve", err, "fleetmux supports ProxyJump, not ProxyCommand; change the host's ssh_config entry")
	}
	acceptNew := false
	for _, h := range append([]*transport.SSHConfig{cfg}, cfg.Jumps...) {
		if h.StrictHostKeyChecking == "accept-new" {
			acceptNew = true
			h.StrictHostKeyChecking = "yes" // check, never record
		}
	}
	per := cfg.ConnectTimeout
	if per <= 0 {
		per = 10 * time.Second
	}
	target := fmt.Sprintf("%s@%s:%d", cfg.User, cfg.HostName, cfg.Port)
	var parts []string

	// TCP: the host itself, or the first ProxyJump hop.
	first := cfg
	if len(cfg.Jumps) > 0 {
		first = cfg.Jumps[0]
	}
	addr := net.JoinHostPort(first.HostName, strconv.Itoa(first.Port))
	dctx, dcancel := context.WithTimeout(ctx, per)
	conn, err := (&net.Dialer{}).DialContext(dctx, "tcp", addr)
	dcancel()
	if err != nil {
		fix := "check that the host is up and sshd listens on " + addr + " (HostName and Port in ssh_config)"
		if first != cfg {
			fix = "check the ProxyJump host " + first.Alias + " (" + addr + ")"
		}
		return fail("tcp "+addr, err, fix)
	}
	conn.Close()
	parts = append(parts, "resolved "+target)
	if len(cfg.Jumps) > 0 {
		parts = append(parts, "via "+cli.CountOf(len(cfg.Jumps), "ProxyJump hop", "ProxyJump hops"))
	}
	parts = append(parts, "tcp ok")

	r := transport.NewSSH(cfg, transport.SSHOptions{PerCommand: true})
	defer r.Close()
	cctx, ccancel := context.WithTimeout(ctx, per*time.Duration(len(cfg.Jumps)+1)+10*time.Second)
	defer ccancel()
	t0 := time.Now()
	if err := r.Connect(cctx); err != nil {
		switch {
		case errors.Is(err, transport.ErrHostKeyUnknown) && acceptNew:
			c.Status, c.Fix = StatusWarn, "connect once with ssh "+alias+" to record the key, or add it with ssh-keyscan after checking its fingerprint"
			c.Detail = strings.Join(append(parts, "host key not in known_hosts yet: StrictHostKeyChecking accept-new records it on the first connection"), ", ")
			return c
		case errors.Is(err, transport.ErrHostKeyUnknown):
			return fail("host key", err, "check the fingerprint above with the host's owner, then record the key: ssh -o StrictHostKeyChecking=accept-new "+alias+" true")
		case errors.Is(err, transport.ErrHostKeyChanged):
			return fail("host key", err, "the host presents a different key than known_hosts holds: find out why before removing the old entry (ssh-keygen -R)")
		case errors.Is(err, transport.ErrAuth):
			return fail("auth", err, "make sure the key of IdentityFile or your ssh-agent (SSH_AUTH_SOCK) is authorized on the host: ssh "+alias+" true must work without a password")
		}
		return fail("ssh", err, "ssh -v "+alias+" shows where the connection fails")
	}
	connect := time.Since(t0)
	parts = append(parts, "host key verified", "auth ok")
	version, err := tmux.ProbeVersion(cctx, r, "")
	if errors.Is(err, transport.ErrNotFound) {
		return fail("remote tmux", errors.New(strings.Join(parts, ", ")+", but tmux is not on the host's PATH"), "install tmux 3.2a or newer on "+alias)
	} else if err != nil {
		return fail("remote tmux", err, "ssh "+alias+" tmux -V shows the problem")
	}
	rtt, err := r.Ping(cctx)
	parts = append(parts, "tmux "+version, fmt.Sprintf("connect %s", connect.Round(time.Millisecond)))
	if err == nil {
		parts = append(parts, fmt.Sprintf("rtt %.1fms", float64(rtt.Microseconds())/1000))
	}
	c.Status, c.Detail = StatusOK, strings.Join(parts, ", ")
	if !tmux.VersionAtLeast(version, tmux.MinVersion) {
		c.Status, c.Fix = StatusWarn, "install tmux 3.2a or newer on "+alias
		c.Detail += ": tmux older than 3.2a"
	}
	return c
}
