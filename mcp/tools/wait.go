package tools

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fleetmux/fleetmux/mcp/pyfmt"
	"github.com/fleetmux/fleetmux/tmux"
)

// Bounds of the wait path (constants.WAIT_* in the surface file).
const (
	waitCallTimeout = 5 * time.Second
	waitCallMin     = 250 * time.Millisecond
	waitTailLines   = 20
	waitTailBytes   = 2000
)

// boundedTmux runs the tmux reads of wait_for_text, each as a child that
// is killed when its budget (the time left until the deadline, at most
// 5 s, at least 0.25 s) or the call's context runs out.
type boundedTmux struct {
	srv      *tmux.Server
	deadline time.Time
}

// pastDeadline is a tmux read of a wait that the wait's own deadline cut
// short: the wait ends as a timeout, not as an unresponsive server.
type pastDeadline struct{ error }

func (e pastDeadline) Unwrap() error { return e.error }

func (b *boundedTmux) budget() time.Duration {
	left := time.Until(b.deadline)
	return max(min(waitCallTimeout, left), waitCallMin)
}

func (b *boundedTmux) lines(ctx context.Context, cmd tmux.Cmd) ([]string, error) {
	var out *tmux.Output
	err := b.bounded(ctx, cmd.Name(), func(cctx context.Context) (err error) {
		out, err = b.srv.Exec(cctx, cmd)
		return err
	})
	if err != nil {
		return nil, err
	}
	if out.ExitCode != 0 {
		return nil, Expectedf("tmux %s failed: %s", cmd.Name(), stderrOrExit(out))
	}
	return out.Lines(), nil
}

// bounded runs one request under the budget; a request that outlives it
// is the unresponsive-server error naming the command name.
func (b *boundedTmux) bounded(ctx context.Context, name string, request func(context.Context) error) error {
	budget := b.budget()
	cctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	err := request(cctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(cctx.Err(), context.DeadlineExceeded) {
			err := Expectedf("tmux %s did not return within %.2fs; the tmux server is unresponsive", name, budget.Seconds())
			if !time.Now().Before(b.deadline) {
				// The read was cut by the wait's own deadline (its budget
				// was the little time left), not by a server that stopped
				// answering: the wait ends as a timeout.
				return pastDeadline{err}
			}
			return err
		}
	}
	return err
}

func (b *boundedTmux) state(ctx context.Context, paneID string) (tmux.PaneState, error) {
	return paneStateOf(b.lines(ctx, tmux.DisplayMessage(paneID, tmux.PaneStateFormat)))
}

// parseHistoryLimit reads #{history_limit} leniently: where capture_since
// refuses a reply that is not a number (parseLimit), a wait reads it as 0.
func parseHistoryLimit(out []string) int {
	n, err := parseLimit(out)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

func (b *boundedTmux) capture(ctx context.Context, paneID string, start int) ([]string, error) {
	return b.lines(ctx, tmux.Capture{Target: paneID, Start: strconv.Itoa(start), Join: true}.Cmd())
}

// pollPeriod is the longest gap between two polls of wait_for_text, and
// maxPollsInFlight how many may be under way at once: over a link with
// delay the polls overlap, so output is seen within about half a round
// trip plus pollPeriod of appearing, not interval plus a round trip and a
// half.
const (
	pollPeriod       = 20 * time.Millisecond
	maxPollsInFlight = 4
)

type pollResult struct {
	seq  int
	st   tmux.PaneState
	rows []string
	err  error
	// wake: no poll, only a turn of the loop for the input check
	// (stop_on_input) of a watched wait.
	wake bool
}

// polls starts b.poll every period (at most maxPollsInFlight at once)
// until the deadline, one more at the deadline, and hands the results
// back as they come; a result older than one already handed back is
// dropped (rows since the entry only grow, so the newer one holds
// everything the older saw), so one slow poll does not hold up the
// others. When the wait ends, the polls under way are left to finish
// (cancelling one would close the SSH command channel it runs on, and
// the next wait would pay for new ones); the server's background group
// owns them until then. They are cancelled only with the call's context.
type polls struct {
	out    chan pollResult
	quit   chan struct{}
	cancel context.CancelFunc
	wg     sync.WaitGroup
	bg     *sync.WaitGroup
	last   int
}

func startPolls(ctx context.Context, bg *sync.WaitGroup, b *boundedTmux, target string, baseline int, period time.Duration, deadline time.Time) *polls {
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	unhook := context.AfterFunc(ctx, cancel)
	p := &polls{
		out: make(chan pollResult, maxPollsInFlight), quit: make(chan struct{}), bg: bg, last: -1,
		cancel: func() { unhook(); cancel() },
	}
	slots := make(chan struct{}, maxPollsInFlight)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for seq := 0; ; seq++ {
			select {
			case slots <- struct{}{}:
			case <-p.quit:
				return
			case <-pctx.Done():
				return
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				st, rows, err := b.poll(pctx, target, baseline)
				select {
				case p.out <- pollResult{seq: seq, st: st, rows: rows, err: err}:
				case <-p.quit: // the wait is over: nobody reads
				}
				<-slots
			}()
			if !time.Now().Before(deadline) {
				return
			}
			// Never wait past the deadline (the reference sleeps the whole
			// interval, so interval=3600 with timeout=8 blocked an hour).
			select {
			case <-p.quit:
				return
			case <-pctx.Done():
				return
			case <-time.After(min(period, time.Until(deadline)+time.Millisecond)):
			}
		}
	}()
	// out is closed once the launcher and every poll are done.
	go func() {
		p.wg.Wait()
		close(p.out)
	}()
	return p
}

// next is the newest result not older than the last one; false when
// none is left.
func (p *polls) next() (pollResult, bool) {
	for r := range p.out {
		if r.seq < p.last {
			continue
		}
		p.last = r.seq
		return r, true
	}
	return pollResult{}, false
}

// stop starts no more polls and hands the ones under way to the
// background group.
func (p *polls) stop() {
	close(p.quit)
	p.bg.Add(1)
	go func() {
		defer p.bg.Done()
		p.wg.Wait()
		p.cancel()
	}()
}

// firstPoll is a poll made by enter's request.
type firstPoll struct {
	ok   bool
	st   tmux.PaneState
	rows []string
}

// firstPollDelay bounds how long enter's request waits before it polls.
const firstPollDelay = 20 * time.Millisecond

// enter reads what wait_for_text starts from: the pane, its state, its
// history limit, its rows from the cursor row down and its visible rows.
// It is one request (after resolving the pane when it is not named by
// its id), which also makes the first poll after min(interval, 20 ms)
// when withFirstPoll:
// the rows from the cursor are read at the same instant as the state,
// and the entry's absolute cursor row is kept in a private pane option
// for the poll (unset at the end of the request).
func (b *boundedTmux) enter(ctx context.Context, paneID, sessionName, sessionID, windowID *string, interval time.Duration, withFirstPoll bool) (target string, st tmux.PaneState, hlimit int, fromCursor, visible []string, first firstPoll, err error) {
	if paneID != nil && tmux.IsPaneID(*paneID) {
		target = *paneID
	} else if target, err = b.resolvePane(ctx, paneID, sessionName, sessionID, windowID); err != nil {
		return
	}
	// The entry reads the cursor row and the rows from it down in one
	// tmux command list, so output arriving meanwhile cannot slip rows
	// printed after the cursor was read into the entry set (they would
	// never count as new).
	cmds := []tmux.Cmd{tmux.ListIDs("pane", ""), tmux.DisplayMessage(target, tmux.PaneStateFormat),
		tmux.DisplayMessage(target, tmux.HistoryLimitFormat), tmux.CaptureFromRow(target, "#{cursor_y}"),
		tmux.Capture{Target: target, Start: "0", Join: true}.Cmd()}
	if withFirstPoll {
		id, idErr := runCommandID()
		if idErr != nil {
			err = Unexpected("RuntimeError", idErr)
			return
		}
		base := "@w_" + id
		cmds = append(cmds, tmux.SetPaneOptionFormat(target, base, "#{e|+:#{history_size},#{cursor_y}}"),
			tmux.Pause(min(interval, firstPollDelay)),
			tmux.DisplayMessage(target, tmux.PaneStateFormat),
			tmux.CaptureFromRow(target, "#{e|-:#{"+base+"},#{history_size}}"),
			tmux.UnsetPaneOption(target, base))
	}
	replies, err := b.batch(ctx, cmds...)
	if err != nil {
		return
	}
	if err = replyFailed("list-panes", replies[0]); err != nil {
		return
	}
	if !inStringList(replies[0].Lines, target) {
		err = &tmux.PaneNotFoundError{ID: target}
		return
	}
	for i, name := range []string{"display-message", "display-message", "capture-pane", "capture-pane"} {
		if err = replyFailed(name, replies[i+1]); err != nil {
			return
		}
	}
	if st, err = paneStateOf(replies[1].Lines, nil); err != nil {
		return
	}
	hlimit = parseHistoryLimit(replies[2].Lines)
	fromCursor, visible = replies[3].Lines, replies[4].Lines
	// A first poll that failed (the pane went away during the pause) is
	// made again by the loop, which reports it.
	if !withFirstPoll {
		return target, st, hlimit, fromCursor, visible, first, nil
	}
	if pst, rows, perr := pollReplies(replies[7], replies[8], st.AbsCursor()); perr == nil {
		first = firstPoll{ok: true, st: pst, rows: rows}
	}
	return target, st, hlimit, fromCursor, visible, first, nil
}

// poll reads the pane's state and its rows from the absolute row
// baseline down, in one request (the start row is computed by tmux from
// the history size it has then); no rows when baseline is below the
// screen.
func (b *boundedTmux) poll(ctx context.Context, target string, baseline int) (tmux.PaneState, []string, error) {
	if !tmux.IsPaneID(target) {
		st, err := b.state(ctx, target)
		if err != nil {
			return st, nil, err
		}
		if belowScreen(baseline, st) {
			return st, []string{}, nil
		}
		rows, err := b.capture(ctx, target, baseline-st.HistorySize)
		return st, rows, err
	}
	replies, err := b.batch(ctx, tmux.DisplayMessage(target, tmux.PaneStateFormat),
		tmux.CaptureFromRow(target, "#{e|-:"+strconv.Itoa(baseline)+",#{history_size}}"))
	if err != nil {
		return tmux.PaneState{}, nil, err
	}
	return pollReplies(replies[0], replies[1], baseline)
}

// pollReplies reads a poll's replies: the pane's state, and its rows
// from the absolute row baseline down (none when baseline is below the
// screen).
func pollReplies(state, rows tmux.Reply, baseline int) (tmux.PaneState, []string, error) {
	if err := replyFailed("display-message", state); err != nil {
		return tmux.PaneState{}, nil, err
	}
	st, err := paneStateOf(state.Lines, nil)
	if err != nil {
		return st, nil, err
	}
	if belowScreen(baseline, st) {
		return st, []string{}, nil
	}
	if err := replyFailed("capture-pane", rows); err != nil {
		return st, nil, err
	}
	return st, rows.Lines, nil
}

// belowScreen reports whether the absolute row baseline is below the
// pane's screen, so there are no rows from it down.
func belowScreen(baseline int, st tmux.PaneState) bool {
	return baseline-st.HistorySize >= st.PaneHeight
}

// batch is lines for several commands sent as one request, under the
// same budget.
func (b *boundedTmux) batch(ctx context.Context, cmds ...tmux.Cmd) (replies []tmux.Reply, err error) {
	err = b.bounded(ctx, cmds[0].Name(), func(cctx context.Context) (err error) {
		replies, err = b.srv.Batch(cctx, cmds...)
		return err
	})
	return replies, err
}

// replyFailed is lines' error for a failed command of a batch.
func replyFailed(name string, r tmux.Reply) error {
	if r.Err != nil || !r.Ran {
		if !r.Ran {
			return Expectedf("tmux %s failed: not run", name)
		}
		return Expectedf("tmux %s failed: %s", name, replyErrText(r))
	}
	return nil
}

// resolvePane applies the reference's target precedence through bounded listings.
func (b *boundedTmux) resolvePane(ctx context.Context, paneID, sessionName, sessionID, windowID *string) (string, error) {
	if paneID != nil {
		rows, err := b.lines(ctx, tmux.ListIDs("pane", ""))
		if err != nil {
			return "", err
		}
		if !inStringList(rows, *paneID) {
			return "", &tmux.PaneNotFoundError{ID: *paneID}
		}
		return *paneID, nil
	}
	if windowID != nil {
		rows, err := b.lines(ctx, tmux.ListIDs("window", ""))
		if err != nil {
			return "", err
		}
		n := 0
		for _, r := range rows {
			if r == *windowID {
				n++
			}
		}
		switch {
		case n == 0:
			return "", &tmux.NotFoundError{Key: "window_id", ID: *windowID, ListCmd: "list-windows", Extra: "('-a',)"}
		case n > 1:
			return "", &tmux.AmbiguousError{Count: n, Key: "window_id", Value: *windowID}
		}
		return b.firstPane(ctx, *windowID)
	}
	sid, err := b.resolveSession(ctx, sessionName, sessionID)
	if err != nil {
		return "", err
	}
	windows, err := b.lines(ctx, tmux.ListIDs("window", sid))
	if err != nil {
		return "", err
	}
	if len(windows) == 0 {
		return "", &tmux.NoWindowsError{}
	}
	return b.firstPane(ctx, windows[0])
}

func (b *boundedTmux) resolveSession(ctx context.Context, name, id *string) (string, error) {
	switch {
	case id != nil:
		rows, err := b.lines(ctx, tmux.ListIDs("session", ""))
		if err != nil {
			return "", err
		}
		if !inStringList(rows, *id) {
			return "", &tmux.NotFoundError{Key: "session_id", ID: *id, ListCmd: "list-sessions"}
		}
		return *id, nil
	case name != nil:
		rows, err := b.lines(ctx, tmux.ListSessionsFormat("#{session_name}\t#{session_id}"))
		if err != nil {
			return "", err
		}
		for _, r := range rows {
			n, sid, _ := strings.Cut(r, "\t")
			if n == *name {
				return sid, nil
			}
		}
		return "", &tmux.NotFoundError{Key: "session_name", ID: *name, ListCmd: "list-sessions"}
	}
	rows, err := b.lines(ctx, tmux.ListIDs("session", ""))
	if err != nil {
		return "", err
	}
	if len(rows) == 0 {
		return "", &tmux.NotFoundError{Key: "session", ID: "(any)", ListCmd: "list-sessions"}
	}
	return rows[0], nil
}

func (b *boundedTmux) firstPane(ctx context.Context, windowID string) (string, error) {
	rows, err := b.lines(ctx, tmux.ListIDs("pane", windowID))
	if err != nil {
		return "", err
	}
	if len(rows) == 0 {
		return "", &tmux.PaneNotFoundError{}
	}
	return rows[0], nil
}

// inStringList reports whether s is in list.
func inStringList(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// compileWaitPatterns compiles one pattern list (literal unless regex;
// case-insensitive unless matchCase). A bad regex is also sent to the
// client as a warning.
func compileWaitPatterns(ctx context.Context, c *Call, values []string, label string, regex, matchCase bool) ([]*regexp.Regexp, error) {
	out := make([]*regexp.Regexp, 0, len(values))
	for _, v := range values {
		if v == "" {
			return nil, Expectedf("%s pattern must be a non-empty string", label)
		}
		re, err := compileUserPattern(v, regex, matchCase)
		if err != nil {
			msg := "Invalid regex pattern: " + err.Error()
			_ = c.deps.Warn(ctx, msg)
			return nil, Expectedf("%s", msg)
		}
		out = append(out, re)
	}
	return out, nil
}

// compileUserPattern builds the matcher for a user pattern. Go's RE2
// syntax stands in for Python's re: error texts differ, and constructs
// RE2 lacks (lookaround, backreferences) are refused.
func compileUserPattern(p string, regex, matchCase bool) (*regexp.Regexp, error) {
	if !regex {
		p = regexp.QuoteMeta(p)
	}
	// Compile the pattern as given first so an error quotes the caller's
	// text, not the case-folding flag added below.
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, regexErrorText(err)
	}
	if matchCase {
		return re, nil
	}
	if re, err = regexp.Compile("(?i)" + p); err != nil {
		return nil, regexErrorText(err)
	}
	return re, nil
}

// regexErrorText strips Go's "error parsing regexp: " prefix so the text
// after "Invalid regex pattern: " names the problem directly.
func regexErrorText(err error) error {
	return errors.New(strings.TrimPrefix(err.Error(), "error parsing regexp: "))
}

// firstPatternHit returns the index of the first pattern that matches any of
// lines and the lines it matches.
func firstPatternHit(res []*regexp.Regexp, lines []string) (int, []string, bool) {
	for i, re := range res {
		var hits []string
		for _, l := range lines {
			if re.MatchString(l) {
				hits = append(hits, l)
			}
		}
		if len(hits) > 0 {
			return i, hits, true
		}
	}
	return 0, nil, false
}

// waitForTextArgs are wait_for_text's arguments. Patterns is nil when
// the argument is absent or null and non-nil (maybe empty) when a list
// was given, as Args.Strings returns it.
type waitForTextArgs struct {
	PaneID, SessionName, SessionID, WindowID *string
	Interval, Timeout                        *float64
	Patterns, Stop                           []string
	Regex, MatchCase, StopOnInput            bool
}

// waitForText polls a pane for rows written after the call started.
func waitForText(ctx context.Context, c *Call, a waitForTextArgs) (any, error) {
	ceiling := waitCeiling(c)
	interval, timeout := 0.05, 8.0
	if f := a.Interval; f != nil {
		interval = *f
	}
	if f := a.Timeout; f != nil {
		timeout = *f
	}
	if interval < 0.01 {
		return nil, Expectedf("interval must be at least 0.01 s (received %s)", pyfmt.Float(interval))
	}
	if timeout <= 0 {
		return nil, Expectedf("timeout must be positive (received %s)", pyfmt.Float(timeout))
	}
	patterns := a.Patterns
	patternsGiven := patterns != nil
	if patternsGiven && len(patterns) == 0 {
		return nil, Expectedf("patterns must be a non-empty list, or null to wait for any new output")
	}
	effective := min(timeout, ceiling)
	regex, matchCase := a.Regex, a.MatchCase
	success, err := compileWaitPatterns(ctx, c, patterns, "patterns", regex, matchCase)
	if err != nil {
		return nil, err
	}
	stop, err := compileWaitPatterns(ctx, c, a.Stop, "stop", regex, matchCase)
	if err != nil {
		return nil, err
	}
	srv := c.srv

	start := time.Now()
	deadline := start.Add(durSeconds(effective))
	b := &boundedTmux{srv: srv, deadline: deadline}
	// Where a watcher serves the host, its first look replaces the first
	// poll the entry request would make after a pause (which held one of
	// the connection's channels for the pause).
	target, entry, hlimit, entryRows, visible, first, err := b.enter(ctx, a.PaneID, a.SessionName, a.SessionID, a.WindowID, durSeconds(interval), !watchedHost(c))
	if err != nil {
		return nil, err
	}
	baselineAbs := entry.AbsCursor()
	seen := make(map[string]bool, len(entryRows))
	for _, r := range entryRows {
		seen[r] = true
	}
	_, _, stale := firstPatternHit(success, visible)

	var (
		matched      []string
		outcome      = "timeout"
		matchedIndex *int
		sawNew       bool
		warnedBand   bool
		sawAlternate = entry.AlternateOn
		lastRows     []string
	)
	var input *inputCheck
	if c.env.Extended && a.StopOnInput {
		input = &inputCheck{c: c, b: b, target: target}
	}
	var polls waitSource
	progress := func() {
		elapsed := time.Since(start).Seconds()
		_ = c.deps.Progress(ctx, elapsed, effective, fmt.Sprintf("Waiting on pane %s: %.1fs elapsed, %.1fs left", target, elapsed, max(effective-elapsed, 0)))
	}
	woke := false
loop:
	for {
		if !woke {
			progress()
		}
		woke = false

		st, rows := first.st, first.rows
		if !first.ok {
			if polls == nil {
				polls = startWaitSource(ctx, c, b, target, baselineAbs, durSeconds(interval), deadline, progress, input.wake())
				defer polls.stop()
			}
			r, more := polls.next()
			if !more {
				break
			}
			if r.wake {
				if input.waiting(ctx) {
					outcome = "input"
					break loop
				}
				woke = true
				continue
			}
			if r.err != nil {
				if errors.As(r.err, new(pastDeadline)) {
					break // a poll cut by the deadline: the wait timed out
				}
				return nil, r.err
			}
			st, rows = r.st, r.rows
		}
		first.ok = false
		if err := lifecycleChanged(target, st, entry.PanePid); err != nil {
			return nil, err
		}
		if st.AlternateOn {
			sawAlternate = true
		}
		if st.HistorySize < entry.HistorySize && st.PaneHeight <= entry.PaneHeight {
			return nil, Expectedf("pane %s history shrank below entry baseline (history_size %d -> %d); baseline anchor lost \u2014 re-arm wait_for_text or use wait_for_channel for deterministic synchronization", target, entry.HistorySize, st.HistorySize)
		}
		if !warnedBand && hlimit > 0 && st.HistorySize >= trimRiskFloor(hlimit) {
			_ = c.deps.Warn(ctx, fmt.Sprintf("pane %s is polling in the history-limit trim-risk band (history_size %d / history_limit %d); wait_for_text correctness is best-effort here. For deterministic synchronization use wait_for_channel.", target, st.HistorySize, hlimit))
			warnedBand = true
		}
		lastRows = rows
		var fresh []string
		for _, r := range rows {
			if !seen[r] {
				fresh = append(fresh, r)
			}
		}
		if len(fresh) > 0 {
			sawNew = true
		}

		if !st.AlternateOn {
			if i, hits, ok := firstPatternHit(stop, fresh); ok {
				matchedIndex, matched, outcome = &i, hits, "stopped"
				break loop
			}
			if i, hits, ok := firstPatternHit(success, fresh); ok {
				matchedIndex, matched, outcome = &i, hits, "matched"
				break loop
			}
			if len(success) == 0 && len(fresh) > 0 {
				w, wb := waitTailLines, waitTailBytes
				matched, outcome = limitTail(fresh, &w, &wb).lines, "any_output"
				break loop
			}
		}
		if input.waiting(ctx) {
			outcome = "input"
			break loop
		}
		if !time.Now().Before(deadline) {
			break
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}

	elapsed := time.Since(start).Seconds()
	found := outcome == "matched" || outcome == "any_output"
	if outcome == "timeout" && sawAlternate {
		outcome = "alternate_screen"
	}
	if !found && outcome != "input" {
		_ = c.deps.Warn(ctx, fmt.Sprintf("No match in pane %s before %ss timeout", target, pyfmt.Float(effective)))
	}
	w, wb := waitTailLines, waitTailBytes
	return WaitForTextResult{
		Found:            found,
		Outcome:          outcome,
		MatchedIndex:     matchedIndex,
		MatchedLines:     limitTail(matched, &w, &wb).lines,
		Tail:             limitTail(lastRows, &w, &wb).lines,
		SawNewOutput:     sawNew,
		MatchedAtEntry:   stale && !found,
		AlternateScreen:  sawAlternate,
		PaneID:           target,
		ElapsedSeconds:   PyFloat(round3(elapsed)),
		EffectiveTimeout: PyFloat(effective),
	}, nil
}
