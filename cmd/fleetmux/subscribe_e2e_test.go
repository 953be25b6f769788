package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
	cfg, _ := env.WriteFleetFiles(dir, h1)
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
// (the reference's initialize), --extensions does.
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

// BenchmarkSubscribe prints the latency of notifications/resources/updated
// at 40 ms RTT (from the pane's own print to the client's receipt) and the
// CPU of 50 subscribed panes on 3 hosts while they are silent (host side:
// sshd and everything under it and the hosts' tmux server; and fleetmux).
func BenchmarkSubscribe(b *testing.B) {
	for b.Loop() {
		wf := startWatchFleet(b, 40*time.Millisecond, false)
		updates := make(chan string, 1024)
		st, ct := sdk.NewInMemoryTransports()
		if _, err := wf.srv.SDK().Connect(context.Background(), st, nil); err != nil {
			b.Fatal(err)
		}
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "sub-bench", Version: "0"}, &sdk.ClientOptions{
			ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
				select {
				case updates <- req.Params.URI:
				default:
				}
			}}).Connect(context.Background(), ct, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		drain := func(d time.Duration) {
			end := time.After(d)
			for {
				select {
				case <-updates:
				case <-end:
					return
				}
			}
		}

		// Latency over the slow alias; keys typed over the fast one.
		pane := wf.session(b, "wslow")
		uri := paneURI(pane, "wslow")
		if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
			b.Fatal(err)
		}
		var lats []time.Duration
		for i := range 9 {
			word := fmt.Sprintf("lat%d", i)
			wf.call(b, "send_keys", map[string]any{"host": "w", "pane_id": pane, "keys": "clear; sleep 0.8; echo " + word + " $(date +%s%N)"})
			drain(500 * time.Millisecond) // the typed line's own updates
			var got time.Time
			select {
			case <-updates:
				got = time.Now()
			case <-time.After(10 * time.Second):
				fmt.Fprintln(os.Stderr, "no update")
				continue
			}
			time.Sleep(200 * time.Millisecond)
			rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
			if err != nil || len(rr.Contents) == 0 {
				fmt.Fprintf(os.Stderr, "read %s: %v\n", uri, err)
				continue
			}
			for _, line := range strings.Split(rr.Contents[0].Text, "\n") {
				f := strings.Fields(line)
				if len(f) == 2 && f[0] == word {
					if ns, err := strconv.ParseInt(f[1], 10, 64); err == nil {
						lats = append(lats, got.Sub(time.Unix(0, ns)))
					}
				}
			}
		}
		if len(lats) > 0 {
			fmt.Fprintf(os.Stderr, "subscription latency at 40 ms RTT (pane print to notification): p50 %.1f ms (%v)\n", ms(p50(lats)), lats)
		}
		_ = cs.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: uri})

		// Silent subscribed panes on 3 hosts: 3, then 50 in all.
		hosts := []string{"w", "w2", "wslow"}
		hostPids := func() []int { return append([]int{wf.host.PID()}, sshtest.Descendants(wf.host.PID())...) }
		var tmuxPids []int
		_, txt, _ := wf.call(b, "display_message", map[string]any{"host": "w", "format_string": "#{pid}"})
		if pid, err := strconv.Atoi(strings.TrimSpace(txt)); err == nil {
			tmuxPids = append(tmuxPids, pid)
		}
		subscribed := 0
		for _, n := range []int{3, 50} {
			for ; subscribed < n; subscribed++ {
				h := hosts[subscribed%len(hosts)]
				p := wf.session(b, h)
				if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: paneURI(p, h)}); err != nil {
					b.Fatal(err)
				}
			}
			drain(2 * time.Second) // the shells start
			h0, t0, s0, w0 := cpuOf(hostPids()), cpuOf(tmuxPids), selfCPU(), time.Now()
			drain(5 * time.Second)
			h1, t1, s1 := cpuOf(hostPids()), cpuOf(tmuxPids), selfCPU()
			secs := time.Since(w0).Seconds()
			hp, fp := (h1-h0+t1-t0).Seconds()/secs*100, (s1-s0).Seconds()/secs*100
			fmt.Fprintf(os.Stderr, "%d subscribed silent panes on 3 hosts: host side %.2f%% + fleetmux %.2f%% = %.2f%% of a core\n", n, hp, fp, hp+fp)
		}
		cs.Close()
	}
}
