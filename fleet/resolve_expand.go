package fleet

import (
	"bufio"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Token and value helpers that reproduce OpenSSH 9.2's misc.c behaviour.

// tokens maps a %-token letter to its replacement.
type tokens map[byte]string

// percentDollarExpand is vdollar_percent_expand: ${VAR} is replaced from
// the environment when dollar is set, %x from toks when toks is non-nil,
// "%%" gives "%". An unknown token, a trailing "%", a malformed ${...} or an
// unset variable is an error.
func percentDollarExpand(s string, toks tokens, dollar bool, getenv func(string) (string, bool)) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if dollar && c == '$' && i+1 < len(s) && s[i+1] == '{' {
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return "", fmt.Errorf("environment variable '%s' missing closing '}'", s[i+2:])
			}
			name := s[i+2 : i+2+end]
			if name == "" {
				return "", errors.New("zero-length environment variable")
			}
			v, ok := getenv(name)
			if !ok {
				return "", fmt.Errorf("env var ${%s} has no value", name)
			}
			b.WriteString(v)
			i += 2 + end
			continue
		}
		if c != '%' || toks == nil {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(s) {
			return "", errors.New("invalid format")
		}
		if s[i] == '%' {
			b.WriteByte('%')
			continue
		}
		r, ok := toks[s[i]]
		if !ok {
			return "", fmt.Errorf("unknown key %%%c", s[i])
		}
		b.WriteString(r)
	}
	return b.String(), nil
}

// tildeExpand is misc.c's tilde_expand: "~" and "~/path" use home, "~user"
// looks the user up. Other strings are returned unchanged.
func tildeExpand(s, home string, lookupHome func(string) (string, error)) (string, error) {
	if !strings.HasPrefix(s, "~") {
		return s, nil
	}
	cp := s[1:]
	var path string
	dir := home
	switch {
	case cp == "":
	case cp[0] == '/':
		path = strings.TrimLeft(cp, "/")
	default:
		user := cp
		if i := strings.IndexByte(cp, '/'); i >= 0 {
			user = cp[:i]
			path = strings.TrimLeft(cp[i+1:], "/")
		}
		h, err := lookupHome(user)
		if err != nil {
			return "", fmt.Errorf("no such user %s", user)
		}
		dir = h
	}
	if dir == "" || !strings.HasSuffix(dir, "/") {
		dir += "/"
	}
	return dir + path, nil
}

// connInfo holds the values behind the client %-tokens
// (DEFAULT_CLIENT_PERCENT_EXPAND_ARGS in sshconnect.h).
type connInfo struct {
	thisHost  string // %l
	shortHost string // %L
	uid       string // %i
	keyAlias  string // %k
	hostArg   string // %n
	port      string // %p
	home      string // %d
	remHost   string // %h
	remUser   string // %r
	locUser   string // %u
}

func (c connInfo) tokens() tokens {
	return tokens{
		'C': connectionHash(c.thisHost, c.remHost, c.port, c.remUser),
		'L': c.shortHost,
		'i': c.uid,
		'k': c.keyAlias,
		'l': c.thisHost,
		'n': c.hostArg,
		'p': c.port,
		'd': c.home,
		'h': c.remHost,
		'r': c.remUser,
		'u': c.locUser,
	}
}

// connectionHash is ssh_connection_hash: hex SHA-1 of the concatenation.
func connectionHash(thisHost, host, port, user string) string {
	h := sha1.New()
	h.Write([]byte(thisHost))
	h.Write([]byte(host))
	h.Write([]byte(port))
	h.Write([]byte(user))
	return hex.EncodeToString(h.Sum(nil))
}

// strtonum is OpenBSD's strtonum over strtoll base 10.
func strtonum(s string, lo, hi int64) (int64, string) {
	t := strings.TrimLeft(s, " \t\n\v\f\r")
	if t == "" {
		return 0, "invalid"
	}
	neg := false
	if t[0] == '+' || t[0] == '-' {
		neg = t[0] == '-'
		t = t[1:]
	}
	if t == "" {
		return 0, "invalid"
	}
	var v int64
	overflow := false
	for i := 0; i < len(t); i++ {
		c := t[i]
		if c < '0' || c > '9' {
			return 0, "invalid"
		}
		if v > (math.MaxInt64-int64(c-'0'))/10 {
			overflow = true
			continue
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	switch {
	case overflow && neg, v < lo:
		return 0, "too small"
	case overflow, v > hi:
		return 0, "too large"
	}
	return v, ""
}

// atoiErr is misc.c's atoi_err: a non-negative int.
func atoiErr(s string) (int, string) {
	if s == "" {
		return 0, "missing"
	}
	v, e := strtonum(s, 0, math.MaxInt32)
	return int(v), e
}

// a2port is misc.c's a2port: a number 0..65535 or a tcp service name.
func a2port(s string) int {
	if v, e := strtonum(s, 0, 65535); e == "" {
		return int(v)
	}
	if p, ok := lookupService(s); ok {
		return p
	}
	return -1
}

var (
	servicesOnce sync.Once
	servicesTCP  map[string]int
)

// lookupService is getservbyname(name, "tcp") over /etc/services.
func lookupService(name string) (int, bool) {
	servicesOnce.Do(func() {
		servicesTCP = map[string]int{}
		f, err := os.Open("/etc/services")
		if err != nil {
			servicesTCP["ssh"] = 22
			return
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := sc.Text()
			if i := strings.IndexByte(line, '#'); i >= 0 {
				line = line[:i]
			}
			fs := strings.Fields(line)
			if len(fs) < 2 {
				continue
			}
			portStr, proto, ok := strings.Cut(fs[1], "/")
			if !ok || proto != "tcp" {
				continue
			}
			p, err := strconv.Atoi(portStr)
			if err != nil || p < 0 || p > 65535 {
				continue
			}
			for _, n := range append([]string{fs[0]}, fs[2:]...) {
				if _, dup := servicesTCP[n]; !dup {
					servicesTCP[n] = p
				}
			}
		}
	})
	p, ok := servicesTCP[name]
	return p, ok
}

// convtime is misc.c's convtime: a sequence of number[smhdwSMHDW]; -1 when
// invalid or larger than INT_MAX seconds.
func convtime(s string) int {
	if s == "" {
		return -1
	}
	var total int64
	p := s
	for p != "" {
		// strtol: optional leading space and sign, then digits.
		q := strings.TrimLeft(p, " \t\n\v\f\r")
		neg := false
		if q != "" && (q[0] == '+' || q[0] == '-') {
			neg = q[0] == '-'
			q = q[1:]
		}
		n := 0
		var secs int64
		for n < len(q) && q[n] >= '0' && q[n] <= '9' {
			if secs < math.MaxInt64/10 {
				secs = secs*10 + int64(q[n]-'0')
			}
			n++
		}
		if n == 0 {
			return -1
		}
		if neg && secs != 0 {
			return -1
		}
		q = q[n:]
		mult := int64(1)
		if q != "" {
			switch q[0] {
			case 's', 'S':
			case 'm', 'M':
				mult = 60
			case 'h', 'H':
				mult = 3600
			case 'd', 'D':
				mult = 86400
			case 'w', 'W':
				mult = 604800
			default:
				return -1
			}
			q = q[1:]
		}
		if secs > math.MaxInt32/mult {
			return -1
		}
		secs *= mult
		if total > math.MaxInt32-secs {
			return -1
		}
		total += secs
		p = q
	}
	return int(total)
}

// validEnvName is misc.c's valid_env_name.
func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// validHostname is the check Debian's OpenSSH 9.2 (and upstream 9.6+)
// applies to the destination given on the command line.
func validHostname(s string) bool {
	if strings.HasPrefix(s, "-") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if strings.IndexByte("'`\"$\\;&<>|(){},", c) >= 0 || isCSpace(c) || c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

// validRemoteUser is valid_ruser, applied to users given on the command
// line (ProxyJump hops become "-l user").
func validRemoteUser(s string) bool {
	if s == "" {
		return true
	}
	if s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if strings.IndexByte("'`\";&<>|(){}", c) >= 0 {
			return false
		}
		if isCSpace(c) && i+1 < len(s) && s[i+1] == '-' {
			return false
		}
		if c == '\\' && i+1 == len(s) {
			return false
		}
	}
	return true
}

func isCSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// validDomain is misc.c's valid_domain; it returns the name lower-cased
// without a trailing dot.
func validDomain(name string) (string, error) {
	if name == "" {
		return "", errors.New("empty domain name")
	}
	c0 := name[0]
	if !(c0 >= 'a' && c0 <= 'z' || c0 >= 'A' && c0 <= 'Z' || c0 >= '0' && c0 <= '9') {
		return "", fmt.Errorf("domain name %q starts with invalid character", name)
	}
	lower := asciiLower(name)
	var last byte
	for i := 0; i < len(lower); i++ {
		c := lower[i]
		if last == '.' && c == '.' {
			return "", fmt.Errorf("domain name %q contains consecutive separators", name)
		}
		if c != '.' && c != '-' && c != '_' && !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return "", fmt.Errorf("domain name %q contains invalid characters", name)
		}
		last = c
	}
	return strings.TrimSuffix(lower, "."), nil
}

// Address families as in AddressFamily.
const (
	afAny = iota
	afInet
	afInet6
)

// isAddrFast is ssh.c's is_addr_fast.
func isAddrFast(name string) bool {
	if strings.ContainsAny(name, "%:") {
		return true
	}
	for i := 0; i < len(name); i++ {
		if !(name[i] >= '0' && name[i] <= '9' || name[i] == '.') {
			return false
		}
	}
	return true
}

// numericHost is getaddrinfo(AI_NUMERICHOST) followed by
// getnameinfo(NI_NUMERICHOST): the canonical text of a numeric address
// (inet_aton forms such as "127.1" and "0x7f.1" included), or ok=false.
func numericHost(name string, af int) (string, bool) {
	if af != afInet6 {
		if v4, ok := inetAton(name); ok {
			return fmt.Sprintf("%d.%d.%d.%d", v4>>24, v4>>16&0xff, v4>>8&0xff, v4&0xff), true
		}
	}
	if af == afInet {
		return "", false
	}
	if !strings.Contains(name, ":") {
		return "", false
	}
	addr, zone, hasZone := strings.Cut(name, "%")
	a, err := netip.ParseAddr(addr)
	if err != nil || !a.Is6() {
		return "", false
	}
	out := inetNtop6(a.As16())
	if hasZone {
		if zone == "" {
			return "", false
		}
		if _, err := strconv.ParseUint(zone, 10, 32); err != nil {
			if _, err := netInterfaceByName(zone); err != nil {
				return "", false
			}
		}
		out += "%" + zone
	}
	return out, true
}

// netInterfaceByName checks an IPv6 zone name; a variable for tests.
var netInterfaceByName = net.InterfaceByName

// inetAton parses the IPv4 forms glibc's inet_aton accepts: one to four
// parts, each decimal, octal (leading 0) or hex (0x).
func inetAton(s string) (uint32, bool) {
	if s == "" {
		return 0, false
	}
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return 0, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		if p == "" {
			return 0, false
		}
		base := 10
		digits := p
		switch {
		case strings.HasPrefix(p, "0x") || strings.HasPrefix(p, "0X"):
			base = 16
			digits = p[2:]
		case len(p) > 1 && p[0] == '0':
			base = 8
			digits = p[1:]
		}
		if digits == "" {
			if base == 16 {
				vals[i] = 0
				continue
			}
			return 0, false
		}
		v, err := strconv.ParseUint(digits, base, 32)
		if err != nil {
			return 0, false
		}
		vals[i] = v
	}
	var out uint64
	n := len(vals)
	for i := 0; i < n-1; i++ {
		if vals[i] > 0xff {
			return 0, false
		}
		out |= vals[i] << (24 - 8*uint(i))
	}
	lastMax := uint64(1)<<(8*uint(4-n+1)) - 1
	if vals[n-1] > lastMax {
		return 0, false
	}
	out |= vals[n-1]
	return uint32(out), true
}

// inetNtop6 formats an IPv6 address as glibc's inet_ntop does: the longest
// run (first on a tie) of two or more zero words becomes "::", and
// IPv4-compatible and IPv4-mapped addresses end in dotted quad.
func inetNtop6(b [16]byte) string {
	var w [8]uint16
	for i := range w {
		w[i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
	}
	bestStart, bestLen := -1, 0
	curStart, curLen := -1, 0
	for i := 0; i < 8; i++ {
		if w[i] == 0 {
			if curStart < 0 {
				curStart, curLen = i, 1
			} else {
				curLen++
			}
			continue
		}
		if curStart >= 0 && (bestStart < 0 || curLen > bestLen) {
			bestStart, bestLen = curStart, curLen
		}
		curStart = -1
	}
	if curStart >= 0 && (bestStart < 0 || curLen > bestLen) {
		bestStart, bestLen = curStart, curLen
	}
	if bestStart >= 0 && bestLen < 2 {
		bestStart = -1
	}
	var sb strings.Builder
	for i := 0; i < 8; i++ {
		if bestStart >= 0 && i >= bestStart && i < bestStart+bestLen {
			if i == bestStart {
				sb.WriteByte(':')
			}
			continue
		}
		if i != 0 {
			sb.WriteByte(':')
		}
		if i == 6 && bestStart == 0 && (bestLen == 6 || (bestLen == 5 && w[5] == 0xffff)) {
			fmt.Fprintf(&sb, "%d.%d.%d.%d", b[12], b[13], b[14], b[15])
			break
		}
		fmt.Fprintf(&sb, "%x", w[i])
	}
	if bestStart >= 0 && bestStart+bestLen == 8 {
		sb.WriteByte(':')
	}
	return sb.String()
}
