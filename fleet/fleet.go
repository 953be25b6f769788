package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fleetmux/fleetmux/fleet/vocab"
	"github.com/fleetmux/fleetmux/store"
	"github.com/fleetmux/fleetmux/tmux"
	"github.com/fleetmux/fleetmux/transport"
)

// StateStore persists host state (store.Store implements it).
type StateStore interface {
	PutHostState(ctx context.Context, st store.HostState) error
	HostStates(ctx context.Context) (map[string]store.HostState, error)
}

// Options configure a Fleet.
type Options struct {
	Inventory *Inventory
	Selection Selection
	NoLocal   bool
	Safety    HostSafety
	State     StateStore // optional
	SSH       transport.SSHOptions
	Logger    *slog.Logger
	// Local is the runner for LocalHost; nil means transport.NewLocal().
	Local transport.Runner
}

// Fleet routes hosts to runners: LocalHost to this machine, selected
// ssh_config aliases to one pooled SSH runner each (created on first use).
type Fleet struct {
	opts     Options
	log      *slog.Logger
	selected []string
	selSet   map[string]bool
	local    transport.Runner

	mu      sync.Mutex
	remotes map[string]*remote
	closed  bool

	warmCancel context.CancelFunc // ends Warm's dials; set by Warm
	warmWG     sync.WaitGroup
}

// resolveConcurrency bounds the `ssh -G` runs of Statuses.
const resolveConcurrency = 16

// DefaultWarmConcurrency bounds the dials Warm runs at once.
const DefaultWarmConcurrency = 8

// Warm dials the selected hosts in the background (at most concurrency
// at once; <= 0 means DefaultWarmConcurrency) and opens a command channel
// on each by asking its tmux version, so an agent's first call finds a
// warm connection. It returns at once; failures are only recorded in the
// host's state (list_hosts shows them). Close stops it.
func (f *Fleet) Warm(concurrency int) {
	if concurrency <= 0 {
		concurrency = DefaultWarmConcurrency
	}
	f.mu.Lock()
	if f.closed || f.warmCancel != nil {
		f.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.warmCancel = cancel
	f.warmWG.Add(1)
	f.mu.Unlock()
	go func() {
		defer f.warmWG.Done()
		sem := make(chan struct{}, concurrency)
		var wg sync.WaitGroup
		for _, h := range f.selected {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				wg.Wait()
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				r, err := f.Runner(ctx, h)
				if err != nil {
					f.log.Debug("warm-up: host not usable", "host", h, "error", err)
					return
				}
				// The probe dials; a tmux that is missing or fails is
				// said by the first call that needs it.
				var ve *tmux.VersionError
				if _, err := tmux.ProbeVersion(ctx, r, ""); err != nil && !errors.As(err, &ve) {
					f.log.Debug("warm-up: dial failed", "host", h, "error", err)
				}
			}()
		}
		wg.Wait()
	}()
}

type remote struct {
	alias    string
	mu       sync.Mutex
	resolved *Resolved
	cfg      *transport.SSHConfig
	ssh      atomic.Pointer[transport.SSH] // set once, under mu; read without it

	stateMu     sync.Mutex
	connected   bool
	tmuxVersion string
}

// New builds a fleet. Nothing is resolved or dialled until a host is used.
func New(opts Options) (*Fleet, error) {
	if opts.Inventory == nil {
		return nil, errors.New("fleet: no inventory")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f := &Fleet{opts: opts, log: log, selSet: map[string]bool{}, remotes: map[string]*remote{}, local: opts.Local}
	if f.local == nil {
		f.local = transport.NewLocal()
	}
	if !opts.Selection.Empty() {
		f.selected = opts.Inventory.Select(opts.Selection)
	}
	for _, h := range f.selected {
		f.selSet[h] = true
	}
	return f, nil
}

// Remote reports whether any remote host is selected (fleet mode).
func (f *Fleet) Remote() bool { return len(f.selected) > 0 }

// Hosts returns every usable host: LocalHost (unless NoLocal) then the
// selected aliases in inventory order.
func (f *Fleet) Hosts() []string {
	var out []string
	if !f.opts.NoLocal {
		out = append(out, LocalHost)
	}
	return append(out, f.selected...)
}

// IsLocal reports whether host is this machine.
func (f *Fleet) IsLocal(host string) bool { return host == LocalHost && !f.opts.NoLocal }

// Match expands "*", a glob or a plain name to usable hosts.
func (f *Fleet) Match(pattern string) ([]string, error) {
	var out []string
	for _, h := range f.Hosts() {
		if vocab.MatchHost(pattern, h) {
			out = append(out, h)
		}
	}
	if len(out) == 0 {
		if strings.ContainsAny(pattern, "*?[") {
			return nil, fmt.Errorf("no selected host matches %q (selected: %s)", pattern, strings.Join(f.Hosts(), ", "))
		}
		return nil, f.checkHost(pattern)
	}
	return out, nil
}

// checkHost explains why host cannot be used.
func (f *Fleet) checkHost(host string) error {
	if host == LocalHost {
		if f.opts.NoLocal {
			return fmt.Errorf("%w: %q is disabled by --no-local", ErrNotSelected, host)
		}
		return nil
	}
	if f.selSet[host] {
		return nil
	}
	return f.opts.Inventory.Check(f.opts.Selection, host)
}

// Cap returns the safety cap of host, if --host-safety sets one.
func (f *Fleet) Cap(host string) (vocab.Tier, bool) { return f.opts.Safety.Cap(host) }

// Runner returns the runner for host: local execution for LocalHost, the
// host's pooled SSH runner otherwise.
func (f *Fleet) Runner(ctx context.Context, host string) (transport.Runner, error) {
	if err := f.checkHost(host); err != nil {
		return nil, err
	}
	if host == LocalHost {
		return f.local, nil
	}
	r, err := f.remote(ctx, host)
	if err != nil {
		return nil, err
	}
	return &recordingRunner{f: f, r: r}, nil
}

func (f *Fleet) remote(ctx context.Context, host string) (*remote, error) {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil, errors.New("fleet: closed")
	}
	r := f.remotes[host]
	if r == nil {
		r = &remote{alias: host}
		f.remotes[host] = r
	}
	f.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ssh.Load() != nil {
		return r, nil
	}
	res, err := f.opts.Inventory.Resolve(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("resolve ssh_config: %w", err)
	}
	cfg, err := res.SSHConfigContext(ctx, f.opts.Inventory)
	if err != nil {
		return nil, err
	}
	r.resolved, r.cfg = &res, cfg
	r.ssh.Store(transport.NewSSH(cfg, f.opts.SSH))
	return r, nil
}

// recordingRunner runs on a remote host and persists state transitions
// (first connect, connection errors) to the state store.
type recordingRunner struct {
	f *Fleet
	r *remote
}

func (rr *recordingRunner) Run(ctx context.Context, argv []string, stdin []byte) (transport.Result, error) {
	res, err := rr.r.ssh.Load().Run(ctx, argv, stdin)
	rr.f.note(ctx, rr.r, err)
	return res, err
}

// Stream opens a long-lived stream on the host (transport.Streamer):
// the wait watchers run there.
func (rr *recordingRunner) Stream(ctx context.Context) (*transport.Stream, error) {
	st, err := rr.r.ssh.Load().Stream(ctx)
	rr.f.note(ctx, rr.r, err)
	return st, err
}

// note records a connect or a connection failure once per transition.
func (f *Fleet) note(ctx context.Context, r *remote, err error) {
	st := r.ssh.Load().Status()
	r.stateMu.Lock()
	was := r.connected
	now := st.State == transport.SSHConnected
	r.connected = now
	r.stateMu.Unlock()
	if now && !was {
		vctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		if v, verr := tmux.ProbeVersion(vctx, r.ssh.Load(), ""); verr == nil {
			r.stateMu.Lock()
			r.tmuxVersion = v
			r.stateMu.Unlock()
		}
		cancel()
	}
	if f.opts.State == nil || was == now {
		return
	}
	hs := store.HostState{Host: r.alias, State: string(st.State), RTT: st.RTT}
	if now {
		hs.LastConnect = time.Now().UTC()
		r.stateMu.Lock()
		hs.TmuxVersion = r.tmuxVersion
		r.stateMu.Unlock()
	} else if st.LastError != nil {
		hs.LastError = st.LastError.Error()
		hs.LastErrorTime = st.LastErrorAt.UTC()
	} else if err != nil {
		hs.LastError = err.Error()
		hs.LastErrorTime = time.Now().UTC()
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if perr := f.opts.State.PutHostState(sctx, hs); perr != nil {
		f.log.Debug("host state not saved", "host", r.alias, "error", perr)
	}
}

// HostInfo describes one host for list_hosts and `fleetmux hosts`.
type HostInfo struct {
	Host        string
	HostName    string
	Port        int
	User        string
	Cap         vocab.Tier // --host-safety cap, when Capped
	Capped      bool
	State       string // connected, idle, unreachable, local
	TmuxVersion string
	LastError   string
	LastErrorAt time.Time
	LastConnect time.Time
	RTT         time.Duration
}

// Statuses reports every usable host, merging live connection state
// with what the state store remembers from earlier runs. It does no
// network I/O.
func (f *Fleet) Statuses(ctx context.Context) []HostInfo {
	var persisted map[string]store.HostState
	if f.opts.State != nil {
		persisted, _ = f.opts.State.HostStates(ctx)
	}
	hosts := f.Hosts()
	// Resolve every host first, concurrently: a first list_hosts over a
	// large fleet would otherwise run one `ssh -G` after the other.
	type resolution struct {
		res Resolved
		err error
	}
	resolved := make([]resolution, len(hosts))
	var wg sync.WaitGroup
	sem := make(chan struct{}, resolveConcurrency)
	for i, h := range hosts {
		if h == LocalHost {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			resolved[i].res, resolved[i].err = f.opts.Inventory.Resolve(ctx, h)
		}()
	}
	wg.Wait()
	var out []HostInfo
	for i, h := range hosts {
		hi := HostInfo{Host: h}
		hi.Cap, hi.Capped = f.Cap(h)
		if h == LocalHost {
			hi.State = "local"
			out = append(out, hi)
			continue
		}
		if p, ok := persisted[h]; ok {
			hi.State = p.State
			hi.TmuxVersion = p.TmuxVersion
			hi.LastError = p.LastError
			hi.LastErrorAt = p.LastErrorTime
			hi.LastConnect = p.LastConnect
			hi.RTT = p.RTT
		}
		if res, err := resolved[i].res, resolved[i].err; err == nil {
			hi.HostName, hi.User = res.HostName, res.User
			hi.Port, _ = strconv.Atoi(res.Port)
		} else {
			hi.LastError = err.Error()
		}
		f.mu.Lock()
		r := f.remotes[h]
		f.mu.Unlock()
		var ssh *transport.SSH
		if r != nil {
			ssh = r.ssh.Load()
		}
		if ssh != nil {
			st := ssh.Status()
			hi.State = string(st.State)
			if st.RTT > 0 {
				hi.RTT = st.RTT
			}
			if st.LastError != nil {
				hi.LastError = st.LastError.Error()
				hi.LastErrorAt = st.LastErrorAt
			}
			if !st.ConnectedSince.IsZero() {
				hi.LastConnect = st.ConnectedSince
			}
			r.stateMu.Lock()
			if r.tmuxVersion != "" {
				hi.TmuxVersion = r.tmuxVersion
			}
			r.stateMu.Unlock()
		}
		if hi.State == "" {
			hi.State = string(transport.SSHIdle)
		}
		out = append(out, hi)
	}
	return out
}

// Close closes every SSH runner and waits for their goroutines.
func (f *Fleet) Close() error {
	f.mu.Lock()
	f.closed = true
	rs := slices.Collect(maps.Values(f.remotes))
	f.mu.Unlock()
	if f.warmCancel != nil {
		f.warmCancel()
	}
	f.warmWG.Wait()
	for _, r := range rs {
		r.mu.Lock()
		if ssh := r.ssh.Load(); ssh != nil {
			_ = ssh.Close()
		}
		r.mu.Unlock()
	}
	return nil
}
