// Package watch tells waiters when a tmux server's panes printed
// something, without asking tmux while nothing happens.
//
// The signal is the tmux server's read counter, field rchar of
// /proc/<server pid>/io: the server reads every pane's pty output, so the
// counter grows whenever any pane prints; a tmux client talking to the
// server does not move it (imsg travels by recvmsg, which the counter
// does not count), though some formats do (#{pane_current_command} reads
// /proc). A watcher reads the counter every few milliseconds (open, read,
// close: no tmux client, no fork) and, when it moved, runs one look: the
// tmux commands of every subscriber, as one batched request, whose
// replies each subscriber gets back. What a look itself adds to the
// counter is learned (the smallest growth over two looks in a row), so a
// look does not set off the next one, and growth beyond it during a look
// makes another look.
//
// One watcher serves every subscriber of a tmux server (host and socket):
// locally fleetmux reads /proc itself; on an SSH host a small bash loop
// started on the pooled connection (remote.go) reads it there and pushes
// each look's output back, so a look costs half a round trip instead of
// one and a half. A host that cannot run it (no bash 4, no /proc, a
// server it may not read) keeps polling: Watch says so with
// ErrUnsupported and the caller polls as before.
package watch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/fleetmux/fleetmux/tmux"
	"github.com/fleetmux/fleetmux/transport"
)

// ErrUnsupported: the watcher cannot run for this server; poll instead.
var ErrUnsupported = errors.New("watch: unsupported")

// ErrStopped: the watcher ended (its connection dropped, the tmux server
// went away, the hub closed); the subscriber should poll or subscribe again.
var ErrStopped = errors.New("watch: watcher stopped")

// Modes reported by Hub.Mode.
const (
	ModeWatch = "watch" // a watcher ran for this host
	ModePoll  = "poll"  // the host cannot run one: waits poll
)

// Options tune a Hub; the zero value is the default.
type Options struct {
	// Logger receives watcher events; nil discards them.
	Logger *slog.Logger
	// Linger is how long a watcher without subscribers keeps running, so
	// that a run of waits does not start one each time; 0 means 15 s.
	Linger time.Duration
	// LocalTick and RemoteTick are how often the counter is read while
	// a watcher has subscribers; 0 means 20 ms.
	LocalTick, RemoteTick time.Duration
	// LookTimeout bounds one look; 0 means 5 s.
	LookTimeout time.Duration
	// RetryUnsupported is how long a server found unable to run a
	// watcher is not asked again; 0 means 5 min.
	RetryUnsupported time.Duration
}

// Hub owns the watchers of one fleetmux process, one per tmux server.
type Hub struct {
	opts Options
	log  *slog.Logger

	mu       sync.Mutex
	closed   bool
	watchers map[string]*watcher
	modes    map[string]hostMode // by host
	noWatch  map[string]time.Time
	wg       sync.WaitGroup
}

type hostMode struct {
	mode, why string
}

// NewHub returns a hub; watchers start on first use.
func NewHub(opts Options) *Hub {
	if opts.Linger <= 0 {
		opts.Linger = 15 * time.Second
	}
	if opts.LocalTick <= 0 {
		opts.LocalTick = 20 * time.Millisecond
	}
	if opts.RemoteTick <= 0 {
		opts.RemoteTick = 20 * time.Millisecond
	}
	if opts.LookTimeout <= 0 {
		opts.LookTimeout = 5 * time.Second
	}
	if opts.RetryUnsupported <= 0 {
		opts.RetryUnsupported = 5 * time.Minute
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Hub{opts: opts, log: log, watchers: map[string]*watcher{}, modes: map[string]hostMode{}, noWatch: map[string]time.Time{}}
}

// Mode says how waits on host wait: ModeWatch, ModePoll (with the
// reason), or "" before the first wait there.
func (h *Hub) Mode(host string) (mode, why string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.modes[host]
	return m.mode, m.why
}

// Watch subscribes cmds (tmux commands that each print something; they
// must not change anything) to the server's watcher on host, starting
// the watcher if needed. local says the host is this machine (the runner
// then runs tmux here); otherwise srv.Executor must run through a
// transport.Streamer. The subscriber's first look comes right away;
// later ones each time a pane of the server printed something.
// ErrUnsupported means: poll.
func (h *Hub) Watch(ctx context.Context, host string, local bool, srv *tmux.Server, cmds []tmux.Cmd) (*Sub, error) {
	return h.WatchEvery(ctx, host, local, srv, 0, cmds)
}

// WatchEvery is Watch for a subscriber that needs the counter read only
// every tick (0: the hub's tick, the fastest). A watcher reads it as
// often as its most demanding subscriber needs: a resource subscription
// can be told of output a little later than a wait, and a host whose
// watchers serve only subscriptions then wakes less often.
func (h *Hub) WatchEvery(ctx context.Context, host string, local bool, srv *tmux.Server, tick time.Duration, cmds []tmux.Cmd) (*Sub, error) {
	if len(cmds) == 0 {
		return nil, errors.New("watch: no commands")
	}
	key := host + "\x00" + strings.Join(srv.Prefix(), "\x00")
	for {
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			return nil, ErrStopped
		}
		if until, ok := h.noWatch[key]; ok && time.Now().Before(until) {
			h.mu.Unlock()
			return nil, ErrUnsupported
		}
		w := h.watchers[key]
		if w == nil {
			w = newWatcher(h, key, host, srv)
			h.watchers[key] = w
			h.wg.Add(1)
			go func() {
				defer h.wg.Done()
				w.run(local)
			}()
		}
		h.mu.Unlock()
		select {
		case <-w.started:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if w.startErr != nil {
			return nil, w.startErr
		}
		sub, ok := w.add(cmds, tick)
		if ok {
			return sub, nil
		}
		// It stopped meanwhile (linger ran out, connection lost): a new
		// one starts.
	}
}

// Close stops every watcher and waits for them.
func (h *Hub) Close() {
	h.mu.Lock()
	h.closed = true
	ws := make([]*watcher, 0, len(h.watchers))
	for _, w := range h.watchers {
		ws = append(ws, w)
	}
	h.mu.Unlock()
	for _, w := range ws {
		w.stop(ErrStopped)
	}
	h.wg.Wait()
}

// started records how a watcher's start went, for Mode and the
// unsupported cache.
func (h *Hub) started(w *watcher, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case err == nil:
		h.modes[w.host] = hostMode{mode: ModeWatch}
	case errors.Is(err, ErrUnsupported):
		h.modes[w.host] = hostMode{mode: ModePoll, why: strings.TrimPrefix(err.Error(), ErrUnsupported.Error()+": ")}
		h.noWatch[w.key] = time.Now().Add(h.opts.RetryUnsupported)
		h.log.Info("host cannot run the watcher; waits poll", "host", w.host, "why", err)
	}
}

func (h *Hub) forget(w *watcher) {
	h.mu.Lock()
	if h.watchers[w.key] == w {
		delete(h.watchers, w.key)
	}
	h.mu.Unlock()
}

// Sub is one subscriber: its commands are part of every look.
type Sub struct {
	w    *watcher
	cmds []tmux.Cmd
	tick time.Duration // how often it needs the counter read; 0: the hub's tick

	ready chan struct{} // holds a token while a look is waiting

	mu     sync.Mutex
	look   []tmux.Reply
	has    bool
	err    error
	parked bool // its last look failed: no more looks
	closed bool
}

// Ready is signalled when a look (or the watcher's end) is waiting.
func (s *Sub) Ready() <-chan struct{} { return s.ready }

// Next returns the newest look (replies to the subscriber's commands, in
// order) and whether there was one; err is set once the watcher stopped
// (ErrStopped wrapping the cause) and no look is left.
func (s *Sub) Next() (replies []tmux.Reply, ok bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.has {
		s.has = false
		if s.err != nil {
			s.signal() // the end is still to be read
		}
		return s.look, true, nil
	}
	return nil, false, s.err
}

// LookNow asks for a look at the watcher's next tick whether or not a
// pane printed: a wait's last look at its deadline, which must also see
// what changed without output (a pane killed or resized). Looks asked
// for at once by several subscribers are one look.
func (s *Sub) LookNow() {
	select {
	case s.w.forced <- struct{}{}:
	default:
	}
}

// Close unsubscribes.
func (s *Sub) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	s.w.remove(s)
}

func (s *Sub) deliver(replies []tmux.Reply, failed bool) {
	s.mu.Lock()
	s.look, s.has = replies, true
	if failed {
		s.parked = true
	}
	s.mu.Unlock()
	s.signal()
}

func (s *Sub) end(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
	s.signal()
}

func (s *Sub) signal() {
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// watcher serves the subscribers of one tmux server.
type watcher struct {
	hub  *Hub
	key  string
	host string
	srv  *tmux.Server

	started  chan struct{} // closed once start finished
	startErr error

	mu      sync.Mutex
	subs    []*Sub
	version int           // bumped when subs change
	grew    bool          // a subscriber came since the last plan
	changed chan struct{} // token: subs changed
	forced  chan struct{} // token: a subscriber wants a look now
	idle    *time.Timer
	done    chan struct{}
	err     error
	stopped bool
}

func newWatcher(h *Hub, key, host string, srv *tmux.Server) *watcher {
	cp := *srv
	return &watcher{hub: h, key: key, host: host, srv: &cp, started: make(chan struct{}),
		changed: make(chan struct{}, 1), forced: make(chan struct{}, 1), done: make(chan struct{})}
}

func (w *watcher) add(cmds []tmux.Cmd, tick time.Duration) (*Sub, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return nil, false
	}
	s := &Sub{w: w, cmds: cmds, tick: tick, ready: make(chan struct{}, 1)}
	w.subs = append(w.subs, s)
	w.version++
	w.grew = true
	if w.idle != nil {
		w.idle.Stop()
		w.idle = nil
	}
	w.poke()
	return s, true
}

func (w *watcher) remove(s *Sub) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, x := range w.subs {
		if x == s {
			w.subs = append(w.subs[:i], w.subs[i+1:]...)
			w.version++
			w.poke()
			break
		}
	}
	if len(w.subs) == 0 && !w.stopped && w.idle == nil {
		w.idle = time.AfterFunc(w.hub.opts.Linger, func() {
			w.mu.Lock()
			empty := len(w.subs) == 0
			w.mu.Unlock()
			if empty {
				w.stop(fmt.Errorf("%w: unused", ErrStopped))
			}
		})
	}
}

// poke tells the engine the subscriber set changed (under w.mu).
func (w *watcher) poke() {
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// stop ends the watcher (idempotent): subscribers get err.
func (w *watcher) stop(err error) {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	w.stopped = true
	w.err = err
	subs := w.subs
	w.subs = nil
	if w.idle != nil {
		w.idle.Stop()
	}
	close(w.done)
	w.mu.Unlock()
	w.hub.forget(w)
	for _, s := range subs {
		s.end(err)
	}
}

// lookSet is the subscribers a look covers and their commands, planned
// as one batched request, and how often the counter is read for them.
type lookSet struct {
	version int
	subs    []*Sub
	plan    *tmux.BatchPlan
	tick    time.Duration
	// fresh: a subscriber came since the last plan and wants its first
	// look. A set that only lost subscribers needs no look: those left
	// have theirs.
	fresh bool
}

// current plans a look over the subscribers that still take looks;
// base is the hub's tick for the engine (local or remote).
func (w *watcher) current(base time.Duration) (*lookSet, error) {
	w.mu.Lock()
	ls := &lookSet{version: w.version, fresh: w.grew}
	w.grew = false
	var cmds []tmux.Cmd
	for _, s := range w.subs {
		s.mu.Lock()
		parked := s.parked
		s.mu.Unlock()
		if !parked {
			ls.subs = append(ls.subs, s)
			cmds = append(cmds, s.cmds...)
			t := max(s.tick, base)
			if ls.tick == 0 || t < ls.tick {
				ls.tick = t
			}
		}
	}
	w.mu.Unlock()
	if len(cmds) == 0 {
		return ls, nil
	}
	plan, err := tmux.NewBatchPlan(cmds...)
	if err != nil {
		return nil, err
	}
	ls.plan = plan
	return ls, nil
}

// deliver hands a look's output to its subscribers. It reports whether
// every subscriber got its replies (false: a command failed, those after
// it did not run, and another look is due).
func (w *watcher) deliver(ls *lookSet, out *tmux.Output) bool {
	replies := ls.plan.Replies(w.srv, out)
	all := true
	i := 0
	for _, s := range ls.subs {
		mine := replies[i : i+len(s.cmds)]
		i += len(s.cmds)
		failed, ran := false, true
		for _, r := range mine {
			if !r.Ran {
				ran = false
				break
			}
			if r.Err != nil {
				failed = true
			}
		}
		if !ran && !failed {
			all = false
			continue
		}
		if failed {
			all = false
		}
		s.deliver(mine, failed)
	}
	return all
}

// learner decides when to look from successive counter readings: a look
// is due when the counter is not where the last look left it, plus what
// a look itself adds (learned: the least growth seen across a look;
// unknown until two looks in a row with the same subscribers).
type learner struct {
	last  int64
	valid bool // last holds an expectation
	cost  int64
	known bool
}

// due reports whether reading r calls for a look.
func (l *learner) due(r int64) bool { return !l.valid || r != l.last }

// looked records a look that started at counter before and ended at
// after.
func (l *learner) looked(before, after int64) {
	d := after - before
	if !l.known {
		// The first look teaches a cost that may include output: look
		// once more before trusting it.
		l.cost, l.known, l.valid = d, true, false
		return
	}
	if d < l.cost {
		l.cost = d
	}
	l.last, l.valid = before+l.cost, true
}

// reset forgets the cost (the look changed) and asks for a look.
func (l *learner) reset() { *l = learner{} }

// serverPID asks the server for its pid.
func serverPID(ctx context.Context, srv *tmux.Server) (string, error) {
	out, err := srv.Exec(ctx, tmux.DisplayMessage("", "#{pid}"))
	if err != nil {
		return "", fmt.Errorf("watch: server pid: %w", err)
	}
	lines := out.Lines()
	if out.ExitCode != 0 || len(lines) != 1 || !allDigits(lines[0]) {
		return "", fmt.Errorf("%w: tmux server pid not readable (exit %d)", ErrUnsupported, out.ExitCode)
	}
	return lines[0], nil
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// run starts the engine and serves until stopped.
func (w *watcher) run(local bool) {
	var err error
	if local {
		err = w.runLocal()
	} else if st, ok := streamerOf(w.srv); ok {
		err = w.runRemote(st)
	} else {
		err = fmt.Errorf("%w: the host's runner has no streams", ErrUnsupported)
		w.startFailed(err)
	}
	if err == nil {
		err = ErrStopped
	}
	if !errors.Is(err, ErrStopped) {
		err = fmt.Errorf("%w: %w", ErrStopped, err)
	}
	w.stop(err)
}

// streamerOf is the runner behind srv's executor when it can open
// streams (SSH, and fleet's runners around it).
func streamerOf(srv *tmux.Server) (transport.Streamer, bool) {
	rr, ok := srv.Executor.(interface{ Runner() transport.Runner })
	if !ok {
		return nil, false
	}
	st, ok := rr.Runner().(transport.Streamer)
	return st, ok
}

func (w *watcher) startFailed(err error) {
	w.startErr = err
	w.hub.started(w, err)
	close(w.started)
}

func (w *watcher) startOK() {
	w.hub.started(w, nil)
	close(w.started)
}
