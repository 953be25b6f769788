package tools

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/fleetmux/fleetmux/tmux"
	"github.com/fleetmux/fleetmux/tmux/watch"
)

// waitSource hands wait_for_text the pane's state and rows each time they
// may have changed.
type waitSource interface {
	next() (pollResult, bool)
	stop()
}

// watchedPolls are wait_for_text's polls made by the tmux server's
// watcher (package watch): the same two commands a poll sends, run only
// after a pane of the server printed something, so a silent pane costs
// no tmux client at all. One more look is made at the deadline, as the
// polling path polls once more there. When the watcher stops
// (connection dropped, server gone) the wait polls for the rest of its
// time.
type watchedPolls struct {
	ctx      context.Context
	sub      *watch.Sub
	b        *boundedTmux
	target   string
	baseline int
	deadline time.Time
	progress func() // nil: the client wants no progress
	every    time.Duration
	// wake, when not 0, makes next hand back a wake result that often
	// while nothing prints, for wait_for_text's input check.
	wake time.Duration

	poll     func() *polls // starts the polling path
	fallback *polls
	final    bool
	seq      int
}

// startWaitSource subscribes the wait to its server's watcher, or, where
// none can run, starts today's polls. wake (0: never) is how often a
// watched wait hands back a wake result while nothing prints (the polls
// hand back results more often than that anyway).
func startWaitSource(ctx context.Context, c *Call, b *boundedTmux, target string, baseline int, interval time.Duration, deadline time.Time, progress func(), wake time.Duration) waitSource {
	poll := func() *polls {
		return startPolls(ctx, c.env.Background, b, target, baseline, min(interval, pollPeriod), deadline)
	}
	if c.env.PollWaits {
		return pollSource{poll()}
	}
	cmds := []tmux.Cmd{tmux.DisplayMessage(target, tmux.PaneStateFormat),
		tmux.CaptureFromRow(target, "#{e|-:"+strconv.Itoa(baseline)+",#{history_size}}")}
	wctx, cancel := context.WithDeadline(ctx, deadline)
	sub, err := c.env.Watch.Watch(wctx, c.Host, c.IsLocal(), b.srv, cmds)
	cancel()
	if err != nil {
		if !errors.Is(err, watch.ErrUnsupported) {
			c.env.Log.Debug("wait_for_text: no watcher; polling", "host", c.Host, "error", err)
		}
		return pollSource{poll()}
	}
	wp := &watchedPolls{ctx: ctx, sub: sub, b: b, target: target, baseline: baseline, deadline: deadline,
		every: max(interval, 50*time.Millisecond), poll: poll, wake: wake}
	if c.deps.WantsProgress() {
		wp.progress = progress
	}
	return wp
}

// watchedHost reports whether a wait on c's host will likely be served by a
// watcher (one ran there and waits are not told to poll).
func watchedHost(c *Call) bool {
	if c.env.PollWaits || c.env.Watch == nil {
		return false
	}
	mode, _ := c.env.Watch.Mode(c.Host)
	return mode == watch.ModeWatch
}

// pollSource is the polling path as a waitSource.
type pollSource struct{ *polls }

func (p *watchedPolls) next() (pollResult, bool) {
	if p.fallback != nil {
		return p.fallback.next()
	}
	if p.final {
		return pollResult{}, false
	}
	end := time.NewTimer(time.Until(p.deadline))
	defer end.Stop()
	// Progress ticks only for a client that asked for progress: a
	// silent wait wakes nobody otherwise.
	var tick <-chan time.Time
	if p.progress != nil {
		t := time.NewTicker(p.every)
		defer t.Stop()
		tick = t.C
	}
	var wake <-chan time.Time
	if p.wake > 0 {
		t := time.NewTimer(p.wake)
		defer t.Stop()
		wake = t.C
	}
	for {
		select {
		case <-p.sub.Ready():
			replies, ok, err := p.sub.Next()
			if err != nil {
				// The watcher stopped: poll for the rest of the wait.
				p.sub.Close()
				p.fallback = p.poll()
				return p.fallback.next()
			}
			if !ok {
				continue
			}
			p.seq++
			st, rows, err := pollReplies(replies[0], replies[1], p.baseline)
			return pollResult{seq: p.seq, st: st, rows: rows, err: err}, true
		case <-tick:
			// The reference reports progress on every poll; a watched wait
			// reports it as often, without polling.
			p.progress()
		case <-wake:
			return pollResult{seq: p.seq, wake: true}, true
		case <-end.C:
			p.final = true
			p.seq++
			if replies, ok := p.finalLook(); ok {
				st, rows, err := pollReplies(replies[0], replies[1], p.baseline)
				return pollResult{seq: p.seq, st: st, rows: rows, err: err}, true
			}
			st, rows, err := p.b.poll(p.ctx, p.target, p.baseline)
			return pollResult{seq: p.seq, st: st, rows: rows, err: err}, true
		case <-p.ctx.Done():
			return pollResult{}, false
		}
	}
}

// finalLookWait bounds how long the deadline's look may take on the
// watcher (a tick, a look and half a round trip) before the wait polls
// instead.
const finalLookWait = time.Second

// finalLook is the deadline's poll made by the watcher: a look asked for
// now, which the looks of other waits ending at the same moment share
// (twenty waits ending together are one tmux client on the host, not
// twenty requests racing for the connection's channels). ok is false
// when the watcher could not give one in time: the caller polls.
func (p *watchedPolls) finalLook() ([]tmux.Reply, bool) {
	// A look that was waiting predates the deadline: the asked one
	// replaces it.
	select {
	case <-p.sub.Ready():
		if _, _, err := p.sub.Next(); err != nil {
			return nil, false
		}
	default:
	}
	p.sub.LookNow()
	t := time.NewTimer(finalLookWait)
	defer t.Stop()
	for {
		select {
		case <-p.sub.Ready():
			replies, ok, err := p.sub.Next()
			if err != nil {
				return nil, false
			}
			if ok {
				return replies, true
			}
		case <-t.C:
			return nil, false
		case <-p.ctx.Done():
			return nil, false
		}
	}
}

func (p *watchedPolls) stop() {
	p.sub.Close()
	if p.fallback != nil {
		p.fallback.stop()
	}
}
