// Package fleet turns the user's ssh_config into a fleet of hosts: the
// inventory of Host aliases, the connection settings of each host resolved
// exactly as `ssh -G` prints them, the opt-in host selection (--hosts) and
// the per-host safety caps (--host-safety).
package fleet

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// LocalHost is the reserved host name of the machine fleetmux runs on. It
// never comes from ssh_config: a Host alias named "local" is left out of
// the inventory (see Inventory.Warnings).
const LocalHost = "local"

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
)

// ResolverMode selects how host settings are resolved.
type ResolverMode int

const (
	// ResolveAuto asks `ssh -G` when an OpenSSH client is installed (and
	// Home/LocalUser are not overridden), else resolves in Go.
	ResolveAuto ResolverMode = iota
	// ResolveSSH always runs `ssh -G`.
	ResolveSSH
	// ResolveGo always uses the built-in resolver.
	ResolveGo
)

// String names the mode as the --resolver flag spells it.
func (m ResolverMode) String() string {
	switch m {
	case ResolveSSH:
		return "ssh"
	case ResolveGo:
		return "go"
	default:
		return "auto"
	}
}

// ParseResolverMode parses "auto", "ssh" or "go".
func ParseResolverMode(s string) (ResolverMode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return ResolveAuto, nil
	case "ssh", "ssh-g", "ssh -g":
		return ResolveSSH, nil
	case "go", "pure-go", "builtin":
		return ResolveGo, nil
	}
	return ResolveAuto, fmt.Errorf("fleet: unknown resolver %q (want auto, ssh or go)", s)
}

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
	// Resolver picks `ssh -G` or the built-in resolver.
	Resolver ResolverMode
	// SSHPath is the ssh binary used for `ssh -G`; empty looks up "ssh" in
	// PATH.
	SSHPath string
	// Home and LocalUser replace the current user's passwd entry (home
	// directory for ~ and %d, user name for %u and the default User). Only
	// the built-in resolver can honour them, so ResolveAuto then uses it.
	Home      string
	LocalUser string
}

// Inventory is the set of Host aliases read from ssh_config, in file order,
// plus what is needed to resolve them.
type Inventory struct {
	opts       InventoryOptions
	userPath   string
	systemPath string
	files      []topFile
	readFiles  []string
	aliases    []string
	aliasSet   map[string]bool
	warnings   []string
	env        *goEnv
	sshPath    string // "" when the built-in resolver is used
	useDefault bool   // ssh -G can read the default files itself
	// khSpaces is set when a known-hosts path contains whitespace, which
	// ssh -G's one-line output cannot represent.
	khSpaces bool

	mu    sync.Mutex
	cache map[string]Resolved
}

// LoadInventory reads the user and system ssh_config files (with their
// Includes) and lists their Host aliases: literal patterns only (no
// wildcards, no negations), in file order, without duplicates.
func LoadInventory(opts InventoryOptions) (*Inventory, error) {
	env, err := currentEnv(opts)
	if err != nil {
		return nil, err
	}
	inv := &Inventory{opts: opts, env: env, aliasSet: map[string]bool{}, cache: map[string]Resolved{}}

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

	ld := &loader{home: env.home, uid: env.uid, lookupDir: env.lookupHome}
	// ssh -F reads its file without the permission check; a user file
	// read together with the system file is checked, as ~/.ssh/config is.
	uf, err := ld.loadFile(userPath, loadFlags{userConf: true, checkPerm: !opts.OnlyUserConfig}, 0)
	if err != nil {
		return nil, fmt.Errorf("fleet: %w: %w", ErrConfig, err)
	}
	if uf == nil && explicitUser {
		return nil, fmt.Errorf("fleet: ssh config %s: %w", userPath, fs.ErrNotExist)
	}
	inv.files = append(inv.files, topFile{file: uf, userConf: true})
	if !opts.OnlyUserConfig {
		sf, err := ld.loadFile(systemPath, loadFlags{}, 0)
		if err != nil {
			return nil, fmt.Errorf("fleet: %w: %w", ErrConfig, err)
		}
		inv.files = append(inv.files, topFile{file: sf})
	}
	for _, tf := range inv.files {
		inv.collect(tf.file, map[*cfgFile]bool{})
	}

	inv.useDefault = !explicitUser && opts.SystemConfig == "" && !opts.OnlyUserConfig
	overridden := opts.Home != "" || opts.LocalUser != ""
	switch opts.Resolver {
	case ResolveGo:
	case ResolveSSH:
		p, err := findSSH(opts.SSHPath)
		if err != nil {
			return nil, err
		}
		inv.sshPath = p
	default:
		if !overridden {
			if p, err := findSSH(opts.SSHPath); err == nil {
				inv.sshPath = p
			}
		}
	}
	return inv, nil
}

func findSSH(path string) (string, error) {
	if path == "" {
		path = "ssh"
	}
	p, err := exec.LookPath(path)
	if err != nil {
		return "", fmt.Errorf("fleet: no OpenSSH client for `ssh -G`: %w", err)
	}
	return p, nil
}

// collect adds the aliases of f and of its Includes.
func (inv *Inventory) collect(f *cfgFile, seen map[*cfgFile]bool) {
	if f == nil || seen[f] {
		return
	}
	seen[f] = true
	inv.readFiles = append(inv.readFiles, f.path)
	for _, ln := range f.lines {
		switch ln.keyword {
		case "host":
			if ln.argErr != nil {
				continue
			}
			for _, p := range ln.args {
				inv.addAlias(p, f.path, ln.num)
			}
		case "userknownhostsfile", "globalknownhostsfile":
			for _, a := range ln.args {
				if strings.ContainsAny(a, cfgWhitespace) {
					inv.khSpaces = true
				}
			}
		case "include":
			for _, inc := range ln.includes {
				for _, child := range inc.files {
					inv.collect(child, seen)
				}
			}
		}
	}
}

func (inv *Inventory) addAlias(p, file string, line int) {
	switch {
	case p == "", strings.HasPrefix(p, "!"), strings.ContainsAny(p, "*?"):
		return
	case inv.aliasSet[p]:
		return
	case p == LocalHost:
		inv.warnings = append(inv.warnings, fmt.Sprintf("%s line %d: Host %q is reserved for this machine and is not part of the fleet", file, line, p))
		return
	case !validHostname(p) || strings.Contains(p, "@") || strings.HasPrefix(p, "ssh://"):
		inv.warnings = append(inv.warnings, fmt.Sprintf("%s line %d: Host %q cannot be used as an ssh destination; skipped", file, line, p))
		return
	}
	inv.aliasSet[p] = true
	inv.aliases = append(inv.aliases, p)
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

// ResolverName says which resolver is in use: "ssh -G" or "go".
func (inv *Inventory) ResolverName() string {
	if inv.sshPath != "" {
		return "ssh -G"
	}
	return "go"
}

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

// currentEnv gathers the passwd entry, host name and environment.
func currentEnv(opts InventoryOptions) (*goEnv, error) {
	env := &goEnv{
		uid:    os.Getuid(),
		getenv: os.LookupEnv,
		lookupHome: func(name string) (string, error) {
			u, err := user.Lookup(name)
			if err != nil {
				return "", err
			}
			return u.HomeDir, nil
		},
		lookupHost: defaultLookupHost,
	}
	if u, err := user.Current(); err == nil {
		env.home, env.localUser = u.HomeDir, u.Username
		if uid, err := strconv.Atoi(u.Uid); err == nil {
			env.uid = uid
		}
	}
	if env.home == "" {
		env.home = os.Getenv("HOME")
	}
	if env.localUser == "" {
		env.localUser = os.Getenv("USER")
	}
	if opts.Home != "" {
		env.home = opts.Home
	}
	if opts.LocalUser != "" {
		env.localUser = opts.LocalUser
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
