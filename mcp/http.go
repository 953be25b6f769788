package mcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
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
	// MaxSessions bounds the MCP sessions open at once (0:
	// DefaultMaxSessions; the daemon has one token, so this is the cap per
	// token). When it is reached, a new session closes the least recently
	// used one that has no request or event stream under way; when every
	// session is busy, it is refused (503 with a JSON-RPC error).
	MaxSessions int
	// MaxBatch bounds the messages of one POSTed JSON-RPC batch (0:
	// DefaultMaxBatch); MaxBodyBytes bounds a request body (0:
	// DefaultMaxBodyBytes).
	MaxBatch     int
	MaxBodyBytes int64
}

// HTTP limits by default.
const (
	DefaultMaxSessions  = 64
	DefaultMaxBatch     = 32
	DefaultMaxBodyBytes = 4 << 20
)

// HTTPHandler serves MCP over streamable HTTP for any number of clients,
// all on one Server: one tool table, one backend (so one pool of SSH
// connections) and one auditor. Each client gets its own
// MCP session (Mcp-Session-Id), which its audit records carry.
//
// In front of the SDK's handler it checks, in this order: the Host header
// against HTTPOptions.Hosts and a present Origin header (403: DNS
// rebinding and cross-site requests), then the bearer token (401).
type HTTPHandler struct {
	s   *Server
	sdk *sdk.StreamableHTTPHandler // sessions: revisions up to 2025-11-25
	// stateless serves the requests that carry no session: every request
	// of revision 2026-07-28 (SEP-2575: no sessions, each request names its
	// revision, client and capabilities in _meta) and an older client's
	// request sent without Mcp-Session-Id (other than initialize).
	stateless *sdk.StreamableHTTPHandler
	auth      bool
	token     [sha256.Size]byte // SHA-256 of the token: equal lengths for the constant-time compare
	hosts     map[string]bool
	remote    bool
	log       *slog.Logger

	maxSessions int
	maxBatch    int
	maxBody     int64

	mu        sync.Mutex
	draining  bool
	streams   map[*context.CancelFunc]struct{} // open GET (server-sent events) streams
	closed    bool
	sessions  map[string]*httpSession // sessions this handler opened, by Mcp-Session-Id
	admitting int                     // session-opening requests under way
}

// httpSession is what the handler knows of one MCP session.
type httpSession struct {
	lastUsed time.Time
	busy     int // requests and event streams under way
}

// HTTPHandler returns the streamable HTTP handler of s. Mount it at the
// MCP endpoint (fleetmux uses /mcp). Drain and Close end it.
func (s *Server) HTTPHandler(o HTTPOptions) *HTTPHandler {
	h := &HTTPHandler{
		s:        s,
		auth:     o.Token != "",
		token:    sha256.Sum256([]byte(o.Token)),
		hosts:    map[string]bool{},
		remote:   len(o.Hosts) == 0,
		log:      s.log,
		streams:  map[*context.CancelFunc]struct{}{},
		sessions: map[string]*httpSession{},

		maxSessions: o.MaxSessions,
		maxBatch:    o.MaxBatch,
		maxBody:     o.MaxBodyBytes,
	}
	if h.maxSessions <= 0 {
		h.maxSessions = DefaultMaxSessions
	}
	if h.maxBatch <= 0 {
		h.maxBatch = DefaultMaxBatch
	}
	if h.maxBody <= 0 {
		h.maxBody = DefaultMaxBodyBytes
	}
	for _, v := range o.Hosts {
		h.hosts[strings.ToLower(v)] = true
	}
	// Every session is served by the same SDK server. The SDK's own DNS
	// rebinding check (a loopback connection must name a loopback Host)
	// stays on; ours is stricter (exact host and port, and Origin).
	h.sdk = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.sdk }, &sdk.StreamableHTTPOptions{
		Logger:              s.log,
		SessionTimeout:      o.SessionIdle,
		MaxRequestBodyBytes: h.maxBody,
	})
	// The SDK serves revision 2026-07-28 only on a stateless handler, and a
	// stateless handler serves no sessions; ServeHTTP picks one per request
	// (route). Both share the SDK server, so the tools, the backend and the
	// auditor are the same whichever revision a client speaks.
	h.stateless = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.sdk }, &sdk.StreamableHTTPOptions{
		Stateless:           true,
		Logger:              s.log,
		MaxRequestBodyBytes: h.maxBody,
	})
	return h
}

// StatelessRevision is the first MCP revision without sessions (SEP-2575):
// a request whose MCP-Protocol-Version is this or later is served
// statelessly.
const StatelessRevision = "2026-07-28"

// metaProtocolVersion is the _meta key in which a request of revision
// 2026-07-28 or later names its revision (SEP-2575).
const metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"

// postInfo is what ServeHTTP learns from a POST's body.
type postInfo struct {
	initialize bool // an initialize request (opens a session)
	listen     bool // a subscriptions/listen request (holds its stream open)
	meta       bool // a request naming its revision in _meta (SEP-2575)
}

// route reports whether r goes to the stateless handler: a request of
// revision 2026-07-28 or later (by its MCP-Protocol-Version header or the
// revision in its _meta), or a POST without Mcp-Session-Id that does not
// initialize a session. Everything else (initialize, requests in a
// session, GET and DELETE of older revisions) goes to the session handler,
// which is how every revision up to 2025-11-25 is served.
func route(r *http.Request, sid string, info postInfo) (stateless bool) {
	if v := r.Header.Get("Mcp-Protocol-Version"); v >= StatelessRevision {
		return true
	}
	if info.meta {
		return true
	}
	return r.Method == http.MethodPost && sid == "" && !info.initialize
}

// httpError writes a short JSON-RPC error object (id null, code -32000)
// with status. Messages never contain the token.
func httpError(w http.ResponseWriter, status int, msg string) {
	httpRPCError(w, status, -32000, msg)
}

func httpRPCError(w http.ResponseWriter, status, code int, msg string) {
	body, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      nil,
		"error":   map[string]any{"code": code, "message": msg},
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
	// Host names are case-insensitive; the SDK's own loopback check is not.
	r.Host = strings.ToLower(r.Host)
	if r.Method != http.MethodGet && h.isDraining() {
		w.Header().Set("Connection", "close")
		httpError(w, http.StatusServiceUnavailable, "Service Unavailable: fleetmux is shutting down")
		return
	}
	var info postInfo
	if r.Method == http.MethodPost {
		var ok bool
		if info, ok = h.readBody(w, r); !ok {
			return
		}
	}
	if r.Method == http.MethodGet || info.listen {
		// A GET (older revisions) or a subscriptions/listen POST (2026-07-28)
		// holds a server-sent events stream open until the client leaves;
		// Drain ends it so that shutdown does not wait for it.
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		if !h.track(&cancel) {
			httpError(w, http.StatusServiceUnavailable, "Service Unavailable: fleetmux is shutting down")
			return
		}
		defer h.untrack(&cancel)
		r = r.WithContext(ctx)
	}
	sid := r.Header.Get("Mcp-Session-Id")
	if route(r, sid, info) {
		// No session: nothing to admit or count against MaxSessions. The
		// SDK opens a session for the request alone and closes it after.
		h.stateless.ServeHTTP(w, r)
		return
	}
	opens := info.initialize && sid == ""
	if opens {
		if !h.admit(w) {
			return
		}
	} else if sid != "" {
		h.use(sid, 1)
		defer h.use(sid, -1)
	}
	h.sdk.ServeHTTP(w, r)
	if opens {
		id := w.Header().Get("Mcp-Session-Id")
		if h.admitted(id) {
			h.log.Info("http: MCP session opened", "mcp_session_id", id, "remote", r.RemoteAddr)
		}
	}
}

// readBody reads a POST's body, bounded by MaxBodyBytes (413 past it),
// refuses a batch of more than MaxBatch messages (400), and puts the body
// back for the SDK. info tells what the body asks for.
func (h *HTTPHandler) readBody(w http.ResponseWriter, r *http.Request) (info postInfo, ok bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			h.log.Warn("http: refused a request body over the limit", "max_bytes", h.maxBody, "remote", r.RemoteAddr)
			httpRPCError(w, http.StatusRequestEntityTooLarge, -32600, "Invalid Request: the request body exceeds "+strconv.FormatInt(h.maxBody, 10)+" bytes")
			return info, false
		}
		httpError(w, http.StatusBadRequest, "Bad Request: reading the request body failed")
		return info, false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	var heads []messageHead
	if t := bytes.TrimSpace(body); len(t) > 0 && t[0] == '[' {
		var elems []json.RawMessage
		if json.Unmarshal(t, &elems) == nil && len(elems) > h.maxBatch {
			h.log.Warn("http: refused a JSON-RPC batch over the limit", "messages", len(elems), "max", h.maxBatch, "remote", r.RemoteAddr)
			httpRPCError(w, http.StatusBadRequest, -32600, "Invalid Request: a batch of "+strconv.Itoa(len(elems))+" messages exceeds the maximum of "+strconv.Itoa(h.maxBatch))
			return info, false
		}
		_ = json.Unmarshal(t, &heads)
	} else {
		heads = make([]messageHead, 1)
		_ = json.Unmarshal(t, &heads[0])
	}
	for _, hd := range heads {
		switch hd.Method {
		case "initialize":
			info.initialize = true
		case "subscriptions/listen":
			info.listen = true
		}
		if hd.Params.Meta[metaProtocolVersion] != nil {
			info.meta = true
		}
	}
	return info, true
}

// messageHead is the part of a JSON-RPC message that routing looks at.
type messageHead struct {
	Method string `json:"method"`
	Params struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	} `json:"params"`
}

// admit makes room for a new session: under MaxSessions it reserves a
// place; at the cap it closes the least recently used idle session, or
// answers 503 when every session is busy.
func (h *HTTPHandler) admit(w http.ResponseWriter) bool {
	h.mu.Lock()
	h.pruneLocked()
	victim := ""
	if len(h.sessions)+h.admitting >= h.maxSessions {
		var oldest time.Time
		for id, st := range h.sessions {
			if st.busy == 0 && (victim == "" || st.lastUsed.Before(oldest)) {
				victim, oldest = id, st.lastUsed
			}
		}
		if victim == "" {
			n := len(h.sessions)
			h.mu.Unlock()
			h.log.Warn("http: refused a new MCP session: every open session is busy", "sessions", n, "max", h.maxSessions)
			w.Header().Set("Retry-After", "5")
			httpError(w, http.StatusServiceUnavailable, "Service Unavailable: "+strconv.Itoa(n)+" MCP sessions are open (the maximum) and all are busy; end one (DELETE with its Mcp-Session-Id) or retry later")
			return false
		}
		delete(h.sessions, victim)
	}
	h.admitting++
	h.mu.Unlock()
	if victim != "" {
		for ss := range h.s.sdk.Sessions() {
			if ss.ID() == victim {
				_ = ss.Close()
				break
			}
		}
		h.log.Info("http: closed the least recently used MCP session to open a new one", "mcp_session_id", victim, "max_sessions", h.maxSessions)
	}
	return true
}

// admitted ends an admission: id is the new session's id ("" when none
// was opened). It reports whether a session was opened.
func (h *HTTPHandler) admitted(id string) bool {
	live := false
	if id != "" {
		for ss := range h.s.sdk.Sessions() {
			if ss.ID() == id {
				live = true
				break
			}
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.admitting--
	if live {
		h.sessions[id] = &httpSession{lastUsed: time.Now()}
	}
	return live
}

// use counts a request (d=1) or its end (d=-1) against a known session.
func (h *HTTPHandler) use(id string, d int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.sessions[id]
	if st == nil {
		return
	}
	st.busy += d
	st.lastUsed = time.Now()
}

// pruneLocked forgets sessions the SDK closed (idle timeout, DELETE).
func (h *HTTPHandler) pruneLocked() {
	live := map[string]bool{}
	for ss := range h.s.sdk.Sessions() {
		live[ss.ID()] = true
	}
	for id := range h.sessions {
		if !live[id] {
			delete(h.sessions, id)
		}
	}
}

// OpenSessions reports how many MCP sessions the handler holds open.
func (h *HTTPHandler) OpenSessions() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pruneLocked()
	return len(h.sessions)
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
