package fleet

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// writeFiles creates files (relative path -> content) under dir, mode 0600.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		content = strings.ReplaceAll(content, "@DIR@", dir)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoadInventoryAliases(t *testing.T) {
	tests := []struct {
		name         string
		files        map[string]string // under a temp dir that is also $HOME
		opts         func(dir string) InventoryOptions
		want         []string
		wantWarnings int
	}{
		{
			name: "order, dedup, wildcards and negations skipped",
			files: map[string]string{"cfg": `
Host b a
Host *.example.com web? !neg c
  HostName x
Host a d
Match host e
Host "quoted name" f
Host local
Host bad;name -dash user@host ssh://u@h
Host=g
  HOST h`},
			opts: func(dir string) InventoryOptions {
				return InventoryOptions{UserConfig: filepath.Join(dir, "cfg"), OnlyUserConfig: true}
			},
			want:         []string{"b", "a", "c", "d", "f", "g", "h"},
			wantWarnings: 6, // "quoted name", local, bad;name, -dash, user@host, ssh://u@h
		},
		{
			name: "includes: absolute glob, relative to ~/.ssh, nested, dot files skipped, inside Match",
			files: map[string]string{
				"cfg": `
Host first
Include @DIR@/conf.d/*.conf
Include rel.conf
Match all
  Include @DIR@/inmatch.conf
Host last`,
				"conf.d/b.conf":       "Host from-b\nInclude @DIR@/conf.d/nested.inc\n",
				"conf.d/a.conf":       "Host from-a\n",
				"conf.d/.hidden.conf": "Host hidden\n",
				"conf.d/nested.inc":   "Host nested\n",
				".ssh/rel.conf":       "Host relative\n",
				"inmatch.conf":        "Host in-match first\n",
			},
			opts: func(dir string) InventoryOptions {
				return InventoryOptions{UserConfig: filepath.Join(dir, "cfg"), OnlyUserConfig: true, home: dir}
			},
			want: []string{"first", "from-a", "from-b", "nested", "relative", "in-match", "last"},
		},
		{
			name: "user config then system config",
			files: map[string]string{
				"user":   "Host u1\nHost shared\n",
				"system": "Host s1 shared\nInclude sys.d/x.conf\n",
				// A relative Include in the system file is under /etc/ssh.
			},
			opts: func(dir string) InventoryOptions {
				return InventoryOptions{UserConfig: filepath.Join(dir, "user"), SystemConfig: filepath.Join(dir, "system")}
			},
			want: []string{"u1", "shared", "s1"},
		},
		{
			name:  "missing default user config is an empty inventory",
			files: map[string]string{},
			opts: func(dir string) InventoryOptions {
				return InventoryOptions{home: dir, OnlyUserConfig: true}
			},
			want: nil,
		},
		{
			name:  "default user config under the home directory",
			files: map[string]string{".ssh/config": "Host home-a\n"},
			opts: func(dir string) InventoryOptions {
				return InventoryOptions{home: dir, SystemConfig: filepath.Join(dir, "none")}
			},
			want: []string{"home-a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, tt.files)
			opts := tt.opts(dir)
			inv, err := LoadInventory(opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := inv.Aliases(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("aliases = %q, want %q", got, tt.want)
			}
			if got := len(inv.Warnings()); got != tt.wantWarnings {
				t.Errorf("warnings = %q, want %d", inv.Warnings(), tt.wantWarnings)
			}
			for _, a := range tt.want {
				if !inv.Has(a) {
					t.Errorf("Has(%q) = false", a)
				}
			}
			if inv.Has(LocalHost) {
				t.Errorf("Has(%q) = true", LocalHost)
			}
		})
	}
}

func TestLoadInventoryErrors(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		mode    os.FileMode // of cfg, when not 0
		opts    func(dir string) InventoryOptions
		wantErr error
	}{
		{
			name: "explicit config missing",
			opts: func(dir string) InventoryOptions {
				return InventoryOptions{UserConfig: filepath.Join(dir, "nope")}
			},
			wantErr: fs.ErrNotExist,
		},
		{
			name:  "include loop",
			files: map[string]string{"cfg": "Include @DIR@/cfg\n"},
			opts: func(dir string) InventoryOptions {
				return InventoryOptions{UserConfig: filepath.Join(dir, "cfg"), OnlyUserConfig: true}
			},
			wantErr: ErrConfig,
		},
		{
			name:  "world-writable default config",
			files: map[string]string{".ssh/config": "Host a\n"},
			mode:  0o666,
			opts: func(dir string) InventoryOptions {
				return InventoryOptions{home: dir, SystemConfig: filepath.Join(dir, "none")}
			},
			wantErr: ErrConfig,
		},
		{
			name:  "world-writable included file",
			files: map[string]string{"cfg": "Include @DIR@/.ssh/config\n", ".ssh/config": "Host a\n"},
			mode:  0o666,
			opts: func(dir string) InventoryOptions {
				return InventoryOptions{UserConfig: filepath.Join(dir, "cfg"), OnlyUserConfig: true}
			},
			wantErr: ErrConfig,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, tt.files)
			if tt.mode != 0 {
				if err := os.Chmod(filepath.Join(dir, ".ssh/config"), tt.mode); err != nil {
					t.Fatal(err)
				}
			}
			opts := tt.opts(dir)
			_, err := LoadInventory(opts)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if !strings.HasPrefix(err.Error(), "fleet: ") {
				t.Errorf("error %q lacks the fleet: prefix", err)
			}
		})
	}
}

func TestResolveAPI(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"cfg": `
Host web1
  HostName web1.example.com
  User deploy
  Port 2200
  IdentityFile ~/.ssh/id_web
  IdentityAgent ~/agent.sock
  ProxyJump jump
  ConnectTimeout 1m
  HostKeyAlias Web1-Key
Host jump
  User hopper
Host broken
  HostName %z.example.com
`})
	inv, err := LoadInventory(InventoryOptions{UserConfig: filepath.Join(dir, "cfg"), OnlyUserConfig: true})
	if err != nil {
		t.Fatal(err)
	}
	home := inv.env.home
	ctx := context.Background()
	if _, err := inv.Resolve(ctx, "nope"); !errors.Is(err, ErrUnknownHost) {
		t.Errorf("unknown alias: err = %v, want ErrUnknownHost", err)
	}
	if _, err := inv.Resolve(ctx, "broken"); !errors.Is(err, ErrConfig) {
		t.Errorf("broken alias: err = %v, want ErrConfig", err)
	}
	r, err := inv.Resolve(ctx, "web1")
	if err != nil {
		t.Fatal(err)
	}
	m := r.Map()
	want := map[string]any{
		"hostname":              "web1.example.com",
		"port":                  "2200",
		"user":                  "deploy",
		"identityfile":          []string{"~/.ssh/id_web"},
		"identitiesonly":        "no",
		"identityagent":         home + "/agent.sock",
		"proxyjump":             "jump",
		"userknownhostsfile":    []string{home + "/.ssh/known_hosts", home + "/.ssh/known_hosts2"},
		"globalknownhostsfile":  []string{"/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"},
		"stricthostkeychecking": "ask",
		"connecttimeout":        "60",
		"serveraliveinterval":   "0",
		"serveralivecountmax":   "3",
		"hostkeyalias":          "web1-key",
	}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("Map() =\n%v\nwant\n%v", m, want)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	wantKeys := append([]string(nil), ResolvedKeys...)
	sort.Strings(wantKeys)
	if !reflect.DeepEqual(keys, wantKeys) {
		t.Errorf("Map keys %q, ResolvedKeys %q", keys, wantKeys)
	}
	// The cache hands out copies.
	r1, _ := inv.Resolve(ctx, "web1")
	r1.IdentityFile[0] = "mutated"
	if r2, _ := inv.Resolve(ctx, "web1"); r2.IdentityFile[0] != "~/.ssh/id_web" {
		t.Errorf("cached result was mutated: %q", r2.IdentityFile)
	}

	cfg, err := r.SSHConfig(inv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Port != 2200 || cfg.User != "deploy" || cfg.ConnectTimeout.Seconds() != 60 ||
		!reflect.DeepEqual(cfg.IdentityFiles, []string{home + "/.ssh/id_web"}) ||
		cfg.IdentityAgent != home+"/agent.sock" || cfg.StrictHostKeyChecking != "ask" ||
		cfg.HostKeyAlias != "web1-key" || cfg.ServerAliveCountMax != 3 {
		t.Errorf("SSHConfig = %s", dumpConfig(cfg))
	}
	if len(cfg.Jumps) != 1 || cfg.Jumps[0].Alias != "jump" || cfg.Jumps[0].User != "hopper" || cfg.Jumps[0].Port != 22 || cfg.Jumps[0].Jumps != nil {
		t.Errorf("Jumps = %s", dumpConfig(cfg))
	}
}

func TestSSHConfigErrors(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"cfg": `
Host cmd
  ProxyCommand nc %h %p
Host loop-a
  ProxyJump loop-b
Host loop-b
  ProxyJump loop-a
Host badhop
  ProxyJump ok,bad;hop
`})
	inv, err := LoadInventory(InventoryOptions{UserConfig: filepath.Join(dir, "cfg"), OnlyUserConfig: true})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		alias   string
		wantErr error  // errors.Is target, or nil
		wantMsg string // substring
	}{
		{"cmd", ErrUnsupported, "ProxyCommand"},
		{"loop-a", nil, "loop via"},
		{"badhop", ErrConfig, "hostname contains invalid characters"},
	}
	for _, tt := range tests {
		t.Run(tt.alias, func(t *testing.T) {
			r, err := inv.Resolve(context.Background(), tt.alias)
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.SSHConfig(inv)
			if err == nil {
				t.Fatal("no error")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) || !strings.HasPrefix(err.Error(), "fleet: ") {
				t.Errorf("err = %q, want it to contain %q", err, tt.wantMsg)
			}
		})
	}
}

// TestUserAndSystemConfig checks the user-plus-system mode (a user file
// other than ~/.ssh/config, paths with spaces and glob characters): ssh -G
// reads both files, the user file first.
func TestUserAndSystemConfig(t *testing.T) {
	requireSSH(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"user name/config": "Host u1\n  User uuser\nHost u2\n  Port 2300\n",
		"sys*tem":          "Host u1 s1\n  User suser\n  Port 2400\nHost *\n  HashKnownHosts yes\n  ServerAliveInterval 17\n",
	})
	inv, err := LoadInventory(InventoryOptions{UserConfig: filepath.Join(dir, "user name/config"), SystemConfig: filepath.Join(dir, "sys*tem")})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := inv.Aliases(), []string{"u1", "u2", "s1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("aliases %q, want %q", got, want)
	}
	want := map[string][2]string{"u1": {"uuser", "2400"}, "u2": {"", "2300"}, "s1": {"suser", "2400"}}
	for _, a := range inv.Aliases() {
		r, err := inv.Resolve(context.Background(), a)
		if err != nil {
			t.Fatal(err)
		}
		if w := want[a]; (w[0] != "" && r.User != w[0]) || r.Port != w[1] || r.HashKnownHosts != "yes" || r.ServerAliveInterval != "17" {
			t.Errorf("%s = %+v", a, r)
		}
	}
}

// TestNoSSH: fleet mode needs the OpenSSH client.
func TestNoSSH(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"cfg": "Host a\n"})
	cfg := filepath.Join(dir, "cfg")
	_, err := LoadInventory(InventoryOptions{UserConfig: cfg, SSHPath: filepath.Join(dir, "no-ssh")})
	if !errors.Is(err, ErrNoSSH) || !strings.HasPrefix(err.Error(), "fleet: fleet mode needs the OpenSSH client") {
		t.Errorf("missing SSHPath: err = %v, want ErrNoSSH", err)
	}
	t.Setenv("PATH", dir)
	_, err = LoadInventory(InventoryOptions{UserConfig: cfg})
	if !errors.Is(err, ErrNoSSH) {
		t.Fatalf("no ssh on PATH: err = %v, want ErrNoSSH", err)
	}
	if want := "fleet: fleet mode needs the OpenSSH client: ssh not found on PATH (install openssh-client)"; err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
}

// TestKnownHostsWithSpaces: ssh -G joins the known-hosts files with
// spaces; paths that contain one come back whole.
func TestKnownHostsWithSpaces(t *testing.T) {
	requireSSH(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"cfg": `Host a
  UserKnownHostsFile "@DIR@/kh dir/%h known" @DIR@/plain "~/sp ace"
  GlobalKnownHostsFile "/etc/ssh/g kh" /etc/ssh/g2
Host b
  UserKnownHostsFile "@DIR@/exists dir/f"
Host c
  GlobalKnownHostsFile @DIR@/other dir/g
`,
		"exists dir/f": "",
		"other dir/g":  "",
	})
	inv, err := LoadInventory(InventoryOptions{UserConfig: filepath.Join(dir, "cfg"), OnlyUserConfig: true})
	if err != nil {
		t.Fatal(err)
	}
	home := inv.env.home
	tests := map[string][2][]string{
		"a": {{dir + "/kh dir/a known", dir + "/plain", home + "/sp ace"}, {"/etc/ssh/g kh", "/etc/ssh/g2"}},
		"b": {{dir + "/exists dir/f"}, {"/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"}},
		// Two configured paths that happen to name an existing path when
		// joined stay two paths: only configured paths are rejoined.
		"c": {{home + "/.ssh/known_hosts", home + "/.ssh/known_hosts2"}, {dir + "/other", "dir/g"}},
	}
	for alias, want := range tests {
		r, err := inv.Resolve(context.Background(), alias)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(r.UserKnownHostsFile, want[0]) || !reflect.DeepEqual(r.GlobalKnownHostsFile, want[1]) {
			t.Errorf("%s: user %q global %q, want %q %q", alias, r.UserKnownHostsFile, r.GlobalKnownHostsFile, want[0], want[1])
		}
	}
}

// TestResolveConcurrent resolves every alias from many goroutines (run
// with -race).
func TestResolveConcurrent(t *testing.T) {
	_, configs := prepareCorpus(t)
	for _, c := range configs {
		if !strings.HasPrefix(c.name, "jump") && !strings.HasPrefix(c.name, "match") {
			continue
		}
		inv, err := LoadInventory(InventoryOptions{UserConfig: c.path, OnlyUserConfig: true})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error)
		aliases := inv.Aliases()
		for i := 0; i < 4; i++ {
			go func() {
				for _, a := range aliases {
					r, err := inv.Resolve(context.Background(), a)
					if err == nil {
						_, err = r.SSHConfig(inv)
						if errors.Is(err, ErrUnsupported) {
							err = nil
						}
					}
					if err != nil {
						done <- err
						return
					}
				}
				done <- nil
			}()
		}
		for i := 0; i < 4; i++ {
			if err := <-done; err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
		}
	}
}
