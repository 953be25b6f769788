package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetmux/fleetmux/tmux"
	"github.com/fleetmux/fleetmux/tmux/watch"
)

// Pane subscriptions (extensions: fleet mode or --extensions).
// resources/subscribe on a pane resource (tmux://panes/{pane_id} or
// .../content, with ?host= in fleet mode) puts the pane's state line on
// its tmux server's watcher (package watch): a look runs only after a
// pane of that server printed, and notifications/resources/updated goes
// out when the pane's line changed. One subscription per URI, shared by
// the sessions that subscribed to it (the SDK sends the notification to
// each). When the watcher stops (connection dropped, server restarted)
// the subscription polls every second and asks for a new watcher on each
// poll; its next notification carries MetaMayHaveMissed.

// MetaMayHaveMissed is the _meta key of a notifications/resources/updated
// sent after the pane could not be watched for a while (connection
// dropped): output may have come and gone unseen; re-read the resource.
const MetaMayHaveMissed = "fleetmux/may_have_missed"

// subPollEvery is the cadence of a subscription whose watcher is gone.
const subPollEvery = time.Second

// paneStateLine is the look of a subscription: the wait's state line and
// the cursor column, so output on the cursor's row shows too.
const paneStateLine = tmux.PaneStateFormat + "|#{cursor_x}"

// subscriptionTick is how often a watcher serving only subscriptions
// reads its server's counter. An update may come a little later than a
// wait's answer (the budget is one round trip + 50 ms against a wait's
// + 20 ms), and a host that only has subscribed panes wakes half as
// often as one with a wait.
const subscriptionTick = 40 * time.Millisecond

type subscriptions struct {
	s *Server

	mu       sync.Mutex
	closed   bool
	byURI    map[string]*paneSub
	sessions map[*sdk.ServerSession]bool // sessions watched for their end
	wg       sync.WaitGroup              // the subscriptions' loops
}

// paneSub is one subscribed pane resource.
type paneSub struct {
	uri      string
	host     string
	paneID   string
	socket   map[string]string // the URI's parameters (socket_name)
	sessions map[*sdk.ServerSession]bool
	cancel   context.CancelFunc
}

func newSubscriptions(s *Server) *subscriptions {
	return &subscriptions{s: s, byURI: map[string]*paneSub{}, sessions: map[*sdk.ServerSession]bool{}}
}

// paneResource returns the host and parameters of a pane resource URI.
func (s *Server) paneResource(uri string) (host string, p map[string]string, err error) {
	for _, rt := range resourceTemplates() {
		params := rt.match(uri)
		if params == nil {
			continue
		}
		if rt.spec.Name != "get_pane" && rt.spec.Name != "get_pane_content" {
			break
		}
		return s.resourceHost(uri), params, nil
	}
	return "", nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
		Message: "subscriptions are served on pane resources only (tmux://panes/{pane_id} and tmux://panes/{pane_id}/content): " + uri}
}

// resourceHost is the host a resource URI names: its host query
// parameter in fleet mode, otherwise (and by default) this machine.
func (s *Server) resourceHost(uri string) string {
	if !s.opts.Backend.Fleet() {
		return LocalHost
	}
	if _, q, ok := strings.Cut(uri, "?"); ok {
		if h := parseQueryFirst(q)["host"]; h != "" {
			return h
		}
	}
	return LocalHost
}

// look reads the pane's state line once (one tmux client).
func (ps *paneSub) look(ctx context.Context, s *Server) (string, error) {
	srv, err := ps.server(ctx, s)
	if err != nil {
		return "", err
	}
	out, err := srv.Do(ctx, tmux.DisplayMessage(ps.paneID, paneStateLine))
	if err != nil {
		return "", err
	}
	return strings.Join(out, "\n"), nil
}

func (ps *paneSub) server(ctx context.Context, s *Server) (*tmux.Server, error) {
	c := s.newCall(nil, paramsArgs(ps.socket), ps.host, nil, "")
	srv, err := c.Tmux(ctx)
	if err != nil {
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	return srv, nil
}

func paramsArgs(p map[string]string) map[string]any {
	args := map[string]any{}
	if v, ok := p["socket_name"]; ok {
		args["socket_name"] = v
	}
	return args
}

// subscribe is the SDK's SubscribeHandler.
func (m *subscriptions) subscribe(ctx context.Context, req *sdk.SubscribeRequest) error {
	uri := req.Params.URI
	host, p, err := m.s.paneResource(uri)
	if err != nil {
		return err
	}
	ps := &paneSub{uri: uri, host: host, paneID: p["pane_id"], socket: p, sessions: map[*sdk.ServerSession]bool{}}
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// The pane must exist, found as resources/read finds it.
	srv, err := ps.server(lctx, m.s)
	if err == nil {
		_, err = resourcePane(lctx, srv, ps.paneID)
	}
	if re, ok := err.(*resourceError); ok {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: re.msg}
	}
	var first string
	if err == nil {
		first, err = ps.look(lctx, m.s)
	}
	if err != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("Internal error: cannot subscribe to %s: %v", uri, err)}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Internal error: server shutting down"}
	}
	if cur := m.byURI[uri]; cur != nil {
		cur.sessions[req.Session] = true
	} else {
		ps.sessions[req.Session] = true
		lctx, cancel := context.WithCancel(context.Background())
		ps.cancel = cancel
		m.byURI[uri] = ps
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			m.run(lctx, ps, first)
		}()
	}
	if ss := req.Session; ss != nil && !m.sessions[ss] {
		m.sessions[ss] = true
		// The session's subscriptions end with it.
		go func() {
			_ = ss.Wait()
			m.dropSession(ss)
		}()
	}
	return nil
}

// unsubscribe is the SDK's UnsubscribeHandler.
func (m *subscriptions) unsubscribe(_ context.Context, req *sdk.UnsubscribeRequest) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ps := m.byURI[req.Params.URI]; ps != nil {
		delete(ps.sessions, req.Session)
		m.release(ps)
	}
	return nil
}

// release stops ps once no session holds it (under m.mu).
func (m *subscriptions) release(ps *paneSub) {
	if len(ps.sessions) == 0 {
		ps.cancel()
		delete(m.byURI, ps.uri)
	}
}

func (m *subscriptions) dropSession(ss *sdk.ServerSession) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.sessions, ss)
	for _, ps := range m.byURI {
		if ps.sessions[ss] {
			delete(ps.sessions, ss)
			m.release(ps)
		}
	}
}

// close ends every subscription and waits for their loops.
func (m *subscriptions) close() {
	m.mu.Lock()
	m.closed = true
	for _, ps := range m.byURI {
		ps.cancel()
	}
	m.byURI = map[string]*paneSub{}
	m.mu.Unlock()
	m.wg.Wait()
}

// count is the number of live subscriptions (tests).
func (m *subscriptions) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.byURI)
}

// run serves one subscription until ctx ends: on the watcher while one
// runs, polling every second while none does.
func (m *subscriptions) run(ctx context.Context, ps *paneSub, last string) {
	missed := false
	notify := func(line string) {
		if line == last && !missed {
			return
		}
		last = line
		params := &sdk.ResourceUpdatedNotificationParams{URI: ps.uri}
		if missed {
			params.Meta = sdk.Meta{MetaMayHaveMissed: true}
			missed = false
		}
		nctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_ = m.s.sdk.ResourceUpdated(nctx, params)
		cancel()
	}
	for ctx.Err() == nil {
		err := m.watch(ctx, ps, notify)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, errPaneGone) {
			return // told once; nothing more will change
		}
		if errors.Is(err, watch.ErrStopped) {
			missed = true
			m.s.log.Info("subscription lost its watcher; polling until it is back", "uri", ps.uri, "error", err)
		}
		// No watcher: one poll, then try again.
		select {
		case <-ctx.Done():
			return
		case <-time.After(subPollEvery):
		}
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		line, err := ps.look(pctx, m.s)
		cancel()
		if err != nil {
			// The host is unreachable or the pane is gone: the next
			// notification says what may have been missed.
			if ctx.Err() == nil {
				missed = true
			}
			continue
		}
		notify(line)
	}
}

var errPaneGone = errors.New("subscribe: pane gone")

// watch follows ps on its server's watcher until the watcher stops (an
// error wrapping watch.ErrStopped), cannot run (another error), or ctx
// ends.
func (m *subscriptions) watch(ctx context.Context, ps *paneSub, notify func(string)) error {
	srv, err := ps.server(ctx, m.s)
	if err != nil {
		return err
	}
	local := m.s.opts.Backend.Local(ps.host)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	sub, err := m.s.env.Watch.WatchEvery(wctx, ps.host, local, srv, subscriptionTick, []tmux.Cmd{tmux.DisplayMessage(ps.paneID, paneStateLine)})
	cancel()
	if err != nil {
		return err
	}
	defer sub.Close()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-sub.Ready():
			replies, ok, err := sub.Next()
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			if replies[0].Err != nil {
				// The pane is gone (or the server): the resource changed.
				notify("\x00gone")
				return errPaneGone
			}
			notify(strings.Join(replies[0].Lines, "\n"))
		}
	}
}
