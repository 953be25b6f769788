// Package sshconfig enumerates the Host aliases of OpenSSH client
// configuration files. It reads files, Includes and globs the way
// OpenSSH's readconf.c does, but it does not resolve any setting: what a
// host's settings are is for `ssh -G` to say.
package sshconfig

import (
	"fmt"
	"io/fs"
	"strings"
)

// Source is one configuration file read at the top level.
type Source struct {
	Path string
	// User marks a user configuration (readconf's SSHCONF_USERCONF):
	// relative Includes are under ~/.ssh (else /etc/ssh) and "~" is
	// allowed in Include paths.
	User bool
	// CheckPerm refuses the file when others can write it, as ssh does for
	// ~/.ssh/config (not for a file given with ssh -F). Included files are
	// always checked.
	CheckPerm bool
	// Required makes a missing file an error wrapping fs.ErrNotExist;
	// otherwise a missing file is read as empty.
	Required bool
}

// Options describes the user whose files are read.
type Options struct {
	Home       string                            // home directory for ~ and ~/.ssh
	UID        int                               // owner allowed by the permission check (with root)
	LookupHome func(user string) (string, error) // home directory of ~user; nil: unknown users
}

// Alias is a literal Host pattern: no wildcard, no negation.
type Alias struct {
	Name string
	File string
	Line int
}

// Config is what Load found.
type Config struct {
	// Aliases are the literal Host patterns in file order, each once (at
	// its first occurrence), whether or not the Host line is reachable.
	Aliases []Alias
	// Files lists every file read, Includes included, in reading order.
	Files []string
	// KnownHostsFiles holds every argument of the UserKnownHostsFile and
	// GlobalKnownHostsFile lines, as written (unquoted, not expanded).
	KnownHostsFiles []string
	// Warnings lists lines that could not be enumerated (a Host line with
	// bad quotes, an invalid Include path); ssh reports them when the
	// host is resolved.
	Warnings []string
}

// Load reads the sources in order, following their Includes. It fails
// like ssh does before reading any host: include loops and depth, files
// that cannot be read, insecure permissions.
func Load(sources []Source, opts Options) (*Config, error) {
	lookup := opts.LookupHome
	if lookup == nil {
		lookup = func(u string) (string, error) { return "", fmt.Errorf("unknown user %s", u) }
	}
	ld := &loader{home: opts.Home, uid: opts.UID, lookupDir: lookup}
	var files []*cfgFile
	for _, src := range sources {
		f, err := ld.loadFile(src.Path, loadFlags{userConf: src.User, checkPerm: src.CheckPerm}, 0)
		if err != nil {
			return nil, err
		}
		if f == nil && src.Required {
			return nil, fmt.Errorf("ssh config %s: %w", src.Path, fs.ErrNotExist)
		}
		files = append(files, f)
	}
	c := &Config{}
	seen := map[*cfgFile]bool{}
	names := map[string]bool{}
	for _, f := range files {
		c.collect(f, seen, names)
	}
	return c, nil
}

// collect adds what f and its Includes hold.
func (c *Config) collect(f *cfgFile, seen map[*cfgFile]bool, names map[string]bool) {
	if f == nil || seen[f] {
		return
	}
	seen[f] = true
	c.Files = append(c.Files, f.path)
	for _, ln := range f.lines {
		switch ln.keyword {
		case "host":
			if ln.argErr != nil {
				c.Warnings = append(c.Warnings, fmt.Sprintf("%s line %d: Host line with %v; skipped", f.path, ln.num, ln.argErr))
				continue
			}
			for _, p := range ln.args {
				if p == "" || strings.HasPrefix(p, "!") || strings.ContainsAny(p, "*?") || names[p] {
					continue
				}
				names[p] = true
				c.Aliases = append(c.Aliases, Alias{Name: p, File: f.path, Line: ln.num})
			}
		case "userknownhostsfile", "globalknownhostsfile":
			c.KnownHostsFiles = append(c.KnownHostsFiles, ln.args...)
		case "include":
			for _, inc := range ln.includes {
				if inc.err != nil {
					c.Warnings = append(c.Warnings, fmt.Sprintf("%s line %d: %v", f.path, ln.num, inc.err))
				}
				for _, child := range inc.files {
					c.collect(child, seen, names)
				}
			}
		}
	}
}
