// Package fleet turns the user's ssh_config into a fleet of hosts: the
// inventory of Host aliases, the connection settings of each host resolved
// exactly as `ssh -G` prints them, the opt-in host selection (--hosts) and
// the per-host safety caps (--host-safety).
package fleet

import (
	"errors"
	"fmt"
	"github.com/fleetmux/fleetmux/fleet/vocab"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"sync"

	"github.com/fleetmux/fleetmux/fleet/sshconfig"
)

// LocalHost is the reserved host name of the machine fleetmux runs on. It
// never comes from ssh_config: a Host alias named "local" is left out of
// the inventory (see Inventory.Warnings).
const LocalHost = vocab.LocalHost

// Environment variables read by the command line for the inventory.
const (
	EnvSSHConfig = "FLEETMUX_SSH_CONFIG" // same as --ssh-config
	EnvHosts     = "FLEETMUX_HOSTS"      // same as --hosts
)

// Default configuration paths, as OpenSSH reads them.
const (
	DefaultSystemConfig = "/etc/ssh/ssh_config"
	defaultUserConfig   = ".ssh/config" // under the home directory
)

// Sentinel errors callers branch on.
var (
	// ErrUnknownHost reports a host that is neither "local" nor a Host
	// alias of the inventory.
	ErrUnknownHost = errors.New("fleet: unknown host")
	// ErrNotSelected reports an inventory host outside the --hosts
	// selection.
	ErrNotSelected = errors.New("fleet: host not selected")
	// ErrConfig reports an ssh_config that OpenSSH would refuse (bad line,
	// bad permissions, include loop, ...).
	ErrConfig = errors.New("invalid ssh_config")
	// ErrUnsupported reports a setting the SSH transport cannot honour,
	// such as ProxyCommand.
	ErrUnsupported = errors.New("unsupported ssh setting")
	// ErrNoSSH reports that the OpenSSH client is missing: fleet mode
	// resolves every host with `ssh -G`.
	ErrNoSSH = errors.New("fleet mode needs the OpenSSH client")
	// ErrBadSelection reports a malformed --hosts value.
	ErrBadSelection = errors.New("fleet: bad host selection")
	// ErrBadHostSafety reports a malformed --host-safety value.
	ErrBadHostSafety = errors.New("fleet: bad host safety cap")
)

// InventoryOptions says where the inventory comes from.
type InventoryOptions struct {
	// UserConfig is the user's ssh_config (--ssh-config /
	// FLEETMUX_SSH_CONFIG). Empty means ~/.ssh/config, which may be
	// missing (empty inventory); a file named here must exist. A leading
	// "~/" is expanded.
	UserConfig string
	// SystemConfig is read after UserConfig; empty means
	// /etc/ssh/ssh_config. A missing system file is ignored.
	SystemConfig string
	// OnlyUserConfig reads UserConfig alone, like `ssh -F UserConfig`.
	OnlyUserConfig bool
	// SSHPath is the OpenSSH client run as `ssh -G` to resolve hosts;
	// empty looks up "ssh" in PATH. Fleet mode needs it: LoadInventory
	// fails with ErrNoSSH without it.
	SSHPath string

	// home replaces the passwd home directory when finding ~/.ssh/config
	// and relative Includes (tests only; ssh -G still uses its own).
	home string
}

// Inventory is the set of Host aliases read from ssh_config, in file order,
// plus what is needed to resolve them.
type Inventory struct {
	opts       InventoryOptions
	userPath   string
	systemPath string
	readFiles  []string
	aliases    []string
	aliasSet   map[string]bool
	warnings   []string
	env        *localEnv
	sshPath    string // the ssh binary
	useDefault bool   // ssh -G can read the default files itself
	// knownHosts are the known-hosts paths the configuration names (and
	// ssh's defaults), as written: ssh -G prints them on one line joined
	// with spaces, so paths containing one must be put back together.
	knownHosts []string

	mu    sync.Mutex
	cache map[string]Resolved
}

// LoadInventory reads the user and system ssh_config files (with their
// Includes) and lists their Host aliases: literal patterns only (no
// wildcards, no negations), in file order, without duplicates.
func LoadInventory(opts InventoryOptions) (*Inventory, error) {
	sshPath, err := findSSH(opts.SSHPath)
	if err != nil {
		return nil, err
	}
	env, err := currentEnv(opts)
	if err != nil {
		return nil, err
	}
	inv := &Inventory{opts: opts, env: env, sshPath: sshPath, aliasSet: map[string]bool{}, cache: map[string]Resolved{}}

	explicitUser := opts.UserConfig != ""
	userPath := opts.UserConfig
	if !explicitUser {
		userPath = filepath.Join(env.home, defaultUserConfig)
	} else if strings.HasPrefix(userPath, "~/") || userPath == "~" {
		userPath = filepath.Join(env.home, strings.TrimPrefix(userPath, "~"))
	}
	if abs, err := filepath.Abs(userPath); err == nil {
		userPath = abs
	}
	inv.userPath = userPath
	systemPath := opts.SystemConfig
	if systemPath == "" {
		systemPath = DefaultSystemConfig
	}
	inv.systemPath = systemPath

	// ssh -F reads its file without the permission check; a user file
	// read together with the system file is checked, as ~/.ssh/config is.
	sources := []sshconfig.Source{{Path: userPath, User: true, CheckPerm: !opts.OnlyUserConfig, Required: explicitUser}}
	if !opts.OnlyUserConfig {
		sources = append(sources, sshconfig.Source{Path: systemPath})
	}
	cfg, err := sshconfig.Load(sources, sshconfig.Options{Home: env.home, UID: env.uid, LookupHome: env.lookupHome})
	if err != nil {
		if explicitUser && errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("fleet: %w", err)
		}
		return nil, fmt.Errorf("fleet: %w: %w", ErrConfig, err)
	}
	inv.readFiles = cfg.Files
	inv.warnings = append(inv.warnings, cfg.Warnings...)
	for _, a := range cfg.Aliases {
		inv.addAlias(a)
	}
	inv.knownHosts = append(cfg.KnownHostsFiles, "~/.ssh/known_hosts", "~/.ssh/known_hosts2")

	inv.useDefault = !explicitUser && opts.SystemConfig == "" && !opts.OnlyUserConfig && opts.home == ""
	return inv, nil
}

// findSSH locates the OpenSSH client fleet mode resolves hosts with.
func findSSH(path string) (string, error) {
	if path == "" {
		p, err := exec.LookPath("ssh")
		if err != nil {
			return "", fmt.Errorf("fleet: %w: ssh not found on PATH (install openssh-client)", ErrNoSSH)
		}
		return p, nil
	}
	p, err := exec.LookPath(path)
	if err != nil {
		return "", fmt.Errorf("fleet: %w: %w", ErrNoSSH, err)
	}
	return p, nil
}

func (inv *Inventory) addAlias(a sshconfig.Alias) {
	switch p := a.Name; {
	case p == LocalHost:
		inv.warnings = append(inv.warnings, fmt.Sprintf("%s line %d: Host %q is reserved for this machine and is not part of the fleet", a.File, a.Line, p))
	case !validHostname(p) || strings.Contains(p, "@") || strings.HasPrefix(p, "ssh://"):
		inv.warnings = append(inv.warnings, fmt.Sprintf("%s line %d: Host %q cannot be used as an ssh destination; skipped", a.File, a.Line, p))
	default:
		inv.aliasSet[p] = true
		inv.aliases = append(inv.aliases, p)
	}
}

// validHostname is the check Debian's OpenSSH 9.2 (and upstream 9.6+)
// applies to the destination given on the command line.
func validHostname(s string) bool {
	if strings.HasPrefix(s, "-") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if strings.IndexByte("'`\"$\\;&<>|(){},", c) >= 0 || c == ' ' || c >= '\t' && c <= '\r' || c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

// Aliases returns the Host aliases in file order.
func (inv *Inventory) Aliases() []string {
	return append([]string(nil), inv.aliases...)
}

// Has reports whether alias is an inventory host.
func (inv *Inventory) Has(alias string) bool { return inv.aliasSet[alias] }

// Warnings lists Host patterns that were left out of the inventory and why.
func (inv *Inventory) Warnings() []string { return append([]string(nil), inv.warnings...) }

// Files lists the configuration files that were read, Includes included.
func (inv *Inventory) Files() []string { return append([]string(nil), inv.readFiles...) }

// UserConfigPath is the user configuration file in use (it may not exist).
func (inv *Inventory) UserConfigPath() string { return inv.userPath }

// Select returns the inventory aliases that sel selects, in inventory
// order. LocalHost is never among them.
func (inv *Inventory) Select(sel Selection) []string {
	var out []string
	for _, a := range inv.aliases {
		if sel.Match(a) {
			out = append(out, a)
		}
	}
	return out
}

// Check reports whether a remote host may be used: ErrUnknownHost when
// the inventory has no such alias, ErrNotSelected when sel leaves it out.
// LocalHost is not an inventory host; callers handle it first.
func (inv *Inventory) Check(sel Selection, alias string) error {
	if !inv.aliasSet[alias] {
		return fmt.Errorf("%w %q: no Host alias of that name in %s", ErrUnknownHost, alias, strings.Join(inv.configNames(), " or "))
	}
	if !sel.Match(alias) {
		return fmt.Errorf("%w: %q is in ssh_config but not enabled by --hosts %q", ErrNotSelected, alias, sel.String())
	}
	return nil
}

func (inv *Inventory) configNames() []string {
	names := []string{inv.userPath}
	if !inv.opts.OnlyUserConfig {
		names = append(names, inv.systemPath)
	}
	return names
}

// currentEnv gathers the passwd entry, host name and environment that
// the IdentityFile expansions read.
func currentEnv(opts InventoryOptions) (*localEnv, error) {
	env := &localEnv{
		uid:    os.Getuid(),
		getenv: os.LookupEnv,
		lookupHome: func(name string) (string, error) {
			u, err := user.Lookup(name)
			if err != nil {
				return "", err
			}
			return u.HomeDir, nil
		},
	}
	if u, err := user.Current(); err == nil {
		env.home, env.localUser = u.HomeDir, u.Username
	}
	if env.home == "" {
		env.home = os.Getenv("HOME")
	}
	if env.localUser == "" {
		env.localUser = os.Getenv("USER")
	}
	if opts.home != "" {
		env.home = opts.home
	}
	if env.home == "" || env.localUser == "" {
		return nil, errors.New("fleet: cannot determine the current user's name and home directory")
	}
	h, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("fleet: host name: %w", err)
	}
	env.thisHost = h
	return env, nil
}
