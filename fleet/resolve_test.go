package fleet

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/fleetmux/fleetmux/transport"
)

func TestMain(m *testing.M) {
	// Both resolvers read the process environment (${VAR} expansion).
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
	name  string
	path  string
	extra []string
	fail  map[string]bool
}

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
		c := corpusConfig{name: rel, path: dst, fail: map[string]bool{}}
		for _, line := range strings.Split(text, "\n") {
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

func fieldsOf(r Resolved) map[string]any {
	m := r.Map()
	m["host"] = r.Alias
	m["hashknownhosts"] = r.HashKnownHosts
	m["proxycommand"] = r.ProxyCommand
	return m
}

func diffResolved(got, want Resolved) string {
	g, w := fieldsOf(got), fieldsOf(want)
	var keys []string
	for k := range w {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		if !reflect.DeepEqual(g[k], w[k]) {
			fmt.Fprintf(&b, "\n  %s: go %q, ssh -G %q", k, g[k], w[k])
		}
	}
	return b.String()
}

// TestResolveMatchesSSHG resolves every host of every corpus config with
// the built-in resolver and with `ssh -G -F config`, and compares them
// keyword by keyword (and the transport settings built from them).
func TestResolveMatchesSSHG(t *testing.T) {
	requireSSH(t)
	_, configs := prepareCorpus(t)
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			base := InventoryOptions{UserConfig: c.path, OnlyUserConfig: true}
			goOpts, sshOpts := base, base
			goOpts.Resolver, sshOpts.Resolver = ResolveGo, ResolveSSH
			goInv, goErr := LoadInventory(goOpts)
			sshInv, sshErr := LoadInventory(sshOpts)
			if goErr != nil || sshErr != nil {
				if goErr == nil || sshErr == nil {
					t.Fatalf("load: go %v, ssh %v", goErr, sshErr)
				}
				// The loader refused the files; OpenSSH must refuse them too.
				for h := range c.fail {
					out, err := exec.Command("ssh", "-G", "-T", "-F", c.path, "--", h).CombinedOutput()
					if err == nil {
						t.Errorf("load failed (%v) but ssh -G %s succeeded:\n%s", goErr, h, out)
					}
				}
				return
			}
			hosts := goInv.Aliases()
			for _, e := range c.extra {
				if !goInv.Has(e) {
					hosts = append(hosts, e)
				}
			}
			for h := range c.fail {
				if !goInv.Has(h) && !contains(c.extra, h) {
					hosts = append(hosts, h)
				}
			}
			if len(hosts) == 0 {
				t.Fatal("no hosts to test")
			}
			for _, h := range hosts {
				t.Run(h, func(t *testing.T) {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					req := goRequest{host: h, port: -1}
					got, gerr := goInv.resolve(ctx, req)
					want, serr := sshInv.resolve(ctx, req)
					if (gerr != nil) != (serr != nil) {
						t.Fatalf("go error %v, ssh -G error %v", gerr, serr)
					}
					if c.fail[h] && gerr == nil {
						t.Fatalf("expected an error, both resolved:\n%+v", got)
					}
					if gerr != nil {
						if !c.fail[h] {
							t.Fatalf("both failed: go %v; ssh -G %v", gerr, serr)
						}
						return
					}
					if d := diffResolved(got, want); d != "" {
						t.Errorf("resolution differs:%s", d)
					}
					gc, gcerr := got.SSHConfigContext(ctx, goInv)
					sc, scerr := want.SSHConfigContext(ctx, sshInv)
					if (gcerr != nil) != (scerr != nil) {
						t.Fatalf("SSHConfig errors: go %v, ssh -G %v", gcerr, scerr)
					}
					if gcerr == nil && !reflect.DeepEqual(gc, sc) {
						t.Errorf("SSHConfig differs:\n go    %s\n ssh-G %s", dumpConfig(gc), dumpConfig(sc))
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
