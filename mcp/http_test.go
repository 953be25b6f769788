package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestIsLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST": true, "localhost.": true, "127.0.0.1": true, "127.1.2.3": true,
		"::1": true, "[::1]": true, "": false, "0.0.0.0": false, "::": false, "192.0.2.1": false,
		"localhost.evil.example": false, "evil.example": false, "127.0.0.1.nip.io": false,
	} {
		if got := IsLoopbackHost(host); got != want {
			t.Errorf("IsLoopbackHost(%q) = %v", host, got)
		}
	}
}

func TestHTTPOriginCheck(t *testing.T) {
	local := &HTTPHandler{hosts: map[string]bool{"127.0.0.1:8765": true}}
	remote := &HTTPHandler{remote: true}
	for _, tt := range []struct {
		h      *HTTPHandler
		origin string
		host   string
		want   bool
	}{
		{local, "http://localhost:6274", "127.0.0.1:8765", true},
		{local, "http://127.0.0.1:8765", "127.0.0.1:8765", true},
		{local, "https://[::1]", "127.0.0.1:8765", true},
		{local, "http://evil.example", "127.0.0.1:8765", false},
		{local, "null", "127.0.0.1:8765", false},
		{local, "file://", "127.0.0.1:8765", false},
		{local, "chrome-extension://abc", "127.0.0.1:8765", false},
		{remote, "https://devbox.example:8765", "devbox.example:8765", true},
		{remote, "https://evil.example", "devbox.example:8765", false},
		{remote, "http://localhost:3000", "devbox.example:8765", true},
	} {
		if got := tt.h.originOK(tt.origin, tt.host); got != tt.want {
			t.Errorf("remote=%v origin %q host %q: %v", tt.h.remote, tt.origin, tt.host, got)
		}
	}
}

func TestHTTPTokenCheck(t *testing.T) {
	srv, err := New(Options{Settings: Settings{Safety: TierMutating, SuppressHistory: true, WaitMax: 30}, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	h := srv.HTTPHandler(HTTPOptions{Token: "s3cret-token-value"})
	defer h.Close()
	for header, want := range map[string]bool{
		"Bearer s3cret-token-value":   true,
		"bearer s3cret-token-value":   true,
		" Bearer  s3cret-token-value": true,
		"Bearer s3cret-token-valu":    false,
		"Bearer s3cret-token-value2":  false,
		"Basic s3cret-token-value":    false,
		"s3cret-token-value":          false,
		"Bearer":                      false,
		"":                            false,
	} {
		if got := h.tokenOK(header); got != want {
			t.Errorf("tokenOK(%q) = %v", header, got)
		}
	}
}

// TestHTTPDrain: Drain ends an open event stream and answers new requests
// with 503, so http.Server.Shutdown does not wait for idle clients.
func TestHTTPDrain(t *testing.T) {
	srv, err := New(Options{Settings: Settings{Safety: TierMutating, SuppressHistory: true, WaitMax: 30}, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	h := srv.HTTPHandler(HTTPOptions{})
	ts := httptest.NewServer(h)
	defer ts.Close()
	defer h.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil)
	// A session (revisions before 2026-07-28) holds a GET event stream.
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: ts.URL, MaxRetries: -1}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	// The client holds a GET stream open; wait until the handler tracks it.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		h.mu.Lock()
		n := len(h.streams)
		h.mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no event stream opened")
		}
	}
	h.Drain()
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	defer scancel()
	done := make(chan struct{})
	go func() {
		ts.Config.Shutdown(sctx)
		close(done)
	}()
	select {
	case <-done:
	case <-sctx.Done():
		t.Fatal("shutdown waited for the open event stream")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/mcp", strings.NewReader("{}")))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("request while draining: %d", rec.Code)
	}
}

// TestHTTPRoute: which requests the stateless handler serves (revision
// 2026-07-28 by header or _meta, or a POST without a session that is not
// initialize) and which the session handler does.
func TestHTTPRoute(t *testing.T) {
	for _, tt := range []struct {
		name, method, version, sid string
		info                       postInfo
		stateless                  bool
	}{
		{"newest POST", "POST", "2026-07-28", "", postInfo{}, true},
		{"newest POST with a session id", "POST", "2026-07-28", "s1", postInfo{}, true},
		{"newest initialize", "POST", "2026-07-28", "", postInfo{initialize: true}, true},
		{"newest GET", "GET", "2026-07-28", "", postInfo{}, true},
		{"newest listen", "POST", "2026-07-28", "", postInfo{listen: true}, true},
		{"later revision", "POST", "2027-01-01", "", postInfo{}, true},
		{"_meta revision, old header", "POST", "2025-06-18", "s1", postInfo{meta: true}, true},
		{"initialize, no header", "POST", "", "", postInfo{initialize: true}, false},
		{"initialize 2025-03-26", "POST", "2025-03-26", "", postInfo{initialize: true}, false},
		{"in a session", "POST", "2025-11-25", "s1", postInfo{}, false},
		{"in a session, no header", "POST", "", "s1", postInfo{}, false},
		{"old revision, no session", "POST", "2025-06-18", "", postInfo{}, true},
		{"no header, no session", "POST", "", "", postInfo{}, true},
		{"GET stream of a session", "GET", "2025-11-25", "s1", postInfo{}, false},
		{"GET without a session", "GET", "", "", postInfo{}, false},
		{"DELETE of a session", "DELETE", "2025-06-18", "s1", postInfo{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, "/mcp", nil)
			if tt.version != "" {
				r.Header.Set("MCP-Protocol-Version", tt.version)
			}
			if got := route(r, tt.sid, tt.info); got != tt.stateless {
				t.Errorf("route = stateless %v, want %v", got, tt.stateless)
			}
		})
	}
}
