// Package sshtest starts real OpenSSH sshd instances on 127.0.0.1 for tests.
//
// Each Env has one generated user key pair and one authorized_keys file;
// each Host is an sshd on its own high port with its own generated host keys
// (ed25519, ecdsa, rsa) and its own TMUX_TMPDIR, so tmux state never leaks
// between hosts or into the developer's own tmux server. sshd runs as the
// current user (root in our containers and CI) with PAM and StrictModes off.
//
// When /usr/sbin/sshd is missing the harness installs openssh-server with
// apt-get: a missing dependency is an install step, not a skip.
//
// The package does not import transport (so both internal and external
// tests of transport can use it); it writes files that transport and fleet
// read: keys, known_hosts, ssh_config.
package sshtest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/fleetmux/fleetmux/tmux/tmuxtest"
	"github.com/fleetmux/fleetmux/transport/nettest"
)

// SSHDPath is where Debian's openssh-server puts sshd.
const SSHDPath = "/usr/sbin/sshd"

var installOnce sync.Once
var installErr error

// SSHD returns the path of sshd, installing openssh-server with apt-get
// (after apt-get update if the first attempt fails) when it is missing. It
// also creates /run/sshd, the privilege separation directory.
func SSHD(t testing.TB) string {
	t.Helper()
	if _, err := os.Stat(SSHDPath); err != nil && testing.Short() {
		t.Skipf("sshtest: %s is missing; with -short the tests that need sshd are skipped (the README's test command installs it)", SSHDPath)
	}
	installOnce.Do(func() {
		if _, err := os.Stat(SSHDPath); err != nil {
			installErr = install()
		}
		if installErr == nil {
			installErr = os.MkdirAll("/run/sshd", 0o755)
		}
	})
	if installErr != nil {
		t.Fatalf("sshtest: %v", installErr)
	}
	return SSHDPath
}

func install() error {
	run := func(args ...string) error {
		cmd := exec.Command("apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("apt-get %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := run("install", "-y", "openssh-server"); err != nil {
		if err := run("update"); err != nil {
			return err
		}
		if err := run("install", "-y", "openssh-server"); err != nil {
			return err
		}
	}
	if _, err := os.Stat(SSHDPath); err != nil {
		return fmt.Errorf("openssh-server installed but %s is missing: %v", SSHDPath, err)
	}
	return nil
}

// Env is a set of test hosts sharing one user identity.
type Env struct {
	t              testing.TB
	Dir            string     // root of all generated files
	User           string     // login name (the current user)
	UserKeyFile    string     // unencrypted ed25519 private key, mode 0600; .pub next to it
	UserKey        ssh.Signer // the same key
	AuthorizedKeys string     // authorized_keys used by every host of the Env

	mu    sync.Mutex
	hosts []*Host
}

// New generates a user key pair and an authorized_keys file in a temporary
// directory. It does not start any sshd.
func New(t testing.TB) *Env {
	t.Helper()
	SSHD(t)
	u, err := user.Current()
	if err != nil {
		t.Fatalf("sshtest: %v", err)
	}
	e := &Env{t: t, Dir: t.TempDir(), User: u.Username}
	e.AuthorizedKeys = filepath.Join(e.Dir, "authorized_keys")
	e.UserKeyFile, e.UserKey = e.NewUserKey("id_ed25519", "", true)
	return e
}

// NewUserKey writes a new ed25519 key pair as Dir/name and Dir/name.pub,
// encrypted with passphrase when it is not empty, and adds it to
// authorized_keys when authorize is true.
func (e *Env) NewUserKey(name, passphrase string, authorize bool) (string, ssh.Signer) {
	e.t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		e.t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		e.t.Fatal(err)
	}
	var block *pem.Block
	if passphrase == "" {
		block, err = ssh.MarshalPrivateKey(priv, "sshtest "+name)
	} else {
		block, err = ssh.MarshalPrivateKeyWithPassphrase(priv, "sshtest "+name, []byte(passphrase))
	}
	if err != nil {
		e.t.Fatal(err)
	}
	path := filepath.Join(e.Dir, name)
	writeFile(e.t, path, pem.EncodeToMemory(block), 0o600)
	writeFile(e.t, path+".pub", ssh.MarshalAuthorizedKey(signer.PublicKey()), 0o644)
	if authorize {
		e.Authorize(signer.PublicKey())
	}
	return path, signer
}

// Authorize appends key to authorized_keys. sshd reads the file on every
// authentication, so running hosts pick it up at once.
func (e *Env) Authorize(key ssh.PublicKey) {
	e.t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	f, err := os.OpenFile(e.AuthorizedKeys, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		e.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(ssh.MarshalAuthorizedKey(key)); err != nil {
		e.t.Fatal(err)
	}
}

// HostOptions tunes one sshd.
type HostOptions struct {
	// MaxSessions is sshd's MaxSessions; 0 keeps sshd's default (10).
	MaxSessions int
	// SlowRC, when positive, installs an rc file (~/.bashrc of the host's
	// HOME, also named by BASH_ENV) that sleeps this long and appends one
	// line to Host.RCCounter each time the remote login shell starts (once
	// per `ssh host cmd`).
	SlowRC time.Duration
	// HostCA, when set, signs every host key into a host certificate
	// (principals 127.0.0.1 and the host name) that sshd presents.
	HostCA ssh.Signer
	// Config holds extra sshd_config lines.
	Config []string
	// ExtraPorts are more 127.0.0.1 ports the same sshd listens on (for
	// many aliases on one sshd; `Match LocalPort` in Config tells them
	// apart). The caller picks them (FreePort).
	ExtraPorts []int
	// Tmux is the tmux binary the host's sessions find as "tmux" (a path
	// or a name on this machine's PATH); "" means tmuxtest.Bin(), the
	// tmux under test (FLEETMUX_TEST_TMUX, else tmux on PATH). Anything
	// but plain "tmux" is linked as Dir/bin/tmux and that directory is put
	// first on the sessions' PATH, so a test fleet can mix tmux versions.
	Tmux string
}

// Host is one running (or stopped) sshd.
type Host struct {
	Name       string // alias used in ssh_config and known_hosts helpers
	Addr       string // 127.0.0.1:Port
	Port       int
	Dir        string // per-host files
	TmuxTmpDir string // TMUX_TMPDIR set for every session of this host
	Home       string // HOME set for every session: an empty dir, so the real user's dotfiles never run
	RCCounter  string // file the slow rc appends to ("" without SlowRC)
	Tmux       string // the tmux the host runs: "tmux" (sshd's PATH) or an absolute path
	// HostKeys are the public host keys: ed25519, ecdsa-sha2-nistp256, ssh-rsa.
	HostKeys []ssh.PublicKey

	env        *Env
	config     string
	extraPorts []int
	log        *syncBuffer

	mu      sync.Mutex
	cmd     *exec.Cmd
	waitErr chan error
}

var (
	rsaOnce sync.Once
	rsaKey  *rsa.PrivateKey
	rsaErr  error
)

// hostKeys generates ed25519 and ecdsa keys per host. RSA generation is
// slow under -race, so one RSA key is shared by every host of the process.
func hostKeys() ([]any, error) {
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	rsaOnce.Do(func() { rsaKey, rsaErr = rsa.GenerateKey(rand.Reader, 2048) })
	if rsaErr != nil {
		return nil, rsaErr
	}
	return []any{ed, ec, rsaKey}, nil
}

// StartHost starts an sshd for the Env on a free 127.0.0.1 port and stops it
// (and every process it started) when the test ends.
func (e *Env) StartHost(name string, opts HostOptions) *Host {
	e.t.Helper()
	h := &Host{Name: name, env: e, log: &syncBuffer{}, extraPorts: opts.ExtraPorts}
	h.Dir = filepath.Join(e.Dir, "host-"+name)
	h.TmuxTmpDir = filepath.Join(h.Dir, "tmux")
	h.Home = filepath.Join(h.Dir, "home")
	for _, d := range []string{h.Dir, h.TmuxTmpDir, h.Home} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			e.t.Fatal(err)
		}
	}
	keys, err := hostKeys()
	if err != nil {
		e.t.Fatal(err)
	}
	var cfg strings.Builder
	for i, k := range keys {
		block, err := ssh.MarshalPrivateKey(k, "")
		if err != nil {
			e.t.Fatal(err)
		}
		path := filepath.Join(h.Dir, fmt.Sprintf("ssh_host_%d_key", i))
		writeFile(e.t, path, pem.EncodeToMemory(block), 0o600)
		signer, err := ssh.NewSignerFromKey(k)
		if err != nil {
			e.t.Fatal(err)
		}
		h.HostKeys = append(h.HostKeys, signer.PublicKey())
		fmt.Fprintf(&cfg, "HostKey %s\n", path)
		if opts.HostCA != nil {
			cert := &ssh.Certificate{
				Key:             signer.PublicKey(),
				Serial:          uint64(i + 1),
				CertType:        ssh.HostCert,
				KeyId:           name,
				ValidPrincipals: []string{"127.0.0.1", name},
				ValidBefore:     ssh.CertTimeInfinity,
			}
			if err := cert.SignCert(rand.Reader, opts.HostCA); err != nil {
				e.t.Fatal(err)
			}
			writeFile(e.t, path+"-cert.pub", ssh.MarshalAuthorizedKey(cert), 0o644)
			fmt.Fprintf(&cfg, "HostCertificate %s\n", path+"-cert.pub")
		}
	}
	setenv := "TMUX_TMPDIR=" + h.TmuxTmpDir + " HOME=" + h.Home
	if path := h.linkTmux(opts.Tmux); path != "" {
		setenv += " PATH=" + path
	}
	if opts.SlowRC > 0 {
		h.RCCounter = filepath.Join(h.Dir, "rc-count")
		// Debian's bash, started by sshd for `ssh host cmd`, reads ~/.bashrc
		// and then ignores BASH_ENV; other builds read BASH_ENV. Provide
		// both, so the rc runs exactly once per remote shell either way.
		rc := filepath.Join(h.Home, ".bashrc")
		// unset: bash scripts started by the session must not count (or pay) again.
		script := fmt.Sprintf("unset BASH_ENV\nsleep %.3f\necho rc >> %s\n", opts.SlowRC.Seconds(), h.RCCounter)
		writeFile(e.t, rc, []byte(script), 0o644)
		writeFile(e.t, h.RCCounter, nil, 0o644)
		setenv += " BASH_ENV=" + rc
	}
	fmt.Fprintf(&cfg, `ListenAddress 127.0.0.1
PidFile none
UsePAM no
StrictModes no
AuthorizedKeysFile %s
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin yes
AllowTcpForwarding yes
UseDNS no
PrintMotd no
PrintLastLog no
MaxStartups 100:30:200
LogLevel VERBOSE
SetEnv %s
`, e.AuthorizedKeys, setenv)
	if opts.MaxSessions > 0 {
		fmt.Fprintf(&cfg, "MaxSessions %d\n", opts.MaxSessions)
	}
	for _, l := range opts.Config {
		cfg.WriteString(l + "\n")
	}
	h.config = filepath.Join(h.Dir, "sshd_config")
	writeFile(e.t, h.config, []byte(cfg.String()), 0o644)

	var lastErr error
	for range 5 { // a freed port can be taken again before sshd binds it
		h.Port = FreePort(e.t)
		h.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(h.Port))
		if lastErr = h.start(); lastErr == nil {
			break
		}
	}
	if lastErr != nil {
		e.t.Fatalf("sshtest: start sshd %s: %v\n%s", name, lastErr, h.log.String())
	}
	e.mu.Lock()
	e.hosts = append(e.hosts, h)
	e.mu.Unlock()
	e.t.Cleanup(func() {
		if e.t.Failed() {
			e.t.Logf("sshd %s log:\n%s", h.Name, h.log.String())
		}
		h.Stop()
		h.killTmux()
	})
	return h
}

func (h *Host) start() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cmd != nil {
		return nil
	}
	args := []string{"-D", "-e", "-f", h.config, "-p", strconv.Itoa(h.Port)}
	for _, p := range h.extraPorts {
		args = append(args, "-p", strconv.Itoa(p))
	}
	cmd := exec.Command(SSHDPath, args...)
	cmd.Stdout = h.log
	cmd.Stderr = h.log
	// If the test binary dies without cleanup (timeout panic), take sshd
	// along; its connection children end when their clients' sockets close.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	waitErr := make(chan error, 1)
	go func() { waitErr <- cmd.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := probe(h.Addr); err == nil {
			break
		}
		select {
		case err := <-waitErr:
			return fmt.Errorf("sshd exited: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-waitErr
			return errors.New("sshd did not answer within 10s")
		}
	}
	h.cmd, h.waitErr = cmd, waitErr
	return nil
}

// probe reports whether an SSH server answers on addr with its banner.
func probe(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	buf := make([]byte, 4)
	if _, err := c.Read(buf); err != nil {
		return err
	}
	if string(buf) != "SSH-" {
		return fmt.Errorf("unexpected banner %q", buf)
	}
	return nil
}

// Stop kills sshd and every process it started (per-connection sshd
// children, remote shells and the commands they run), so that clients see
// their connections drop. tmux servers, which daemonize, keep running until
// the test ends. Stop is idempotent.
func (h *Host) Stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cmd == nil {
		return
	}
	pid := h.cmd.Process.Pid
	// sshd's connection children call setsid(), so a process group kill
	// misses them; walk /proc instead. Stop the listener first so that no
	// new child appears, then kill the tree collected just before.
	tree := Descendants(pid)
	syscall.Kill(pid, syscall.SIGSTOP)
	tree = append(tree, Descendants(pid)...)
	h.cmd.Process.Kill()
	for _, p := range tree {
		syscall.Kill(p, syscall.SIGKILL)
	}
	<-h.waitErr
	h.cmd, h.waitErr = nil, nil
}

// Restart starts sshd again on the same port with the same keys.
func (h *Host) Restart() {
	h.env.t.Helper()
	h.Stop()
	var err error
	for range 50 { // the port may linger briefly after the kill
		if err = h.start(); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	h.env.t.Fatalf("sshtest: restart %s: %v\n%s", h.Name, err, h.log.String())
}

// Signal sends sig to sshd and every process it started (the connection
// and session processes): SIGSTOP freezes the host under its live
// connections, SIGCONT thaws it. tmux servers, which daemonize, are not
// included.
func (h *Host) Signal(sig syscall.Signal) {
	if pid := h.PID(); pid != 0 {
		for _, p := range append([]int{pid}, Descendants(pid)...) {
			syscall.Kill(p, sig)
		}
	}
}

// DropConnections kills sshd's per-connection processes and keeps the
// listener: every open connection drops, new ones are accepted.
func (h *Host) DropConnections() {
	if pid := h.PID(); pid != 0 {
		for _, p := range Descendants(pid) {
			syscall.Kill(p, syscall.SIGKILL)
		}
	}
}

// Running reports whether sshd is running.
func (h *Host) Running() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cmd != nil
}

// PID returns sshd's listener process id, or 0 when stopped.
func (h *Host) PID() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cmd == nil {
		return 0
	}
	return h.cmd.Process.Pid
}

// Log returns what sshd wrote so far (LogLevel VERBOSE).
func (h *Host) Log() string { return h.log.String() }

// RCCount returns how many times the slow rc ran.
func (h *Host) RCCount() int {
	if h.RCCounter == "" {
		return 0
	}
	b, err := os.ReadFile(h.RCCounter)
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte("\n"))
}

// KnownHostsName is the name OpenSSH records for this host:
// "[127.0.0.1]:PORT".
func (h *Host) KnownHostsName() string { return knownhosts.Normalize(h.Addr) }

// stdPath is the PATH sshd gives sessions on Debian (its _PATH_STDPATH for
// root; users get a subset), behind the host's own bin directory.
const stdPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// linkTmux sets h.Tmux for bin (see HostOptions.Tmux) and, when it is not
// plain "tmux", links it as h.Dir/bin/tmux and returns the PATH sessions
// get; "" leaves sshd's PATH alone.
func (h *Host) linkTmux(bin string) string {
	h.env.t.Helper()
	if bin == "" {
		bin = tmuxtest.Bin()
	}
	h.Tmux = "tmux"
	if bin == "tmux" {
		return ""
	}
	abs, err := exec.LookPath(bin)
	if err == nil {
		abs, err = filepath.Abs(abs)
	}
	if err != nil {
		h.env.t.Fatalf("sshtest: host %s: tmux binary %q: %v", h.Name, bin, err)
	}
	dir := filepath.Join(h.Dir, "bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		h.env.t.Fatal(err)
	}
	if err := os.Symlink(abs, filepath.Join(dir, "tmux")); err != nil {
		h.env.t.Fatal(err)
	}
	h.Tmux = abs
	return dir + ":" + stdPath
}

// killTmux stops every tmux server started under the host's TMUX_TMPDIR
// and waits (at most 5 s) until the servers and their panes' processes
// are gone: a pane's shell writes its history into the host's home as
// it exits, which raced with the removal of the test's directory.
func (h *Host) killTmux() {
	socks, _ := filepath.Glob(filepath.Join(h.TmuxTmpDir, "tmux-*", "*"))
	var pids []int
	for _, s := range socks {
		out, _ := exec.Command(h.Tmux, "-S", s, "list-panes", "-a", "-F", "#{pid} #{pane_pid}").Output()
		for _, f := range strings.Fields(string(out)) {
			if pid, err := strconv.Atoi(f); err == nil && !slices.Contains(pids, pid) {
				pids = append(pids, pid)
			}
		}
		cmd := exec.Command(h.Tmux, "-S", s, "kill-server")
		cmd.Run()
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for running(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// running reports whether pid is a process that has not exited (a zombie
// nobody reaps has).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || (b[i+2] != 'Z' && b[i+2] != 'X')
}

// KnownHostsOptions selects what WriteKnownHosts writes.
type KnownHostsOptions struct {
	Hashed   bool     // hash host names (|1|salt|hash)
	KeyTypes []string // only these key types (e.g. "ssh-ed25519"); nil means all
	Name     string   // host name pattern to write instead of Host.KnownHostsName (e.g. a HostKeyAlias)
}

// KnownHostsLines returns known_hosts lines for h.
func (h *Host) KnownHostsLines(opts KnownHostsOptions) []string {
	name := opts.Name
	if name == "" {
		name = h.KnownHostsName()
	}
	var out []string
	for _, k := range h.HostKeys {
		if opts.KeyTypes != nil && !slices.Contains(opts.KeyTypes, k.Type()) {
			continue
		}
		n := name
		if opts.Hashed {
			n = knownhosts.HashHostname(name)
		}
		out = append(out, knownhosts.Line([]string{n}, k))
	}
	return out
}

// WriteKnownHosts writes a known_hosts file with the keys of hosts.
func WriteKnownHosts(t testing.TB, path string, opts KnownHostsOptions, hosts ...*Host) {
	t.Helper()
	var b strings.Builder
	for _, h := range hosts {
		for _, l := range h.KnownHostsLines(opts) {
			b.WriteString(l + "\n")
		}
	}
	writeFile(t, path, []byte(b.String()), 0o600)
}

// SSHConfigOptions tunes WriteSSHConfig.
type SSHConfigOptions struct {
	KnownHostsFile        string // UserKnownHostsFile for every host; required
	StrictHostKeyChecking string // default "yes"
	Extra                 []string
}

// WriteFleetFiles writes into dir a known_hosts file that trusts hosts
// and an ssh_config that names them (WriteSSHConfig), the set-up of most
// fleet tests, and returns the two paths.
func (e *Env) WriteFleetFiles(dir string, hosts ...*Host) (cfg, kh string) {
	kh = filepath.Join(dir, "known_hosts")
	WriteKnownHosts(e.t, kh, KnownHostsOptions{}, hosts...)
	cfg = filepath.Join(dir, "ssh_config")
	e.WriteSSHConfig(cfg, SSHConfigOptions{KnownHostsFile: kh}, hosts...)
	return cfg, kh
}

// WriteSSHConfig writes an ssh_config with one Host block per test host
// (alias = Host.Name) that an OpenSSH client could use as is: HostName,
// Port, User, the Env's IdentityFile with IdentitiesOnly, no agent, the
// given known_hosts file, and no global known_hosts.
func (e *Env) WriteSSHConfig(path string, opts SSHConfigOptions, hosts ...*Host) {
	e.t.Helper()
	strict := opts.StrictHostKeyChecking
	if strict == "" {
		strict = "yes"
	}
	var b strings.Builder
	for _, h := range hosts {
		fmt.Fprintf(&b, "Host %s\n", h.Name)
		fmt.Fprintf(&b, "  HostName 127.0.0.1\n  Port %d\n  User %s\n", h.Port, e.User)
		fmt.Fprintf(&b, "  IdentityFile %s\n  IdentitiesOnly yes\n  IdentityAgent none\n", e.UserKeyFile)
		fmt.Fprintf(&b, "  UserKnownHostsFile %s\n  GlobalKnownHostsFile /dev/null\n", opts.KnownHostsFile)
		fmt.Fprintf(&b, "  StrictHostKeyChecking %s\n  BatchMode yes\n", strict)
		for _, l := range opts.Extra {
			fmt.Fprintf(&b, "  %s\n", l)
		}
		b.WriteString("\n")
	}
	writeFile(e.t, path, []byte(b.String()), 0o600)
}

// HungHost listens on a free 127.0.0.1 port, accepts TCP connections and
// never says a word: an SSH handshake against it only ends by timeout. The
// listener and its connections close when the test ends.
func HungHost(t testing.TB) string {
	t.Helper()
	l := nettest.Listen(t, "tcp", "127.0.0.1:0")
	l.Serve(nil)
	return l.Addr()
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Descendants returns the process ids of every descendant of pid (Linux
// /proc walk).
func Descendants(pid int) []int {
	children := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp := ParentPID(p); pp > 0 {
			children[pp] = append(children[pp], p)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// ParentPID returns the parent of pid, or 0 if pid is gone.
func ParentPID(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name may contain spaces and parentheses: skip past the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0
	}
	pp, _ := strconv.Atoi(f[1])
	return pp
}

func writeFile(t testing.TB, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
