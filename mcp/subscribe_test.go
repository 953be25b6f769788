package mcp

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// subClient connects a client that records notifications/resources/updated.
func subClient(t *testing.T, e *testEnv, version string) (*sdk.ClientSession, chan *sdk.ResourceUpdatedNotificationParams) {
	t.Helper()
	updates := make(chan *sdk.ResourceUpdatedNotificationParams, 64)
	st, ct := sdk.NewInMemoryTransports()
	ss, err := e.srv.sdk.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "sub", Version: "0"}, &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
			select {
			case updates <- req.Params:
			default:
			}
		}})
	cs, err := c.Connect(context.Background(), ct, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs, updates
}

func waitUpdate(t *testing.T, updates chan *sdk.ResourceUpdatedNotificationParams, uri string) *sdk.ResourceUpdatedNotificationParams {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case p := <-updates:
			if p.URI == uri {
				return p
			}
		case <-deadline:
			t.Fatalf("no update for %s", uri)
			return nil
		}
	}
}

// noSubs waits until the server holds no subscription (a 2026-07-28
// client unsubscribes by cancelling its subscriptions/listen stream,
// which the server sees a little later).
func noSubs(t *testing.T, e *testEnv) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for e.srv.subs.count() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d subscriptions left", e.srv.subs.count())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPaneSubscribe: with the extensions on, a pane resource can be
// subscribed to, by resources/subscribe (2025-11-25) and by
// subscriptions/listen (2026-07-28, what the SDK's client sends there);
// output in the pane brings notifications/resources/updated (both pane
// templates); unsubscribing and the client's disconnect release the
// subscription; other resources are refused.
func TestPaneSubscribe(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) { testPaneSubscribe(t, version) })
	}
}

func testPaneSubscribe(t *testing.T, version string) {
	e := newEnv(t, withExtensions(0, nil))
	pane := strings.TrimSpace(e.tmux("display-message", "-p", "-t", "fixture", "#{pane_id}"))
	cs, updates := subClient(t, e, version)
	ctx := t.Context()
	for _, uri := range []string{"tmux://panes/" + url.PathEscape(pane), "tmux://panes/" + url.PathEscape(pane) + "/content"} {
		t.Run(uri, func(t *testing.T) {
			if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
				t.Fatalf("subscribe: %v", err)
			}
			// A 2026-07-28 client's Subscribe does not wait for the
			// subscription to be in place.
			for e.srv.subs.count() == 0 {
				time.Sleep(5 * time.Millisecond)
			}
			for i := range 3 {
				e.tmux("send-keys", "-t", pane, "echo out"+string(rune('a'+i)), "Enter")
				if p := waitUpdate(t, updates, uri); p.Meta[MetaMayHaveMissed] != nil {
					t.Fatalf("plain update marked: %v", p.Meta)
				}
			}
			if err := cs.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: uri}); err != nil {
				t.Fatal(err)
			}
			noSubs(t, e)
		})
	}
	if version < "2026-07-28" {
		// (The SDK's client does not report a refused subscriptions/listen.)
		for _, uri := range []string{"tmux://sessions", "tmux://panes/%2599999"} {
			if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err == nil {
				t.Errorf("subscribe %s: no error", uri)
			}
		}
	}
	// A client that leaves releases its subscriptions.
	cs2, _ := subClient(t, e, version)
	if err := cs2.Subscribe(ctx, &sdk.SubscribeParams{URI: "tmux://panes/" + url.PathEscape(pane)}); err != nil {
		t.Fatal(err)
	}
	for e.srv.subs.count() == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	cs2.Close()
	noSubs(t, e)
}

// TestSubscribeNotAnnounced: plain local mode announces no subscribe
// capability and refuses resources/subscribe, as the reference does.
func TestSubscribeNotAnnounced(t *testing.T) {
	e := newEnv(t)
	caps := e.cs.InitializeResult().Capabilities
	if caps.Resources == nil || caps.Resources.Subscribe {
		t.Fatalf("resources capability = %+v", caps.Resources)
	}
	cs, _ := subClient(t, e, "2025-11-25")
	if caps := cs.InitializeResult().Capabilities; caps.Resources == nil || caps.Resources.Subscribe {
		t.Fatalf("2025-11-25: resources capability = %+v", caps.Resources)
	}
	if err := cs.Subscribe(t.Context(), &sdk.SubscribeParams{URI: "tmux://panes/%251"}); err == nil {
		t.Fatal("subscribe accepted in plain local mode")
	}
	e2 := newEnv(t, withExtensions(0, nil))
	if c := e2.cs.InitializeResult().Capabilities; c.Resources == nil || !c.Resources.Subscribe {
		t.Fatalf("--extensions: resources capability = %+v", c.Resources)
	}
}
