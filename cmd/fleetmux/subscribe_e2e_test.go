package main

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetmux/fleetmux/mcp"
	"github.com/fleetmux/fleetmux/transport/sshtest"
)

// subClient is the binary under an MCP client that records
// notifications/resources/updated.
type subClient struct {
	*fleetClient
	updates chan *sdk.ResourceUpdatedNotificationParams
}

func startSubClient(t *testing.T, version string, env []string, args ...string) *subClient {
	t.Helper()
	updates := make(chan *sdk.ResourceUpdatedNotificationParams, 256)
	opts := &sdk.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
		select {
		case updates <- req.Params:
		default:
		}
	}}
	cmd := exec.Command(binPath, args...)
	cmd.Env = append(append(os.Environ(), "TMUX=", "TMUX_PANE=", "LIBTMUX_SAFETY=destructive"), env...)
	cmd.Stderr = os.Stderr
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "subscribe-e2e", Version: "1"}, opts).Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return &subClient{fleetClient: &fleetClient{t: t, cs: cs}, updates: updates}
}

// next waits (up to 30 s, a deadline, not a measure) for an update of uri.
func (c *subClient) next(uri string) *sdk.ResourceUpdatedNotificationParams {
	c.t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case p := <-c.updates:
			if p.URI == uri {
				return p
			}
		case <-deadline:
			c.t.Fatalf("no notifications/resources/updated for %s", uri)
			return nil
		}
	}
}

// poke prints in pane until an update of uri arrives that satisfies ok
// (a 2026-07-28 client's subscription is in place only some time after
// Subscribe returned: it sends subscriptions/listen and does not wait).
func (c *subClient) poke(host, pane, uri string, ok func(*sdk.ResourceUpdatedNotificationParams) bool) *sdk.ResourceUpdatedNotificationParams {
	c.t.Helper()
	for i := 0; i < 15; i++ {
		c.ok("send_keys", map[string]any{"host": host, "pane_id": pane, "keys": "echo poke"})
		wait := time.After(2 * time.Second)
	drain:
		for {
			select {
			case p := <-c.updates:
				if p.URI == uri && ok(p) {
					return p
				}
			case <-wait:
				break drain
			}
		}
	}
	c.t.Fatalf("no matching notifications/resources/updated for %s", uri)
	return nil
}

func anyUpdate(*sdk.ResourceUpdatedNotificationParams) bool { return true }

func missedMark(p *sdk.ResourceUpdatedNotificationParams) bool {
	return p.Meta[mcp.MetaMayHaveMissed] == true
}

func (c *subClient) drain() {
	for {
		select {
		case <-c.updates:
		default:
			return
		}
	}
}

func (c *subClient) pane(host, name string) string {
	c.t.Helper()
	var m map[string]any
	decodeInto(c.t, c.ok("create_session", map[string]any{"host": host, "session_name": name}), &m)
	pane, _ := m["active_pane_id"].(string)
	if pane == "" {
		c.t.Fatalf("create_session on %s: no pane: %v", host, m)
	}
	return pane
}

func paneURI(pane, host string) string {
	return "tmux://panes/" + url.PathEscape(pane) + "/content?host=" + host
}

// TestSubscribeEndToEnd: the binary in fleet mode announces
// resources.subscribe; a client subscribed to a pane resource on a real
// sshd host and on this machine gets notifications/resources/updated
// when the pane prints, none after unsubscribing, and after the host's
// connections drop the subscription still brings one, marked as possibly
// having missed output. Both ways of subscribing: resources/subscribe
// (2025-11-25) and subscriptions/listen (2026-07-28).
func TestSubscribeEndToEnd(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) { testSubscribeEndToEnd(t, version) })
	}
}

func testSubscribeEndToEnd(t *testing.T, version string) {
	env := sshtest.New(t)
	h1 := env.StartHost("h1", sshtest.HostOptions{})
	dir := t.TempDir()
	kh := filepath.Join(dir, "known_hosts")
	sshtest.WriteKnownHosts(t, kh, sshtest.KnownHostsOptions{}, h1)
	cfg := filepath.Join(dir, "ssh_config")
	env.WriteSSHConfig(cfg, sshtest.SSHConfigOptions{KnownHostsFile: kh}, h1)
	sock := "fleetmux-test-sub-" + filepath.Base(dir)
	defer exec.Command("tmux", "-L", sock, "kill-server").Run()

	c := startSubClient(t, version, []string{"LIBTMUX_SOCKET=" + sock}, "--ssh-config", cfg, "--hosts", "h*", "--state", filepath.Join(dir, "state.db"))
	if caps := c.cs.InitializeResult().Capabilities; caps.Resources == nil || !caps.Resources.Subscribe {
		t.Fatalf("fleet mode does not announce resources.subscribe: %+v", caps.Resources)
	}
	ctx := context.Background()
	// The pane whose connection drops, made first so that h1's tmux
	// server stays up throughout.
	dropPane := c.pane("h1", "sub-drop")
	for _, host := range []string{"local", "h1"} {
		t.Run(host, func(t *testing.T) {
			c.t = t
			pane := c.pane(host, "sub-"+host)
			defer c.ok("kill_session", map[string]any{"host": host, "session_name": "sub-" + host})
			uri := paneURI(pane, host)
			if err := c.cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
				t.Fatalf("subscribe %s: %v", uri, err)
			}
			if p := c.poke(host, pane, uri, anyUpdate); p.Meta[mcp.MetaMayHaveMissed] != nil {
				t.Errorf("a plain update is marked as missing output: %v", p.Meta)
			}
			// The resource reads the pane on its host.
			rr, err := c.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
			if err != nil || len(rr.Contents) == 0 || !strings.Contains(rr.Contents[0].Text, "poke") {
				t.Fatalf("read %s: %v %v", uri, err, rr)
			}
			if err := c.cs.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: uri}); err != nil {
				t.Fatalf("unsubscribe: %v", err)
			}
			time.Sleep(time.Second) // a 2026-07-28 unsubscribe is a cancellation
			c.drain()
			c.ok("send_keys", map[string]any{"host": host, "pane_id": pane, "keys": "echo after-unsubscribe"})
			// Long enough for a look to have run and notified.
			time.Sleep(2 * time.Second)
			for {
				select {
				case p := <-c.updates:
					if p.URI == uri {
						t.Fatalf("update after unsubscribe: %v", p)
					}
					continue
				default:
				}
				break
			}
		})
	}
	c.t = t

	// The host's connections drop: the subscription survives and its
	// next update says output may have been missed.
	uri := paneURI(dropPane, "h1")
	if err := c.cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	c.poke("h1", dropPane, uri, anyUpdate)
	h1.DropConnections()
	c.poke("h1", dropPane, uri, missedMark)
	// Later output brings plain updates again.
	c.poke("h1", dropPane, uri, func(p *sdk.ResourceUpdatedNotificationParams) bool { return !missedMark(p) })
}

// TestSubscribeCapability: plain local mode announces no subscriptions
// (the anchor's initialize), --extensions does.
func TestSubscribeCapability(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"--extensions"}, true},
	} {
		c := startSubClient(t, "", nil, append([]string{"--state", filepath.Join(dir, "s.db")}, tc.args...)...)
		caps := c.cs.InitializeResult().Capabilities
		got := caps.Resources != nil && caps.Resources.Subscribe
		if got != tc.want {
			t.Errorf("%v: resources.subscribe = %v, want %v", tc.args, got, tc.want)
		}
		c.cs.Close()
	}
}
