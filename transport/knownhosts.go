package transport

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// HostKeyError describes a host key that known_hosts does not accept. It
// wraps ErrHostKeyUnknown or ErrHostKeyChanged.
type HostKeyError struct {
	Host        string   // name looked up in known_hosts: "host", "[host]:port" or the HostKeyAlias
	KeyType     string   // type of the key the server offered
	Fingerprint string   // its SHA256 fingerprint, "SHA256:..."
	Known       []string // for a changed key: the recorded keys, "file:line type SHA256:..."
	Reason      string   // for a revoked key or a rejected certificate
	Strict      string   // StrictHostKeyChecking in effect
	kind        error
}

func (e *HostKeyError) Error() string {
	offered := e.KeyType + " " + e.Fingerprint
	switch {
	case e.kind == ErrHostKeyUnknown:
		return fmt.Sprintf("host key for %s is not in known_hosts (server offered %s) and StrictHostKeyChecking is %q: %v",
			e.Host, offered, e.Strict, e.kind)
	case e.Reason != "":
		return fmt.Sprintf("host key for %s refused (server offered %s): %s: %v", e.Host, offered, e.Reason, e.kind)
	default:
		return fmt.Sprintf("HOST KEY CHANGED for %s: server offered %s but known_hosts has %s; if the change is expected, remove the old entry: %v",
			e.Host, offered, strings.Join(e.Known, ", "), e.kind)
	}
}

func (e *HostKeyError) Unwrap() error { return e.kind }

// hostKeyChecker verifies one host's key against the resolved known_hosts
// files, the way OpenSSH does: hashed names, [host]:port for other ports,
// HostKeyAlias, @cert-authority and @revoked.
type hostKeyChecker struct {
	cfg    *SSHConfig
	log    *slog.Logger
	lookup string // host:port handed to the knownhosts callback
	name   string // the same in known_hosts form

	db      ssh.HostKeyCallback // nil when no known_hosts file exists
	origins []lineOrigin        // set when db was built from a filtered copy
	ca      map[lineOrigin]bool // @cert-authority lines

	mu   sync.Mutex
	fail error // verification failure of the last check
}

type lineOrigin struct {
	file string
	line int
}

// probeKey is a key no host has; checking it yields the recorded keys.
var probeKey = func() ssh.PublicKey {
	k, err := ssh.NewPublicKey(ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)).Public())
	if err != nil {
		panic(err)
	}
	return k
}()

func newHostKeyChecker(cfg *SSHConfig, log *slog.Logger) (*hostKeyChecker, error) {
	port := cfg.Port
	if port == 0 {
		port = 22
	}
	h := &hostKeyChecker{cfg: cfg, log: log}
	if cfg.HostKeyAlias != "" {
		h.lookup = aliasLookup(cfg.HostKeyAlias)
	} else {
		h.lookup = net.JoinHostPort(cfg.HostName, strconv.Itoa(port))
	}
	h.name = knownhosts.Normalize(h.lookup)
	if cfg.HostKeyAlias != "" && h.name != cfg.HostKeyAlias {
		return nil, fmt.Errorf("known_hosts: HostKeyAlias %q cannot be looked up verbatim", cfg.HostKeyAlias)
	}
	var files []string
	for _, f := range slices.Concat(cfg.UserKnownHostsFiles, cfg.GlobalKnownHostsFiles) {
		if st, err := os.Stat(f); err == nil && st.Mode().IsRegular() && !slices.Contains(files, f) {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		return h, nil
	}
	if err := h.load(files); err != nil {
		return nil, err
	}
	return h, nil
}

// aliasLookup returns the host:port to hand the knownhosts callback so
// that the name it looks up is the HostKeyAlias itself: OpenSSH matches an
// alias verbatim, without adding a port, and an alias may already have
// the "[host]:port" form of a known_hosts name.
func aliasLookup(alias string) string {
	if strings.HasPrefix(alias, "[") {
		if host, port, err := net.SplitHostPort(alias); err == nil {
			return net.JoinHostPort(host, port)
		}
	}
	return net.JoinHostPort(alias, "22")
}

// load builds the callback. knownhosts.New fails on the first line it
// cannot parse, where OpenSSH skips the line; so on failure the valid lines
// are copied to a temporary file and the invalid ones logged.
func (h *hostKeyChecker) load(files []string) error {
	h.ca = map[lineOrigin]bool{}
	type line struct {
		origin lineOrigin
		text   []byte
	}
	var lines []line
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("known_hosts: %w", err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for n := 1; sc.Scan(); n++ {
			t := bytes.TrimSpace(sc.Bytes())
			if len(t) == 0 || t[0] == '#' {
				continue
			}
			o := lineOrigin{f, n}
			if bytes.HasPrefix(t, []byte("@cert-authority")) {
				h.ca[o] = true
			}
			lines = append(lines, line{o, slices.Clone(t)})
		}
	}
	db, err := knownhosts.New(files...)
	if err == nil {
		h.db = db
		return nil
	}
	h.log.Warn("known_hosts has lines that cannot be parsed; skipping them", "err", err)

	dir, err := os.MkdirTemp("", "fleetmux-known-hosts")
	if err != nil {
		return fmt.Errorf("known_hosts: %w", err)
	}
	defer os.RemoveAll(dir)
	one := filepath.Join(dir, "line")
	var good bytes.Buffer
	h.origins = []lineOrigin{{}} // line numbers are 1-based
	for _, l := range lines {
		if err := os.WriteFile(one, append(l.text, '\n'), 0o600); err != nil {
			return fmt.Errorf("known_hosts: %w", err)
		}
		if _, err := knownhosts.New(one); err != nil {
			h.log.Warn("skipping known_hosts line", "file", l.origin.file, "line", l.origin.line, "err", err)
			continue
		}
		good.Write(l.text)
		good.WriteByte('\n')
		h.origins = append(h.origins, l.origin)
	}
	all := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(all, good.Bytes(), 0o600); err != nil {
		return fmt.Errorf("known_hosts: %w", err)
	}
	if h.db, err = knownhosts.New(all); err != nil {
		return fmt.Errorf("known_hosts %s: %w", strings.Join(files, ", "), err)
	}
	return nil
}

func (h *hostKeyChecker) origin(k knownhosts.KnownKey) lineOrigin {
	if h.origins != nil && k.Line > 0 && k.Line < len(h.origins) {
		return h.origins[k.Line]
	}
	return lineOrigin{k.Filename, k.Line}
}

// recorded returns the known_hosts entries for the host (CA lines too).
func (h *hostKeyChecker) recorded() []knownhosts.KnownKey {
	if h.db == nil {
		return nil
	}
	var ke *knownhosts.KeyError
	if err := h.db(h.lookup, &net.TCPAddr{IP: net.IPv4zero}, probeKey); errors.As(err, &ke) {
		return ke.Want
	}
	return nil
}

// Host key algorithms in OpenSSH's preference order.
var plainHostKeyAlgos = []string{
	ssh.KeyAlgoED25519,
	ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521,
	ssh.KeyAlgoSKED25519, ssh.KeyAlgoSKECDSA256,
	ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA,
}

// certAlgos maps a plain key algorithm to its certificate algorithm
// (ssh-rsa aside: algosForKey orders its SHA-2 variants).
var certAlgos = map[string]string{
	ssh.KeyAlgoED25519:    ssh.CertAlgoED25519v01,
	ssh.KeyAlgoECDSA256:   ssh.CertAlgoECDSA256v01,
	ssh.KeyAlgoECDSA384:   ssh.CertAlgoECDSA384v01,
	ssh.KeyAlgoECDSA521:   ssh.CertAlgoECDSA521v01,
	ssh.KeyAlgoSKED25519:  ssh.CertAlgoSKED25519v01,
	ssh.KeyAlgoSKECDSA256: ssh.CertAlgoSKECDSA256v01,
}

// algosForKey maps a key type from known_hosts to the algorithms that
// present it; ssh-rsa keys sign with SHA-2 first.
func algosForKey(keyType string, cert bool) []string {
	if keyType == ssh.KeyAlgoRSA {
		if cert {
			return []string{ssh.CertAlgoRSASHA512v01, ssh.CertAlgoRSASHA256v01, ssh.CertAlgoRSAv01}
		}
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
	}
	if cert {
		if c, ok := certAlgos[keyType]; ok {
			return []string{c}
		}
		return nil
	}
	return []string{keyType}
}

// algorithms orders HostKeyAlgorithms the way OpenSSH's order_hostkeyalgs
// does: algorithms of the keys known_hosts has for the host first (host
// certificates first when a @cert-authority line matches), then the other
// plain key algorithms. x/crypto's own default puts certificates and ECDSA
// before ed25519, so a host known only by its ed25519 key would present its
// ECDSA key and fail as a mismatch (golang/go#29286).
func (h *hostKeyChecker) algorithms() []string {
	var certs, plain []string
	for _, k := range h.recorded() {
		if h.ca[h.origin(k)] {
			certs = append(certs, algosForKey(k.Key.Type(), true)...)
		} else {
			plain = append(plain, algosForKey(k.Key.Type(), false)...)
		}
	}
	byPref := func(list []string) []string {
		var out []string
		for _, a := range plainHostKeyAlgos {
			for _, c := range algosForKey(a, true) {
				if slices.Contains(list, c) && !slices.Contains(out, c) {
					out = append(out, c)
				}
			}
		}
		for _, a := range plainHostKeyAlgos {
			if slices.Contains(list, a) && !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
		return out
	}
	out := slices.Concat(byPref(certs), byPref(plain))
	for _, a := range plainHostKeyAlgos {
		if a != ssh.KeyAlgoRSA && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// check is the ssh.HostKeyCallback. It ignores the dialled address and
// looks up h.lookup (HostKeyAlias or HostName with the port).
func (h *hostKeyChecker) check(_ string, remote net.Addr, key ssh.PublicKey) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fail = nil
	e := &HostKeyError{
		Host:        h.name,
		KeyType:     key.Type(),
		Fingerprint: ssh.FingerprintSHA256(key),
		Strict:      h.cfg.StrictHostKeyChecking,
	}
	if cert, ok := key.(*ssh.Certificate); ok {
		e.Fingerprint = ssh.FingerprintSHA256(cert.Key)
	}
	if h.db != nil {
		err := h.db(h.lookup, remote, key)
		if err == nil {
			return nil
		}
		var ke *knownhosts.KeyError
		var re *knownhosts.RevokedError
		switch {
		case errors.As(err, &re):
			o := h.origin(re.Revoked)
			e.kind, e.Reason = ErrHostKeyChanged, fmt.Sprintf("the key is marked @revoked at %s:%d", o.file, o.line)
		case errors.As(err, &ke) && len(ke.Want) > 0:
			e.kind = ErrHostKeyChanged
			for _, w := range ke.Want {
				o := h.origin(w)
				e.Known = append(e.Known, fmt.Sprintf("%s:%d %s %s", o.file, o.line, w.Key.Type(), ssh.FingerprintSHA256(w.Key)))
			}
		case errors.As(err, &ke):
			e.kind = ErrHostKeyUnknown
		default: // a certificate known_hosts does not accept
			e.kind, e.Reason = ErrHostKeyChanged, err.Error()
		}
		if e.kind != ErrHostKeyUnknown {
			h.fail = e
			return e
		}
	}
	e.kind = ErrHostKeyUnknown
	switch h.cfg.StrictHostKeyChecking {
	case "accept-new", "no", "off":
		if err := h.add(key); err != nil {
			h.fail = fmt.Errorf("record new host key for %s: %w", h.name, err)
			return h.fail
		}
		h.log.Info("new host key recorded", "name", h.name, "key", e.KeyType+" "+e.Fingerprint)
		return nil
	}
	if e.Strict == "" {
		e.Strict = "ask"
	}
	h.fail = e
	return e
}

// failure returns the verification failure of the last handshake, if any.
func (h *hostKeyChecker) failure() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.fail
}

// add appends key for the host to the first UserKnownHostsFile, hashing
// the name when HashKnownHosts is set.
func (h *hostKeyChecker) add(key ssh.PublicKey) error {
	if len(h.cfg.UserKnownHostsFiles) == 0 {
		return errors.New("no UserKnownHostsFile to record it in")
	}
	file := h.cfg.UserKnownHostsFiles[0]
	name := h.name
	if h.cfg.HashKnownHosts {
		name = knownhosts.HashHostname(name)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(file, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	line := knownhosts.Line([]string{name}, key) + "\n"
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, st.Size()-1); err == nil && last[0] != '\n' {
			line = "\n" + line
		}
	}
	if _, err := f.WriteString(line); err != nil {
		return err
	}
	return f.Close()
}
