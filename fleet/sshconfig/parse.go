package sshconfig

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// This file reads ssh_config files the way OpenSSH 9.2's readconf.c does:
// the same line splitting (strdelim for the keyword, argv_split for the
// arguments), the same Include rules (relative to ~/.ssh or /etc/ssh, glob,
// recursion limit) and the same permission check. Only the lines Load
// looks at are interpreted: Host, Include and the known-hosts files.

// maxIncludeDepth is READCONF_MAX_DEPTH in readconf.c.
const maxIncludeDepth = 16

// cfgFile is one parsed ssh_config file.
type cfgFile struct {
	path  string
	lines []cfgLine
}

// cfgLine is one meaningful line (comments and blank lines are dropped).
type cfgLine struct {
	num     int
	keyword string   // lower-cased keyword
	rest    string   // text after the keyword and its separator; "" when missing
	args    []string // argv_split(rest), comments stripped; nil when argErr is set
	argErr  error    // invalid quotes
	// includes holds, for an Include line, one entry per argument.
	includes []cfgInclude
}

// cfgInclude is one argument of an Include line, already globbed.
type cfgInclude struct {
	err   error // bad include path (for example "~" in a system file)
	files []*cfgFile
}

// loadFlags mirror readconf.h's SSHCONF_* bits that matter when loading.
type loadFlags struct {
	userConf  bool // SSHCONF_USERCONF: relative Includes live in ~/.ssh
	checkPerm bool // SSHCONF_CHECKPERM
}

// maxLoadedFiles bounds the files one inventory reads (an Include tree
// that fans out can otherwise explode within the depth limit).
const maxLoadedFiles = 10000

// loader reads a tree of config files.
type loader struct {
	home      string
	uid       int
	lookupDir func(user string) (string, error) // home directory of another user, for ~user
	loaded    int
}

// loadFile reads path and, recursively, its Includes. A missing file gives
// (nil, nil) so that callers decide whether that is an error.
func (l *loader) loadFile(path string, flags loadFlags, depth int) (*cfgFile, error) {
	if depth > maxIncludeDepth {
		return nil, &fatalLoadError{fmt.Errorf("%s: too many recursive configuration includes", path)}
	}
	if l.loaded++; l.loaded > maxLoadedFiles {
		return nil, &fatalLoadError{fmt.Errorf("%s: more than %d configuration files included", path, maxLoadedFiles)}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		var pe *fs.PathError
		if errors.As(err, &pe) && errors.Is(pe.Err, syscall.EISDIR) {
			// fopen succeeds on a directory and getline returns nothing.
			return &cfgFile{path: path}, nil
		}
		return nil, err
	}
	if flags.checkPerm {
		if err := checkConfigPerm(path, l.uid); err != nil {
			return nil, err
		}
	}
	f := &cfgFile{path: path}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), len(data)+1)
	num := 0
	for sc.Scan() {
		num++
		ln, ok := parseLine(sc.Text())
		if !ok {
			continue
		}
		ln.num = num
		if ln.keyword == "include" && ln.argErr == nil && ln.rest != "" {
			for _, arg := range ln.args {
				inc := cfgInclude{}
				inc.files, inc.err = l.loadInclude(arg, flags, depth)
				if inc.err != nil && isFatalLoadErr(inc.err) {
					return nil, fmt.Errorf("%s line %d: %w", path, num, inc.err)
				}
				ln.includes = append(ln.includes, inc)
			}
		}
		f.lines = append(f.lines, ln)
	}
	return f, nil
}

// fatalLoadError marks errors that make OpenSSH give up on every host
// (recursion, unreadable or insecure files), as opposed to a bad line.
type fatalLoadError struct{ err error }

func (e *fatalLoadError) Error() string { return e.err.Error() }
func (e *fatalLoadError) Unwrap() error { return e.err }

func isFatalLoadErr(err error) bool {
	var f *fatalLoadError
	return errors.As(err, &f)
}

// loadInclude expands one Include argument like readconf.c: "~" is only
// allowed in user files, relative paths are anchored at ~/.ssh (user) or
// /etc/ssh (system), then glob(3) with GLOB_TILDE.
func (l *loader) loadInclude(arg string, flags loadFlags, depth int) ([]*cfgFile, error) {
	if arg == "" {
		return nil, errors.New("keyword include empty argument")
	}
	if strings.HasPrefix(arg, "~") && !flags.userConf {
		return nil, fmt.Errorf("bad include path %s", arg)
	}
	pattern := arg
	if !strings.HasPrefix(arg, "/") && !strings.HasPrefix(arg, "~") {
		if flags.userConf {
			pattern = "~/.ssh/" + arg
		} else {
			pattern = "/etc/ssh/" + arg
		}
	}
	pattern, err := l.globTilde(pattern)
	if err != nil {
		return nil, nil // glob(3) treats an unknown ~user as no match
	}
	matches, err := glob(pattern)
	if err != nil {
		return nil, fmt.Errorf("glob failed for %s", pattern)
	}
	var files []*cfgFile
	for _, m := range matches {
		child := loadFlags{userConf: flags.userConf, checkPerm: true}
		f, err := l.loadFile(m, child, depth+1)
		if err != nil {
			if isFatalLoadErr(err) {
				return nil, err
			}
			return nil, &fatalLoadError{fmt.Errorf("can't open user config file %s: %w", m, err)}
		}
		if f != nil {
			files = append(files, f)
		}
	}
	return files, nil
}

// globTilde performs GLOB_TILDE: a leading ~ or ~user is replaced by the
// home directory.
func (l *loader) globTilde(p string) (string, error) {
	if !strings.HasPrefix(p, "~") {
		return p, nil
	}
	rest := p[1:]
	name, tail, _ := strings.Cut(rest, "/")
	home := l.home
	if name != "" {
		h, err := l.lookupDir(name)
		if err != nil {
			return "", err
		}
		home = h
	}
	if tail == "" && !strings.Contains(rest, "/") {
		return home, nil
	}
	return strings.TrimSuffix(home, "/") + "/" + tail, nil
}

// glob mimics glob(3) without flags other than GLOB_TILDE (already applied):
// results sorted, wildcards never match a leading '.', "[!x]" negation, and
// a pattern without wildcards only matches an existing path.
func glob(pattern string) ([]string, error) {
	if !hasGlobMeta(pattern) {
		p := unescapeGlob(pattern)
		if _, err := os.Lstat(p); err != nil {
			return nil, nil
		}
		return []string{p}, nil
	}
	comps := strings.Split(pattern, "/")
	var cur []string
	start := 0
	if strings.HasPrefix(pattern, "/") {
		cur = []string{"/"}
		start = 1
	} else {
		cur = []string{"."}
	}
	for i := start; i < len(comps); i++ {
		c := comps[i]
		last := i == len(comps)-1
		if c == "" {
			continue
		}
		var next []string
		for _, dir := range cur {
			if !hasGlobMeta(c) {
				p := filepath.Join(dir, unescapeGlob(c))
				if _, err := os.Lstat(p); err == nil {
					next = append(next, p)
				}
				continue
			}
			ents, err := os.ReadDir(dir)
			if err != nil {
				continue
			}
			gp := strings.ReplaceAll(c, "[!", "[^")
			for _, e := range ents {
				name := e.Name()
				if strings.HasPrefix(name, ".") && !strings.HasPrefix(c, ".") {
					continue
				}
				ok, err := filepath.Match(gp, name)
				if err != nil {
					return nil, err
				}
				if !ok {
					continue
				}
				p := filepath.Join(dir, name)
				if !last {
					if st, err := os.Stat(p); err != nil || !st.IsDir() {
						continue
					}
				}
				next = append(next, p)
			}
		}
		cur = next
		if len(cur) == 0 {
			return nil, nil
		}
	}
	if !strings.HasPrefix(pattern, "/") {
		for i, p := range cur {
			cur[i] = strings.TrimPrefix(p, "./")
		}
	}
	sort.Strings(cur)
	return cur, nil
}

func hasGlobMeta(s string) bool { return strings.ContainsAny(s, "*?[") }

func unescapeGlob(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// checkConfigPerm is the SSHCONF_CHECKPERM test: the file must be owned by
// root or the user and not writable by others. Debian relaxes the group
// write bit for a user's private group; so do we when the group has the
// user's own gid.
func checkConfigPerm(path string, uid int) error {
	st, err := os.Stat(path)
	if err != nil {
		return nil
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	mode := st.Mode().Perm()
	bad := (sys.Uid != 0 && int(sys.Uid) != uid) || mode&0o002 != 0
	if !bad && mode&0o020 != 0 && int(sys.Gid) != os.Getgid() {
		bad = true
	}
	if bad {
		return &fatalLoadError{fmt.Errorf("bad owner or permissions on %s", path)}
	}
	return nil
}

const cfgWhitespace = " \t\r\n"

// parseLine splits one line like process_config_line_depth: trailing
// whitespace (and \f) is stripped, the keyword is taken with strdelim
// (whitespace, one '=' or a quoted word) and lower-cased, and the remainder
// is split with argv_split, stopping at a token that starts with '#'.
// ok is false for blank lines and comments.
func parseLine(line string) (cfgLine, bool) {
	if i := strings.IndexByte(line, 0); i >= 0 {
		line = line[:i]
	}
	// Strip trailing whitespace; index 0 is never stripped.
	n := len(line)
	for n > 1 && strings.IndexByte(cfgWhitespace+"\f", line[n-1]) >= 0 {
		n--
	}
	line = line[:n]
	if line == "" {
		return cfgLine{}, false
	}
	str := line
	keyword, str, ok := strdelim(str, true)
	if ok && keyword == "" {
		keyword, str, ok = strdelim(str, true)
	}
	if !ok || keyword == "" || keyword[0] == '\n' || keyword[0] == '#' {
		return cfgLine{}, false
	}
	ln := cfgLine{keyword: asciiLower(keyword)}
	if str != "" {
		str = strings.TrimLeft(str, cfgWhitespace)
	}
	ln.rest = str
	if str == "" {
		return ln, true
	}
	ln.args, ln.argErr = argvSplit(str, true)
	return ln, true
}

// strdelim returns the next token of s and the remainder, splitting on
// whitespace, a double-quoted word, or (when splitEquals) one '='. It is
// misc.c's strdelim_internal; ok is false for an unterminated quote. When
// the remainder is exhausted it is "" (C's NULL and "" are not
// distinguished by callers here).
func strdelim(s string, splitEquals bool) (tok, rest string, ok bool) {
	seps := cfgWhitespace + `"`
	if splitEquals {
		seps += "="
	}
	i := strings.IndexAny(s, seps)
	if i < 0 {
		return s, "", true
	}
	if s[i] == '"' {
		// The quote is removed and the token runs to the next quote.
		joined := s[:i] + s[i+1:]
		j := strings.IndexByte(joined[i:], '"')
		if j < 0 {
			return "", "", false
		}
		j += i
		tok = joined[:j]
		rest = joined[j+1:]
		rest = strings.TrimLeft(rest, cfgWhitespace)
		return tok, rest, true
	}
	wspace := splitEquals && s[i] == '='
	tok = s[:i]
	rest = s[i+1:]
	rest = strings.TrimLeft(rest, cfgWhitespace)
	if splitEquals && !wspace && strings.HasPrefix(rest, "=") {
		rest = strings.TrimLeft(rest[1:], cfgWhitespace)
	}
	return tok, rest, true
}

// errInvalidQuotes is argv_split's SSH_ERR_INVALID_FORMAT.
var errInvalidQuotes = errors.New("invalid quotes")

// argvSplit is misc.c's argv_split: tokens separated by spaces or tabs,
// single or double quotes group, and a backslash escapes a quote, a
// backslash, or (outside quotes) a space. Other backslashes are kept.
func argvSplit(s string, terminateOnComment bool) ([]string, error) {
	var args []string
	i := 0
	for i < len(s) {
		if s[i] == ' ' || s[i] == '\t' {
			i++
			continue
		}
		if terminateOnComment && s[i] == '#' {
			break
		}
		var b strings.Builder
		var quote byte
		for ; i < len(s); i++ {
			c := s[i]
			if c == '\\' {
				if i+1 < len(s) && (s[i+1] == '\'' || s[i+1] == '"' || s[i+1] == '\\' || (quote == 0 && s[i+1] == ' ')) {
					i++
					b.WriteByte(s[i])
				} else {
					b.WriteByte(c)
				}
			} else if quote == 0 && (c == ' ' || c == '\t') {
				break
			} else if quote == 0 && (c == '"' || c == '\'') {
				quote = c
			} else if quote != 0 && c == quote {
				quote = 0
			} else {
				b.WriteByte(c)
			}
		}
		args = append(args, b.String())
		if i >= len(s) {
			if quote != 0 {
				return nil, errInvalidQuotes
			}
			break
		}
	}
	return args, nil
}

// asciiLower lower-cases ASCII letters only, like C's tolower in the C
// locale (OpenSSH's lowercase()).
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}
