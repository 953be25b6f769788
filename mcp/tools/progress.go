package tools

import (
	"context"
	"fmt"
	"time"
)

// Progress on long calls (extensions only). A client that sends a
// progress token with a call gets notifications/progress while the call
// runs, so that clients that extend their deadline on progress keep
// waiting: seconds elapsed about every second for run_command and
// wait_for_channel (fan-out calls report hosts done of the total:
// fanout.go).
// wait_for_text sends its own, as the reference does (on every poll, in
// local mode too). Local mode without --extensions sends none beyond the
// reference's: the contract lists wait_for_text as the only tool that
// notifies (BEHAVIOR.md 2.8).

// progressEvery is how often a long call reports its progress.
const progressEvery = time.Second

// tick reports the seconds elapsed (of total) every progressEvery until
// the returned stop is called; stop waits for the reporter to end.
func (c *Call) tick(ctx context.Context, total float64, what string) (stop func()) {
	if !c.env.Extended || !c.deps.WantsProgress() {
		return func() {}
	}
	start := time.Now()
	tctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-tctx.Done():
				return
			case <-t.C:
				el := time.Since(start).Seconds()
				_ = c.deps.Progress(tctx, el, total, fmt.Sprintf("%s: %.0fs elapsed of at most %.0fs", what, el, total))
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
