package mcp

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPOptions configure [Server.HTTPHandler].
type HTTPOptions struct {
	// Token is the bearer token every request must carry in its
	// Authorization header. Empty serves without authentication; the
	// caller allows that on a loopback address only.
	Token string
	// Hosts are the Host header values accepted ("127.0.0.1:8765",
	// "localhost:8765"; compared without case). Empty accepts any Host:
	// the server is reachable by other names (--allow-remote).
	Hosts []string
	// SessionIdle closes an MCP session that has sent no request for this
	// long (0: never).
	SessionIdle time.Duration
}

// HTTPHandler serves MCP over streamable HTTP for any number of clients,
// all on one Server: one tool table, one backend (so one pool of SSH
// connections) and one auditor. Each client gets its own
// MCP session (Mcp-Session-Id), which its audit records carry.
//
// In front of the SDK's handler it checks, in this order: the Host header
// against HTTPOptions.Hosts and a present Origin header (403: DNS
// rebinding and cross-site requests), then the bearer token (401).
type HTTPHandler struct {
	s      *Server
	sdk    *sdk.StreamableHTTPHandler
	auth   bool
	token  [sha256.Size]byte // SHA-256 of the token: equal lengths for the constant-time compare
	hosts  map[string]bool
	remote bool
	log    *slog.Logger

	mu       sync.Mutex
	draining bool
	streams  map[*context.CancelFunc]struct{} // open GET (server-sent events) streams
	closed   bool
}

// HTTPHandler returns the streamable HTTP handler of s. Mount it at the
// MCP endpoint (fleetmux uses /mcp). Drain and Close end it.
func (s *Server) HTTPHandler(o HTTPOptions) *HTTPHandler {
	h := &HTTPHandler{
		s:       s,
		auth:    o.Token != "",
		token:   sha256.Sum256([]byte(o.Token)),
		hosts:   map[string]bool{},
		remote:  len(o.Hosts) == 0,
		log:     s.log,
		streams: map[*context.CancelFunc]struct{}{},
	}
	for _, v := range o.Hosts {
		h.hosts[strings.ToLower(v)] = true
	}
	// Every session is served by the same SDK server. The SDK's own DNS
	// rebinding check (a loopback connection must name a loopback Host)
	// stays on; ours is stricter (exact host and port, and Origin).
	h.sdk = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.sdk }, &sdk.StreamableHTTPOptions{
		Logger:         s.log,
		SessionTimeout: o.SessionIdle,
	})
	return h
}

// httpError writes a short JSON-RPC error object (id null) with status.
// Messages never contain the token.
func httpError(w http.ResponseWriter, status int, msg string) {
	body, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      nil,
		"error":   map[string]any{"code": -32000, "message": msg},
	})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.hostOK(r.Host) {
		h.log.Warn("http: refused a request with a foreign Host header (DNS rebinding?)", "host", r.Host, "remote", r.RemoteAddr)
		httpError(w, http.StatusForbidden, "Forbidden: Host header "+quoteHeader(r.Host)+" is not this server's address")
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" && !h.originOK(origin, r.Host) {
		h.log.Warn("http: refused a cross-origin request", "origin", origin, "remote", r.RemoteAddr)
		httpError(w, http.StatusForbidden, "Forbidden: Origin "+quoteHeader(origin)+" is not allowed")
		return
	}
	if h.auth && !h.tokenOK(r.Header.Get("Authorization")) {
		h.log.Warn("http: refused a request without a valid bearer token", "remote", r.RemoteAddr, "authorization_present", r.Header.Get("Authorization") != "")
		w.Header().Set("WWW-Authenticate", `Bearer realm="fleetmux"`)
		httpError(w, http.StatusUnauthorized, "Unauthorized: send the token of fleetmux serve's --token-file as \"Authorization: Bearer TOKEN\"")
		return
	}
	if r.Method == http.MethodGet {
		// A GET holds a server-sent events stream open until the client
		// leaves; Drain ends it so that shutdown does not wait for it.
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		if !h.track(&cancel) {
			httpError(w, http.StatusServiceUnavailable, "Service Unavailable: fleetmux is shutting down")
			return
		}
		defer h.untrack(&cancel)
		r = r.WithContext(ctx)
	} else if h.isDraining() {
		w.Header().Set("Connection", "close")
		httpError(w, http.StatusServiceUnavailable, "Service Unavailable: fleetmux is shutting down")
		return
	}
	h.sdk.ServeHTTP(w, r)
	if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
		if id := w.Header().Get("Mcp-Session-Id"); id != "" {
			h.log.Info("http: MCP session opened", "mcp_session_id", id, "remote", r.RemoteAddr)
		}
	}
}

// hostOK reports whether host is one of the accepted Host values.
func (h *HTTPHandler) hostOK(host string) bool {
	return h.remote || h.hosts[strings.ToLower(host)]
}

// originOK accepts an Origin on a loopback host (a local tool's web UI)
// and, when the server is reachable remotely, the server's own origin.
// "null" (sandboxed pages, file://) and every other site are refused.
func (h *HTTPHandler) originOK(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	if IsLoopbackHost(u.Hostname()) {
		return true
	}
	return h.remote && strings.EqualFold(u.Host, host)
}

// tokenOK compares the bearer token of an Authorization header with the
// server's in constant time (over SHA-256 digests, so the length of the
// token does not show either).
func (h *HTTPHandler) tokenOK(header string) bool {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	return subtle.ConstantTimeCompare(sum[:], h.token[:]) == 1
}

// IsLoopbackHost reports whether host (a name or an IP address, without a
// port) is this machine's loopback: "localhost" or a loopback IP.
func IsLoopbackHost(host string) bool {
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// quoteHeader quotes a header value for an error message, cut to 100
// bytes.
func quoteHeader(v string) string {
	if len(v) > 100 {
		v = v[:100] + "..."
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func (h *HTTPHandler) track(cancel *context.CancelFunc) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.draining {
		return false
	}
	h.streams[cancel] = struct{}{}
	return true
}

func (h *HTTPHandler) untrack(cancel *context.CancelFunc) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.streams, cancel)
}

func (h *HTTPHandler) isDraining() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.draining
}

// Drain starts a shutdown: new requests are answered 503 and the open
// event streams end, while requests under way (tool calls) go on. Call it
// before http.Server.Shutdown, which then waits for those requests only.
func (h *HTTPHandler) Drain() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.draining = true
	for cancel := range h.streams {
		(*cancel)()
	}
}

// Close ends every MCP session still open and then does what the end of
// a stdio session does (delete the paste buffers this process left,
// wait for background work). Call it once, after the HTTP server stopped.
func (h *HTTPHandler) Close() {
	h.Drain()
	h.mu.Lock()
	closed := h.closed
	h.closed = true
	h.mu.Unlock()
	if closed {
		return
	}
	var open []*sdk.ServerSession
	for ss := range h.s.sdk.Sessions() {
		open = append(open, ss)
	}
	for _, ss := range open {
		_ = ss.Close()
	}
	h.s.shutdown()
}
