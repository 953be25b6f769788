package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fleetmux/fleetmux/transport"
)

func TestMain(m *testing.M) {
	// ssh -G and the IdentityFile expansion read the environment (${VAR}).
	os.Setenv("FLEETMUX_TEST_VAR", "/var/fleetmux-test")
	os.Unsetenv("FLEETMUX_UNSET_VAR_X")
	os.Exit(m.Run())
}

// requireSSH returns the OpenSSH client; the corpus tests need it.
func requireSSH(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("ssh")
	if err != nil {
		t.Fatalf("OpenSSH client not installed (apt-get install openssh-client): %v", err)
	}
	return p
}

// corpusConfig is one config of testdata/sshg with the destinations its
// header asks for ("# extra: a b") and those that must fail ("# fail: x").
type corpusConfig struct {
	name    string
	path    string
	extra   []string
	fail    map[string]bool
	aliases []string               // "# aliases: a b"; nil without the header
	expect  map[string][][2]string // "# expect HOST k=v k=\"v w\""
}

// expectKV is one key=value of an "# expect" line; a value with spaces
// is a Go-quoted string, a list is joined with "|".
var expectKV = regexp.MustCompile(`([a-z]+)=("(?:[^"\\]|\\.)*"|\S*)`)

// prepareCorpus copies testdata/sshg into a temporary directory (mode
// 0600, @DIR@ replaced by that directory) and lists its configs.
func prepareCorpus(t *testing.T) (string, []corpusConfig) {
	t.Helper()
	dir := t.TempDir()
	var configs []corpusConfig
	src := filepath.Join("testdata", "sshg")
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		dst := filepath.Join(dir, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		text := strings.ReplaceAll(string(b), "@DIR@", dir)
		if err := os.WriteFile(dst, []byte(text), 0o600); err != nil {
			return err
		}
		if !strings.HasSuffix(p, ".conf") || strings.HasPrefix(rel, "inc.d") {
			return nil
		}
		c := corpusConfig{name: rel, path: dst, fail: map[string]bool{}, expect: map[string][][2]string{}}
		for _, line := range strings.Split(text, "\n") {
			if v, ok := strings.CutPrefix(line, "# aliases:"); ok {
				c.aliases = append([]string{}, strings.Fields(v)...)
			}
			if v, ok := strings.CutPrefix(line, "# expect "); ok {
				host, kvs, _ := strings.Cut(strings.TrimSpace(v), " ")
				for _, m := range expectKV.FindAllStringSubmatch(kvs, -1) {
					val := m[2]
					if strings.HasPrefix(val, `"`) {
						if val, err = strconv.Unquote(val); err != nil {
							return fmt.Errorf("%s: %q: %w", rel, m[0], err)
						}
					}
					c.expect[host] = append(c.expect[host], [2]string{m[1], val})
				}
			}
			if v, ok := strings.CutPrefix(line, "# extra:"); ok {
				for _, f := range strings.Fields(v) {
					c.extra = append(c.extra, strings.Trim(f, `"`))
				}
			}
			if v, ok := strings.CutPrefix(line, "# fail:"); ok {
				for _, f := range strings.Fields(v) {
					c.fail[f] = true
				}
			}
		}
		configs = append(configs, c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir, configs
}

// TestCorpusContract is the contract of the ssh -G corpus: for every
// config, the inventory parser enumerates the aliases of its "# aliases:"
// header, every alias and "# extra:" name resolves through `ssh -G` with
// the fourteen keys parsed and converts to transport settings (or says
// why not), "# fail:" names give ErrConfig, and each "# expect HOST
// key=value ..." line holds (@DIR@ is the corpus copy, @HOME@ the home
// directory ssh expands ~ to: the account's home from the password
// database, which differs from $HOME when HOME is overridden, as CI does).
func TestCorpusContract(t *testing.T) {
	requireSSH(t)
	_, configs := prepareCorpus(t)
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	home := u.HomeDir
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			inv, err := LoadInventory(InventoryOptions{UserConfig: c.path, OnlyUserConfig: true})
			if err != nil {
				// The parser refused the files; OpenSSH must refuse them too.
				if !errors.Is(err, ErrConfig) || len(c.fail) == 0 {
					t.Fatalf("load: %v", err)
				}
				for h := range c.fail {
					out, err := exec.Command("ssh", "-G", "-T", "-F", c.path, "--", h).CombinedOutput()
					if err == nil {
						t.Errorf("load failed but ssh -G %s succeeded:\n%s", h, out)
					}
				}
				return
			}
			if c.aliases != nil {
				if got := inv.Aliases(); !reflect.DeepEqual(got, c.aliases) && !(len(got) == 0 && len(c.aliases) == 0) {
					t.Errorf("aliases = %q, want %q", got, c.aliases)
				}
			} else {
				t.Errorf("no # aliases: header (parser found %q)", inv.Aliases())
			}
			hosts := inv.Aliases()
			for _, e := range c.extra {
				if !inv.Has(e) {
					hosts = append(hosts, e)
				}
			}
			for h := range c.fail {
				if !inv.Has(h) && !contains(c.extra, h) {
					hosts = append(hosts, h)
				}
			}
			if len(hosts) == 0 {
				t.Fatal("no hosts to test")
			}
			for h := range c.expect {
				if !contains(hosts, h) {
					t.Errorf("# expect %s: not an alias or # extra: name", h)
				}
			}
			for _, h := range hosts {
				t.Run(h, func(t *testing.T) {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					r, err := inv.resolve(ctx, sshGRequest{host: h, port: -1})
					if c.fail[h] {
						if !errors.Is(err, ErrConfig) {
							t.Fatalf("err = %v, want ErrConfig", err)
						}
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					for _, k := range []string{"hostname", "port", "user", "identitiesonly", "stricthostkeychecking", "connecttimeout", "serveraliveinterval", "serveralivecountmax"} {
						if r.Map()[k] == "" {
							t.Errorf("%s not parsed from ssh -G", k)
						}
					}
					for _, k := range []string{"userknownhostsfile", "globalknownhostsfile"} {
						if len(r.Map()[k].([]string)) == 0 {
							t.Errorf("%s not parsed from ssh -G", k)
						}
					}
					m := r.Map()
					m["hashknownhosts"] = r.HashKnownHosts
					m["proxycommand"] = r.ProxyCommand
					for _, kv := range c.expect[h] {
						k, want := kv[0], kv[1]
						want = strings.NewReplacer("@DIR@", filepath.Dir(c.path), "@HOME@", home).Replace(want)
						got, ok := m[k]
						if !ok {
							t.Errorf("expect %s: unknown key", k)
							continue
						}
						if l, isList := got.([]string); isList {
							got = strings.Join(l, "|")
						}
						if got != want {
							t.Errorf("%s = %q, want %q", k, got, want)
						}
					}
					if _, err := r.SSHConfigContext(ctx, inv); err != nil && !errors.Is(err, ErrUnsupported) && !errors.Is(err, ErrConfig) {
						t.Errorf("SSHConfig: %v", err)
					}
				})
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// dumpConfig prints a transport config with its hops.
func dumpConfig(c *transport.SSHConfig) string {
	if c == nil {
		return "<nil>"
	}
	cp := *c
	cp.Jumps = nil
	s := fmt.Sprintf("%+v", cp)
	for _, j := range c.Jumps {
		s += "\n   via " + dumpConfig(j)
	}
	return s
}
