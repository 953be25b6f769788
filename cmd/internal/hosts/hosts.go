// Package hosts is `fleetmux hosts`: it lists the Host aliases of the
// user's ssh_config, which ones --hosts selects and how each resolves
// (ssh -G), and with --check connects to each and reports its state, tmux
// version and round-trip time.
package hosts

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/fleetmux/fleetmux/cmd/internal/cli"
	"github.com/fleetmux/fleetmux/fleet"
	"github.com/fleetmux/fleetmux/tmux"
	"github.com/fleetmux/fleetmux/transport"
)

const usage = `Usage: fleetmux hosts [--ssh-config FILE] [--hosts PATTERNS] [--json] [--check]

Lists the Host aliases of your ssh_config, shows which ones --hosts enables,
and how each resolves: the connection settings fleetmux uses are exactly what
"ssh -G ALIAS" prints, asked of your own OpenSSH client (fleet mode needs
it: install openssh-client).

Aliases come from the user file (--ssh-config, default ~/.ssh/config) and
then /etc/ssh/ssh_config, Includes followed, in file order. Host patterns
with wildcards or "!" are rules, not hosts, and are not listed. The name
"local" is reserved for this machine.

Flags:
  --ssh-config FILE   ssh_config to read instead of ~/.ssh/config; /etc/ssh/ssh_config
                      is still read after it. Env FLEETMUX_SSH_CONFIG.
  --hosts PATTERNS    comma-separated globs over aliases that fleet mode enables,
                      e.g. 'dev*,build-?,!dev-old'; "!pat" excludes and always
                      wins. Without it no remote host is enabled (all are listed,
                      none selected). Env FLEETMUX_HOSTS.
  --json              print a JSON array, one object per alias:
                      {"alias", "selected", "resolved": {hostname, port, user,
                      identityfile, identitiesonly, identityagent, proxyjump,
                      userknownhostsfile, globalknownhostsfile,
                      stricthostkeychecking, connecttimeout, serveraliveinterval,
                      serveralivecountmax, hostkeyalias}} with values written as
                      ssh -G writes them ("" when ssh -G prints nothing).
  --check             connect to each selected host (every listed host when
                      --hosts is not given) and report its state, tmux version
                      and round-trip time.

Exit status: 0 when every host resolved (and checked fine with --check),
1 otherwise, 2 for bad usage.
`

// hostsRow is one alias in the output.
type hostsRow struct {
	Alias    string         `json:"alias"`
	Selected bool           `json:"selected"`
	Resolved map[string]any `json:"resolved"`
	Error    string         `json:"error,omitempty"`
	Check    *hostsCheck    `json:"check,omitempty"`

	res fleet.Resolved
}

// hostsCheck is the outcome of --check for one host.
type hostsCheck struct {
	State       string  `json:"state"`
	TmuxVersion string  `json:"tmux_version,omitempty"`
	RTTMillis   float64 `json:"rtt_ms,omitempty"`
	Error       string  `json:"error,omitempty"`
}

// Run is `fleetmux hosts`.
func Run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fleetmux hosts", flag.ContinueOnError)
	sshConfig := fs.String("ssh-config", os.Getenv(fleet.EnvSSHConfig), "")
	patterns := fs.String("hosts", os.Getenv(fleet.EnvHosts), "")
	asJSON := fs.Bool("json", false, "")
	check := fs.Bool("check", false, "")
	if rc := cli.ParseFlags(fs, args, usage, stdout, stderr); rc >= 0 {
		return rc
	}
	sel, inv, err := cli.LoadInventory(*patterns, *sshConfig)
	if err != nil {
		fmt.Fprintf(stderr, "fleetmux hosts: %v\n", err)
		return cli.ExitStatus(err)
	}
	for _, w := range inv.Warnings() {
		fmt.Fprintf(stderr, "fleetmux hosts: warning: %s\n", w)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	aliases := inv.Aliases()
	rows := make([]*hostsRow, len(aliases))
	status := 0
	cli.ForEachLimited(len(aliases), 8, func(i int) {
		a := aliases[i]
		row := &hostsRow{Alias: a, Selected: sel.Match(a)}
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if r, err := inv.Resolve(rctx, a); err != nil {
			row.Error = err.Error()
		} else {
			row.res, row.Resolved = r, r.Map()
		}
		rows[i] = row
	})
	for _, r := range rows {
		if r.Error != "" {
			status = 1
		}
	}

	if *check {
		if runHostChecks(ctx, inv, rows, sel.Empty()) {
			status = 1
		}
	}

	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rows); err != nil {
			fmt.Fprintf(stderr, "fleetmux hosts: %v\n", err)
			return 1
		}
		return status
	}
	printHostsTable(stdout, inv, rows, sel, *check)
	return status
}

// runHostChecks fills row.Check for the selected hosts (all when
// selection is empty) and reports whether any check failed.
func runHostChecks(ctx context.Context, inv *fleet.Inventory, rows []*hostsRow, all bool) bool {
	var mu sync.Mutex
	failed := false
	cli.ForEachLimited(len(rows), 8, func(i int) {
		row := rows[i]
		if !row.Selected && !all {
			return
		}
		c := &hostsCheck{}
		row.Check = c
		fail := func(state string, err error) {
			c.State, c.Error = state, err.Error()
			mu.Lock()
			failed = true
			mu.Unlock()
		}
		if row.Error != "" {
			fail("unresolved", errors.New(row.Error))
			return
		}
		cfg, err := row.res.SSHConfigContext(ctx, inv)
		if err != nil {
			fail("unsupported", err)
			return
		}
		// Each hop and the host itself may use their connect timeout, plus
		// time for the tmux command.
		per := cfg.ConnectTimeout
		if per <= 0 {
			per = 10 * time.Second
		}
		cctx, cancel := context.WithTimeout(ctx, per*time.Duration(len(cfg.Jumps)+1)+10*time.Second)
		defer cancel()
		state, version, rtt, err := checkOneHost(cctx, row.Alias, cfg)
		if err != nil {
			if state == "" {
				state = "unreachable"
			}
			fail(state, err)
			return
		}
		c.State, c.TmuxVersion = state, version
		c.RTTMillis = float64(rtt.Microseconds()) / 1000
	})
	return failed
}

// checkOneHost backs `fleetmux hosts --check`: it connects to one host,
// runs `tmux -V` and reports the connection state ("connected",
// "unreachable", ...), the remote tmux version and the command's
// round-trip time.
func checkOneHost(ctx context.Context, alias string, cfg *transport.SSHConfig) (string, string, time.Duration, error) {
	r := transport.NewSSH(cfg, transport.SSHOptions{PerCommand: true})
	defer r.Close()
	t0 := time.Now()
	v, err := tmux.ProbeVersion(ctx, r, "")
	rtt := time.Since(t0)
	var exit *tmux.VersionError
	switch {
	case errors.As(err, &exit):
		return "connected", "", rtt, err
	case err != nil:
		return string(r.Status().State), "", 0, err
	}
	return "connected", v, rtt, nil
}

func printHostsTable(w io.Writer, inv *fleet.Inventory, rows []*hostsRow, sel fleet.Selection, checked bool) {
	if len(rows) == 0 {
		if len(inv.Files()) > 0 {
			fmt.Fprintf(w, "No Host aliases found in %s.\n", cli.SSHConfigsLookedAt(inv))
		} else {
			fmt.Fprintf(w, "No ssh_config found: neither %s nor %s exists; add Host entries to %s or pass --ssh-config FILE.\n", inv.UserConfigPath(), fleet.DefaultSystemConfig, inv.UserConfigPath())
		}
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	header := []string{"ALIAS", "SELECTED", "TARGET", "PROXYJUMP", "KEYS"}
	if checked {
		header = append(header, "STATE", "TMUX", "RTT")
	}
	hasErr := false
	for _, r := range rows {
		if r.Error != "" || r.Check != nil && r.Check.Error != "" {
			hasErr = true
		}
	}
	if hasErr {
		header = append(header, "ERROR")
	}
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	selected := 0
	for _, r := range rows {
		cols := []string{r.Alias, "no", "-", "-", "-"}
		if r.Selected {
			cols[1] = "yes"
			selected++
		}
		errText := r.Error
		if r.Error == "" {
			res := r.res
			cols[2] = fmt.Sprintf("%s@%s:%s", res.User, res.HostName, res.Port)
			switch {
			case res.ProxyJump != "":
				cols[3] = res.ProxyJump
			case res.ProxyCommand != "":
				cols[3] = "(ProxyCommand)"
			}
			cols[4] = strconv.Itoa(len(res.IdentityFile))
		}
		if checked {
			if c := r.Check; c != nil {
				rtt := "-"
				if c.Error == "" {
					rtt = fmt.Sprintf("%.1fms", c.RTTMillis)
				} else if errText == "" {
					errText = c.Error
				}
				cols = append(cols, orDash(c.State), orDash(c.TmuxVersion), rtt)
			} else {
				cols = append(cols, "-", "-", "-")
			}
		}
		if hasErr {
			cols = append(cols, cli.OneLine(errText))
		}
		fmt.Fprintln(tw, strings.Join(cols, "\t"))
	}
	tw.Flush()
	fmt.Fprintf(w, "\n%s from %s (resolved with ssh -G); ", cli.CountOf(len(rows), "host", "hosts"), cli.SSHConfigsLookedAt(inv))
	if sel.Empty() {
		fmt.Fprintln(w, "none selected: pass --hosts PATTERNS (or set FLEETMUX_HOSTS) to enable hosts.")
	} else {
		fmt.Fprintf(w, "%d selected by --hosts %q.\n", selected, sel.String())
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
