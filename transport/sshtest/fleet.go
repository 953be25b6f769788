package sshtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh/knownhosts"
)

// A differing fleet: hosts that differ the way real ones do, in user,
// hostname shown in the prompt, login shell (bash, zsh, fish), prompt
// shape (one spans two rows) and userland (one has busybox ps and date
// first on PATH, for the pane's shell and for tmux's run-shell alike).
// All its hosts are accounts of one sshd; each has its own HOME and
// TMUX_TMPDIR, so its own tmux server.

// FleetMember is one host of a differing fleet.
type FleetMember struct {
	Alias   string // ssh_config alias
	User    string // login name (created with useradd)
	Shell   string // login shell, the shell of its tmux panes
	Home    string
	TmuxDir string // TMUX_TMPDIR
	Busybox bool   // busybox ps and date first on PATH
}

// Fleet is a differing fleet on one sshd.
type Fleet struct {
	Host    *Host
	Members []FleetMember
	env     *Env
}

// fleetKinds are the members of a differing fleet: alias suffix, login
// shell and the rc files that make its prompt.
var fleetKinds = []struct {
	name, shell string
	busybox     bool
	files       map[string]string
}{
	{name: "bash", shell: "bash", files: map[string]string{
		".bash_profile": "PS1='\\u@bashbox:\\w\\$ '\n",
	}},
	{name: "zsh", shell: "zsh", files: map[string]string{
		".zshrc": "PROMPT='%n@zedbox %~ %# '\n",
	}},
	{name: "fish", shell: "fish", files: map[string]string{
		".config/fish/config.fish": "set -g fish_greeting ''\nfunction fish_prompt; printf '%s@fishbox %s> ' $USER (prompt_pwd); end\n",
	}},
	{name: "multi", shell: "bash", files: map[string]string{
		".bash_profile": "PS1='┌─[\\u@multibox]─[\\w]\\n└─▶ '\n",
	}},
	{name: "tiny", shell: "bash", busybox: true, files: map[string]string{
		".bash_profile": "PATH=$HOME/bin:$PATH\nPS1='\\u@tiny\\$ '\n",
	}},
}

// StartDifferingFleet creates (or reuses) one account per kind of host,
// named "fmxfleet-<kind>", and starts one sshd that admits them with the
// Env's key; the aliases are prefix-<kind>. It needs root (useradd) and
// installs fish, zsh and busybox when missing. Every tmux server of the
// fleet is killed when the test ends.
func (e *Env) StartDifferingFleet(prefix string) *Fleet {
	t := e.t
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("sshtest: a differing fleet needs root to create its users")
	}
	InstallPackages(t, map[string]string{"fish": "fish", "zsh": "zsh", "busybox": "busybox"})
	// The accounts must reach their homes and keys: not under the
	// Env's private TempDir.
	root, err := os.MkdirTemp("", "fleetmux-fleet-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(root, 0o755)
	t.Cleanup(func() { os.RemoveAll(root) })
	pub, err := os.ReadFile(e.AuthorizedKeys)
	if err != nil {
		t.Fatal(err)
	}
	keys := filepath.Join(root, "keys")
	os.Mkdir(keys, 0o755)
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		t.Fatal(err)
	}
	f := &Fleet{env: e}
	var cfg []string
	for _, k := range fleetKinds {
		shell, err := exec.LookPath(k.shell)
		if err != nil {
			t.Fatal(err)
		}
		m := FleetMember{Alias: prefix + "-" + k.name, User: "fmxfleet-" + k.name, Shell: shell, Busybox: k.busybox}
		m.Home = filepath.Join(root, k.name)
		m.TmuxDir = filepath.Join(root, k.name+"-tmux")
		for name, text := range k.files {
			p := filepath.Join(m.Home, name)
			os.MkdirAll(filepath.Dir(p), 0o755)
			writeFile(t, p, []byte(text), 0o644)
		}
		path := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
		if k.busybox {
			bin := filepath.Join(m.Home, "bin")
			os.MkdirAll(bin, 0o755)
			for _, tool := range []string{"ps", "date"} {
				if err := os.Symlink(busybox, filepath.Join(bin, tool)); err != nil {
					t.Fatal(err)
				}
			}
			path = bin + ":" + path
		}
		os.MkdirAll(m.TmuxDir, 0o700)
		ensureUser(t, m.User, m.Home, shell)
		chownTree(t, m.Home, m.User)
		chownTree(t, m.TmuxDir, m.User)
		writeFile(t, filepath.Join(keys, m.User), pub, 0o644)
		cfg = append(cfg, "Match User "+m.User,
			"  AuthorizedKeysFile "+keys+"/%u",
			"  SetEnv HOME="+m.Home+" TMUX_TMPDIR="+m.TmuxDir+" PATH="+path)
		f.Members = append(f.Members, m)
	}
	f.Host = e.StartHost(prefix, HostOptions{Config: cfg})
	t.Cleanup(func() {
		for _, m := range f.Members {
			socks, _ := filepath.Glob(filepath.Join(m.TmuxDir, "tmux-*", "*"))
			for _, s := range socks {
				exec.Command("tmux", "-S", s, "kill-server").Run()
			}
		}
	})
	return f
}

// WriteSSHConfig writes an ssh_config with one alias per member, each
// logging in as its own user, and a known_hosts file for the sshd.
func (f *Fleet) WriteSSHConfig(path, knownHostsPath string) {
	f.env.t.Helper()
	WriteKnownHosts(f.env.t, knownHostsPath, KnownHostsOptions{}, f.Host)
	var b strings.Builder
	for _, m := range f.Members {
		fmt.Fprintf(&b, "Host %s\n  HostName 127.0.0.1\n  Port %d\n  User %s\n", m.Alias, f.Host.Port, m.User)
		fmt.Fprintf(&b, "  IdentityFile %s\n  IdentitiesOnly yes\n  IdentityAgent none\n", f.env.UserKeyFile)
		fmt.Fprintf(&b, "  UserKnownHostsFile %s\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  BatchMode yes\n\n", knownHostsPath)
	}
	writeFile(f.env.t, path, []byte(b.String()), 0o600)
}

// ensureUser creates user with home and shell, or resets both; the
// account gets "*" for a password (no password, not locked: sshd without
// PAM refuses locked accounts even for key logins).
func ensureUser(t testing.TB, name, home, shell string) {
	t.Helper()
	args := []string{"-d", home, "-s", shell, "-p", "*", name}
	cmd := "usermod"
	if _, err := user.Lookup(name); err != nil {
		cmd, args = "useradd", append([]string{"-M"}, args...)
	}
	if out, err := exec.Command(cmd, args...).CombinedOutput(); err != nil {
		t.Fatalf("sshtest: %s %s: %v %s", cmd, name, err, out)
	}
}

func chownTree(t testing.TB, dir, name string) {
	t.Helper()
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err == nil {
			os.Lchown(p, uid, gid)
		}
		return err
	})
}

// InstallPackages installs, with apt-get, the package of every command
// (command name -> package) missing from PATH: a missing dependency is an
// install step, not a skip.
func InstallPackages(t testing.TB, cmds map[string]string) {
	t.Helper()
	var missing []string
	for c, pkg := range cmds {
		if _, err := exec.LookPath(c); err != nil {
			missing = append(missing, pkg)
		}
	}
	if len(missing) == 0 {
		return
	}
	install := func() error {
		cmd := exec.Command("apt-get", append([]string{"install", "-y", "-qq"}, missing...)...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	}
	if err := install(); err != nil {
		exec.Command("apt-get", "update", "-qq").Run()
		if err := install(); err != nil {
			t.Fatalf("sshtest: install %v: %v", missing, err)
		}
	}
}

// ManyAliases are n inventory aliases on one account, each on its own
// port with its own HOME and TMUX_TMPDIR (so its own tmux server), for
// fan-out benchmarks over hundreds of hosts. sshd listens on at most 16
// sockets, so every 15 aliases share one sshd.
type ManyAliases struct {
	Hosts   []*Host  // the sshds
	Aliases []string // prefix001...
	Ports   []int    // the port of each alias
	Homes   []string // HOME of each alias, where its rc files live
	host    []*Host  // the sshd of each alias
	env     *Env
}

// aliasesPerSSHD is how many alias ports one sshd serves next to its
// own port (OpenSSH's MAX_LISTEN_SOCKS is 16).
const aliasesPerSSHD = 15

// StartManyAliases starts sshds listening on n alias ports, aliases
// prefix001..prefixNNN. profile, when not empty, is written as the
// .bash_profile of every alias's HOME with "{alias}" replaced by the
// alias (a prompt naming it, for example).
func (e *Env) StartManyAliases(prefix string, n int, profile string) *ManyAliases {
	t := e.t
	t.Helper()
	m := &ManyAliases{env: e}
	seen := map[int]bool{}
	for first := 0; first < n; first += aliasesPerSSHD {
		var cfg []string
		var ports []int
		for i := first; i < min(n, first+aliasesPerSSHD); i++ {
			alias := fmt.Sprintf("%s%03d", prefix, i+1)
			port := FreePort(t)
			for seen[port] {
				port = FreePort(t)
			}
			seen[port] = true
			home := filepath.Join(e.Dir, "alias-"+alias)
			tmuxDir := filepath.Join(home, ".tmux-tmp")
			if err := os.MkdirAll(tmuxDir, 0o700); err != nil {
				t.Fatal(err)
			}
			if profile != "" {
				writeFile(t, filepath.Join(home, ".bash_profile"), []byte(strings.ReplaceAll(profile, "{alias}", alias)), 0o644)
			}
			cfg = append(cfg, "Match LocalPort "+strconv.Itoa(port), "  SetEnv HOME="+home+" TMUX_TMPDIR="+tmuxDir)
			ports = append(ports, port)
			m.Aliases, m.Ports, m.Homes = append(m.Aliases, alias), append(m.Ports, port), append(m.Homes, home)
		}
		h := e.StartHost(fmt.Sprintf("%s-sshd%d", prefix, len(m.Hosts)+1), HostOptions{ExtraPorts: ports, Config: cfg})
		m.Hosts = append(m.Hosts, h)
		for range ports {
			m.host = append(m.host, h)
		}
	}
	t.Cleanup(func() {
		for _, home := range m.Homes {
			socks, _ := filepath.Glob(filepath.Join(home, ".tmux-tmp", "tmux-*", "*"))
			for _, s := range socks {
				exec.Command("tmux", "-S", s, "kill-server").Run()
			}
		}
	})
	return m
}

// WriteSSHConfig writes an ssh_config with one alias per port and a
// known_hosts file naming every port.
func (m *ManyAliases) WriteSSHConfig(path, knownHostsPath string) {
	t := m.env.t
	t.Helper()
	var kh, b strings.Builder
	for i, alias := range m.Aliases {
		for _, l := range m.host[i].KnownHostsLines(KnownHostsOptions{Name: knownhosts.Normalize(net.JoinHostPort("127.0.0.1", strconv.Itoa(m.Ports[i])))}) {
			kh.WriteString(l + "\n")
		}
		fmt.Fprintf(&b, "Host %s\n  HostName 127.0.0.1\n  Port %d\n  User %s\n", alias, m.Ports[i], m.env.User)
		fmt.Fprintf(&b, "  IdentityFile %s\n  IdentitiesOnly yes\n  IdentityAgent none\n", m.env.UserKeyFile)
		fmt.Fprintf(&b, "  UserKnownHostsFile %s\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  BatchMode yes\n\n", knownHostsPath)
	}
	writeFile(t, knownHostsPath, []byte(kh.String()), 0o600)
	writeFile(t, path, []byte(b.String()), 0o600)
}
