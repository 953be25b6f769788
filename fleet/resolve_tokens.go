package fleet

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// `ssh -G` prints IdentityFile (and GlobalKnownHostsFile) as written in
// ssh_config; ssh expands them only when it connects. This file holds the
// few expansions fleet must then do itself, the way OpenSSH 9.2's misc.c
// does them, and the parser for the ProxyJump hop ssh -G prints. Nothing
// here decides a setting: that is ssh -G's job.

// localEnv is what the expansions read besides the resolved settings.
type localEnv struct {
	home       string // %d and ~
	localUser  string // %u
	uid        int    // %i
	thisHost   string // %l, and %L up to the first dot
	getenv     func(string) (string, bool)
	lookupHome func(user string) (string, error) // ~user
}

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

// clientTokens are the %-tokens ssh 9.2 expands in IdentityFile
// (DEFAULT_CLIENT_PERCENT_EXPAND_ARGS in sshconnect.h): %C %L %i %k %l %n
// %p %d %h %r %u, plus %%. (%j arrived in OpenSSH 9.6 and is refused, as
// 9.2 refuses it.)
func clientTokens(env *localEnv, r Resolved) tokens {
	short, _, _ := strings.Cut(env.thisHost, ".")
	keyAlias := r.Alias
	if r.HostKeyAlias != "" {
		keyAlias = r.HostKeyAlias
	}
	return tokens{
		'C': connectionHash(env.thisHost, r.HostName, r.Port, r.User),
		'L': short,
		'i': strconv.Itoa(env.uid),
		'k': keyAlias,
		'l': env.thisHost,
		'n': r.Alias,
		'p': r.Port,
		'd': env.home,
		'h': r.HostName,
		'r': r.User,
		'u': env.localUser,
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

// hop is one ProxyJump destination: `ssh -l user -p port host`.
type hop struct {
	user string // "" when not given
	host string
	port int // -1 when not given
}

// parseHop splits one ProxyJump hop: "[user@]host[:port]" (the form ssh -G
// prints; the user is everything before the last '@', an IPv6 address is
// in brackets) or "ssh://[user@]host[:port]" (user %-encoded).
func parseHop(s string) (hop, error) {
	bad := fmt.Errorf("invalid ProxyJump hop %q", s)
	h := hop{port: -1}
	rest, uri := strings.CutPrefix(s, "ssh://")
	if uri {
		if i := strings.IndexByte(rest, '@'); i >= 0 {
			u := rest[:i]
			if j := strings.IndexByte(u, ';'); j >= 0 {
				u = u[:j]
			}
			dec, ok := urlDecode(u)
			if u == "" || !ok {
				return hop{}, bad
			}
			h.user, rest = dec, rest[i+1:]
		}
	} else if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		if i == 0 {
			return hop{}, bad
		}
		h.user, rest = rest[:i], rest[i+1:]
	}
	host, port := rest, ""
	if strings.HasPrefix(rest, "[") {
		j := strings.IndexByte(rest, ']')
		if j < 0 {
			return hop{}, bad
		}
		host, rest = rest[1:j], rest[j+1:]
		if rest != "" {
			p, ok := strings.CutPrefix(rest, ":")
			if !ok {
				return hop{}, bad
			}
			port = p
		}
	} else if j := strings.IndexAny(rest, ":/"); j >= 0 {
		if rest[j] == '/' {
			return hop{}, bad
		}
		host, port = rest[:j], rest[j+1:]
	}
	if host == "" {
		return hop{}, bad
	}
	h.host = host
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n <= 0 || n > 65535 {
			return hop{}, bad
		}
		h.port = n
	}
	return h, nil
}

func urlDecode(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '+':
			b.WriteByte(' ')
		case '%':
			if i+2 >= len(s) {
				return "", false
			}
			v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
			if err != nil {
				return "", false
			}
			b.WriteByte(byte(v))
			i += 2
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}

// rejoinSpaced undoes ssh -G's joining of a known-hosts list with spaces
// for paths that themselves contain whitespace: adjacent pieces are
// rejoined, longest run first, when the joined string is one of the known
// paths (the configured ones, expanded as ssh expands them).
func rejoinSpaced(pieces []string, known map[string]bool) []string {
	if len(pieces) < 2 || len(known) == 0 {
		return pieces
	}
	var out []string
	for i := 0; i < len(pieces); {
		j := len(pieces)
		for ; j > i+1; j-- {
			if known[strings.Join(pieces[i:j], " ")] {
				break
			}
		}
		out = append(out, strings.Join(pieces[i:j], " "))
		i = j
	}
	return out
}

// spacedPaths returns the known-hosts paths that contain whitespace once
// expanded for r: each configured path as written (GlobalKnownHostsFile
// is printed unexpanded) and with ~, ${VAR} and %-tokens expanded
// (UserKnownHostsFile).
func spacedPaths(configured []string, env *localEnv, r Resolved) map[string]bool {
	var known map[string]bool
	add := func(p string) {
		if strings.ContainsAny(p, " \t") {
			if known == nil {
				known = map[string]bool{}
			}
			known[p] = true
		}
	}
	var toks tokens
	for _, p := range configured {
		add(p)
		x, err := tildeExpand(p, env.home, env.lookupHome)
		if err != nil {
			continue
		}
		add(x)
		if toks == nil {
			toks = clientTokens(env, r)
		}
		if x, err = percentDollarExpand(x, toks, true, env.getenv); err == nil {
			add(x)
		}
	}
	return known
}
