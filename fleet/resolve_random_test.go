package fleet

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// randomLines are the building blocks of the generated configs: block
// openers and settings whose interplay (first value wins, Match on the
// substituted HostName, final pass, ProxyJump vs ProxyCommand) is easy to
// get wrong.
var randomLines = []string{
	"Host a", "Host b c", "Host web*", "Host !b *", "Host ?eb1", "Host *", "Host j1", "Host X.Upper",
	"Match host *.ex.com", "Match originalhost a,web1", "Match !host web1", "Match user root",
	"Match localuser root", "Match all", "Match canonical", "Match final", "Match host b user u1",
	"Match exec \"test %n = c\"", "Match final host *.ex.com",
	"HostName %h.ex.com", "HostName 10.1", "HostName X.Upper", "HostName %%h", "hostname=lower.ex.com",
	"User u1", "User %h", "Port 2200", "Port ssh", "Port=2300",
	"IdentityFile ~/k1", "IdentityFile %d/k2_%h", "IdentityFile \"/a b\"", "IdentitiesOnly yes", "IdentitiesOnly no",
	"IdentityAgent none", "IdentityAgent ~/s.%h", "IdentityAgent SSH_AUTH_SOCK",
	"ProxyJump j1", "ProxyJump none", "ProxyJump u@j2:23", "ProxyJump j1,j2", "ProxyCommand nc %h %p",
	"UserKnownHostsFile ~/kh_%h %d/kh2", "UserKnownHostsFile none", "GlobalKnownHostsFile ~/g none2",
	"StrictHostKeyChecking yes", "StrictHostKeyChecking accept-new", "StrictHostKeyChecking off",
	"ConnectTimeout none", "ConnectTimeout 5", "ConnectTimeout 1m", "ServerAliveInterval 10",
	"ServerAliveInterval none", "ServerAliveCountMax 2", "HostKeyAlias Alias%h", "HashKnownHosts yes",
	"BatchMode yes", "CanonicalizeHostname yes", "CanonicalizeHostname always", "AddressFamily inet",
	"SendEnv LANG", "# comment", "Include @DIR@/inc1.conf", "Include @DIR@/none*.conf",
	"IgnoreUnknown Foo*", "FooBar 1", "CanonicalizeFallbackLocal no", "CanonicalizeMaxDots 0",
	"Match exec \"exit 1\"", "Host b !c", "User \"%u\"", "HostName \"%h\"", "Host=c",
	"ProxyJump ssh://u@j3:2024", "ProxyJump j1 # comment", "HostKeyAlias none",
	"IdentityFile ~/k1", "Match originalhost c exec true", "Match !final",
}

var randomHosts = []string{"a", "b", "c", "web1", "j1", "10.1.2.3", "X.Upper"}

// TestRandomConfigsThroughSSHG resolves generated configs (fixed seed;
// FLEETMUX_SSHG_RANDOM=N runs N configs) through ssh -G: a destination
// either resolves with every key fleet needs parsed, or fails with
// ErrConfig; the transport settings build or fail with an error, never
// a panic; every alias the parser lists is one ssh -G accepts.
func TestRandomConfigsThroughSSHG(t *testing.T) {
	requireSSH(t)
	n := 40
	if v, err := strconv.Atoi(os.Getenv("FLEETMUX_SSHG_RANDOM")); err == nil {
		n = v
	}
	seed := int64(20260501)
	if v, err := strconv.ParseInt(os.Getenv("FLEETMUX_SSHG_SEED"), 10, 64); err == nil {
		seed = v
	}
	rng := rand.New(rand.NewSource(seed))
	dir := t.TempDir()
	inc := "Host c a\n  Port 2121\n  User inc\nMatch host 10.*\n  ConnectTimeout 33\n"
	if err := os.WriteFile(filepath.Join(dir, "inc1.conf"), []byte(inc), 0o600); err != nil {
		t.Fatal(err)
	}
	type job struct {
		path, text string
	}
	var jobs []job
	for i := 0; i < n; i++ {
		var b strings.Builder
		for j, lines := 0, 4+rng.Intn(14); j < lines; j++ {
			b.WriteString(strings.ReplaceAll(randomLines[rng.Intn(len(randomLines))], "@DIR@", dir))
			b.WriteByte('\n')
		}
		p := filepath.Join(dir, fmt.Sprintf("rand%03d.conf", i))
		if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, job{p, b.String()})
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	var mu sync.Mutex
	failures := 0
	for _, j := range jobs {
		wg.Add(1)
		go func(j job) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			report := func(format string, a ...any) {
				mu.Lock()
				defer mu.Unlock()
				failures++
				if failures <= 10 {
					t.Errorf("%s:\n%s\n%s", filepath.Base(j.path), j.text, fmt.Sprintf(format, a...))
				}
			}
			inv, err := LoadInventory(InventoryOptions{UserConfig: j.path, OnlyUserConfig: true})
			if err != nil {
				report("load: %v", err)
				return
			}
			hosts := append(inv.Aliases(), randomHosts...)
			for _, h := range hosts {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				r, err := inv.resolve(ctx, sshGRequest{host: h, port: -1})
				switch {
				case err != nil && !errors.Is(err, ErrConfig):
					report("%s: err %v, want ErrConfig", h, err)
				case err == nil && (r.Alias != h || r.HostName == "" || r.User == "" || r.StrictHostKeyChecking == "" ||
					r.ServerAliveCountMax == "" || len(r.UserKnownHostsFile) == 0):
					report("%s: incomplete ssh -G parse %+v", h, r)
				case err == nil:
					if _, err := r.SSHConfigContext(ctx, inv); err != nil && strings.Contains(err.Error(), "bad ") {
						report("%s: SSHConfig cannot read ssh -G's values: %v", h, err)
					}
				}
				cancel()
			}
		}(j)
	}
	wg.Wait()
	if failures > 0 {
		t.Errorf("%d failures", failures)
	}
}
