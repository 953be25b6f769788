package watch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/fleetmux/fleetmux/tmux"
	"github.com/fleetmux/fleetmux/transport"
)

// The watcher on a host is a bash loop on a transport.Stream.
//
// remoteBoot is the line sh (started by the stream) evaluates: it starts
// bash, which reads remoteLoop as its first line. A host without bash
// prints why and ends the stream.
//
// remoteLoop first reads four lines: a random marker M (on stdin, so it
// is in no argv or environment), the tmux server's pid, the tick in
// seconds and every how many ticks to check the server still runs. It
// checks that bash can time a read out in fractions of a second (bash 4)
// and that /proc/<pid>/io is readable, and answers "M r" (ready) or
// "M n REASON" and exits. Then it loops: `read -t TICK -u 3` on its stdin
// is both the sleep and the command input (no fork per tick, and no
// redirection to set up and undo; a plain blocking read while there is
// no look, so an unused watcher never wakes), and `read < /proc/<pid>/io`
// (a redirection: no fork) reads the counter. The loop's own stderr is
// /dev/null (a failed read says nothing, without opening /dev/null each
// tick); a look's tmux client writes to the stream's stderr (fd 4).
// Commands:
//
//	"L ID N\n" and N lines: the look is now the QuoteArgv command line
//	         of those lines (ID names it); its cost is learned anew and a
//	         look is made at once. N = 0: no look. "L ID N q": the same
//	         without a look now and keeping the cost (subscribers left,
//	         none came).
//	"T TICK A\n": read the counter every TICK seconds and check the
//	         server every A ticks.
//	"F\n":   look at the next tick.
//	anything else, or EOF: exit.
//
// A look writes "M S + ID" on stdout, the tmux client's stdout, then
// "M S STATUS"; on stderr its stderr then "M S". When the server's
// counter cannot be read any more (the server is gone) it writes "M g"
// and exits.
const remoteBootFormat = `command -v %[1]s >/dev/null 2>&1 || { echo "fleetmux-watch: no bash on this host"; exit 0; }; exec %[1]s -c 'IFS= read -r s || exit 0; eval "$s"'`

// remoteBash is the shell the watcher runs in (a variable so a test can
// stand for a host without bash).
var remoteBash = "bash"

const remoteLoop = `exec 3<&0 </dev/null 4>&2 2>/dev/null; IFS= read -r -u 3 M || exit 0; IFS= read -r -u 3 p || exit 0; IFS= read -r -u 3 T || exit 0; IFS= read -r -u 3 A || exit 0; nl=$'\n'; ` +
	`if [ "${BASH_VERSINFO[0]:-0}" -lt 4 ]; then echo "$M n bash $BASH_VERSION cannot time a read out in fractions of a second"; exit 0; fi; ` +
	`f=/proc/$p/io; read -r x r < "$f" || { echo "$M n $f is not readable"; exit 0; }; ` +
	`echo "$M r"; c=; id=; last=; k=; s=0; q=; j=0; ` +
	`while :; do ` +
	`if [ -n "$c" ]; then IFS= read -r -t "$T" -u 3 h; else IFS= read -r -u 3 h; fi; e=$?; ` +
	`if [ $e -eq 0 ]; then h=$q$h; q=; ` +
	`case $h in ` +
	`L\ *) set -- $h; id=$2; n=$3; z=$4; c=; i=0; while [ $i -lt $n ]; do IFS= read -r -u 3 l || exit 0; if [ $i -eq 0 ]; then c=$l; else c=$c$nl$l; fi; i=$((i+1)); done; [ "$z" = q ] || { last=; k=; };; ` +
	`T\ *) set -- $h; T=$2; A=$3; j=0;; ` +
	`F) last=;; ` +
	`*) exit 0;; ` +
	`esac; continue; ` +
	`fi; [ $e -gt 128 ] || exit 0; q=$q$h; [ -z "$q" ] || continue; ` +
	`[ -n "$c" ] || continue; ` +
	`j=$((j+1)); if [ $j -ge $A ]; then j=0; read -r a < /proc/$p/stat || a=; a=${a##*) }; case $a in ''|Z*|X*) echo "$M g"; exit 0;; esac; fi; ` +
	`read -r x r < "$f" || { echo "$M g"; exit 0; }; ` +
	`[ "$r" = "$last" ] && continue; ` +
	`s=$((s+1)); echo "$M $s + $id"; eval "$c" 3<&- 2>&4 4>&-; st=$?; ` +
	`read -r x r2 < "$f" || r2=$r; ` +
	`echo "$M $s $st"; echo "$M $s" >&4; d=$((r2-r)); ` +
	`if [ -z "$k" ]; then k=$d; last=; else if [ $d -lt $k ]; then k=$d; fi; last=$((r+k)); fi; ` +
	`done`

// maxUnframed bounds what is kept of a host's output without a marker
// (the reason a host without bash gives).
const maxUnframed = 512

// readFrames splits r at marker lines and sends the frames to dst until
// r ends (then it sends a frame with trailer "" and the bytes left, at
// most maxUnframed of them) or done closes. A stream that prints more
// than transport.MaxOutput without a marker ends with an error frame.
func readFrames(r io.Reader, marker []byte, dst chan<- transport.Frame, done <-chan struct{}) {
	send := func(f transport.Frame) bool {
		select {
		case dst <- f:
			return true
		case <-done:
			return false
		}
	}
	rest, err := transport.SplitFrames(r, marker, send)
	switch {
	case err == nil:
	case errors.Is(err, transport.ErrOutputTooLarge):
		send(transport.Frame{Trailer: "!", Data: []byte("look output over the limit")})
	default:
		send(transport.Frame{Data: rest[:min(len(rest), maxUnframed)]})
	}
}

// tickArgs is the loop's tick in seconds and every how many ticks it
// checks that the server still runs.
func tickArgs(d time.Duration) (tick, alive string) {
	return strconv.FormatFloat(d.Seconds(), 'f', 3, 64), strconv.Itoa(max(1, int(aliveEvery/d)))
}

// tickLine is the loop's command that sets its tick.
func tickLine(d time.Duration) string {
	tick, alive := tickArgs(d)
	return "T " + tick + " " + alive + "\n"
}

// look is one look's output as it arrives.
type remoteLook struct {
	id        int
	out       tmux.Output
	gotOut    bool
	gotErr    bool
	startedAt time.Time
}

// runRemote is the engine for a tmux server on an SSH host.
func (w *watcher) runRemote(streamer transport.Streamer) error {
	opts := &w.hub.opts
	ctx, cancel := context.WithTimeout(context.Background(), opts.LookTimeout)
	defer cancel()
	pid, err := serverPID(ctx, w.srv)
	if err != nil {
		w.startFailed(err)
		return err
	}
	st, err := streamer.Stream(ctx)
	if err != nil {
		w.startFailed(err)
		return err
	}
	defer st.Close()
	marker := transport.NewMarker()
	outs, errs := make(chan transport.Frame), make(chan transport.Frame)
	readers := make(chan struct{}, 2)
	quit := make(chan struct{})
	defer func() {
		close(quit)
		st.Close()
		<-readers
		<-readers
	}()
	go func() { readFrames(st.Stdout(), marker, outs, quit); readers <- struct{}{} }()
	go func() { readFrames(st.Stderr(), marker, errs, quit); readers <- struct{}{} }()

	tick, alive := tickArgs(opts.RemoteTick)
	if _, err := st.Write([]byte(fmt.Sprintf(remoteBootFormat, remoteBash) + "\n" + remoteLoop + "\n" + string(marker) + "\n" + pid + "\n" + tick + "\n" + alive + "\n")); err != nil {
		w.startFailed(err)
		return err
	}
	if err := awaitReady(ctx, outs); err != nil {
		w.startFailed(err)
		return err
	}
	w.startOK()

	var (
		ls      *lookSet
		nextID  int
		sets    = map[int]*lookSet{}
		looks   = map[int]*remoteLook{}
		timeout = time.NewTimer(time.Hour)
	)
	timeout.Stop()
	defer timeout.Stop()
	send := func(b []byte) error {
		_, err := st.Write(b)
		return err
	}
	sentTick := opts.RemoteTick
	// plan sends the look for the current subscribers; force asks for a
	// look at once even if none came (a look failed for one of them).
	// Looks still running for an earlier set are delivered to that set.
	plan := func(force bool) error {
		var err error
		if ls, err = w.current(opts.RemoteTick); err != nil {
			return err
		}
		nextID++
		sets[nextID] = ls
		if ls.plan == nil {
			return send([]byte(fmt.Sprintf("L %d 0\n", nextID)))
		}
		if ls.tick != sentTick {
			sentTick = ls.tick
			if err := send([]byte(tickLine(sentTick))); err != nil {
				return err
			}
		}
		line, err := transport.QuoteArgv(w.srv.CmdArgv(ls.plan.Cmds()...))
		if err != nil {
			return err
		}
		lines := strings.Split(line, "\n")
		var b strings.Builder
		quiet := ""
		if !ls.fresh && !force {
			quiet = " q"
		}
		fmt.Fprintf(&b, "L %d %d%s\n", nextID, len(lines), quiet)
		for _, l := range lines {
			b.WriteString(l)
			b.WriteByte('\n')
		}
		return send([]byte(b.String()))
	}
	finish := func(s int, lk *remoteLook) error {
		delete(looks, s)
		if len(looks) == 0 {
			timeout.Stop()
		}
		set := sets[lk.id]
		// Looks run in order: the sets before this one are done with.
		for id := range sets {
			if id < lk.id {
				delete(sets, id)
			}
		}
		if set == nil || set.plan == nil {
			return nil
		}
		if !w.deliver(set, &lk.out) {
			return plan(true)
		}
		return nil
	}
	for {
		select {
		case <-w.done:
			_ = send([]byte("Q\n"))
			return nil
		case <-st.Done():
			if err := st.Err(); err != nil {
				return err
			}
			return errors.New("watcher on the host ended")
		case <-w.changed:
			if err := plan(false); err != nil {
				return err
			}
		case <-w.forced:
			if err := send([]byte("F\n")); err != nil {
				return err
			}
		case <-timeout.C:
			return fmt.Errorf("a look on the host did not finish within %s", opts.LookTimeout)
		case f := <-outs:
			s, rest, _ := strings.Cut(f.Trailer, " ")
			switch {
			case f.Trailer == "":
				return fmt.Errorf("watcher on the host ended: %s", bytes.TrimSpace(f.Data))
			case f.Trailer == "!":
				return fmt.Errorf("watcher: %s", f.Data)
			case f.Trailer == "g":
				return errors.New("the tmux server is gone")
			}
			seq, err := strconv.Atoi(s)
			if err != nil {
				return fmt.Errorf("watcher: unexpected frame %q", f.Trailer)
			}
			if idText, ok := strings.CutPrefix(rest, "+ "); ok {
				id, err := strconv.Atoi(idText)
				if err != nil {
					return fmt.Errorf("watcher: unexpected frame %q", f.Trailer)
				}
				// stderr and stdout are two streams: the look's stderr
				// frame may have come first and made its entry.
				if lk := looks[seq]; lk != nil {
					lk.id, lk.startedAt = id, time.Now()
				} else {
					looks[seq] = &remoteLook{id: id, startedAt: time.Now()}
				}
				timeout.Reset(opts.LookTimeout)
				continue
			}
			lk := looks[seq]
			code, err := strconv.Atoi(rest)
			if lk == nil || err != nil {
				return fmt.Errorf("watcher: unexpected frame %q", f.Trailer)
			}
			lk.out.Stdout, lk.out.ExitCode, lk.gotOut = f.Data, code, true
			if lk.gotErr {
				if err := finish(seq, lk); err != nil {
					return err
				}
			}
		case f := <-errs:
			if f.Trailer == "" || f.Trailer == "!" {
				continue // stdout tells why
			}
			seq, err := strconv.Atoi(f.Trailer)
			if err != nil {
				return fmt.Errorf("watcher: unexpected stderr frame %q", f.Trailer)
			}
			lk := looks[seq]
			if lk == nil {
				// Ahead of the look's "+" line on stdout (another stream).
				lk = &remoteLook{startedAt: time.Now()}
				looks[seq] = lk
			}
			lk.out.Stderr, lk.gotErr = f.Data, true
			if lk.gotOut {
				if err := finish(seq, lk); err != nil {
					return err
				}
			}
		}
	}
}

// awaitReady waits for the loop's "r" (ready) or its reason not to run.
func awaitReady(ctx context.Context, outs <-chan transport.Frame) error {
	for {
		select {
		case f := <-outs:
			switch {
			case f.Trailer == "r":
				return nil
			case strings.HasPrefix(f.Trailer, "n "):
				return fmt.Errorf("%w: %s", ErrUnsupported, strings.TrimPrefix(f.Trailer, "n "))
			case f.Trailer == "":
				why := string(bytes.TrimSpace(f.Data))
				if i := strings.LastIndexByte(why, '\n'); i >= 0 {
					why = why[i+1:]
				}
				if why == "" {
					why = "the watcher did not start"
				}
				return fmt.Errorf("%w: %s", ErrUnsupported, why)
			}
		case <-ctx.Done():
			return fmt.Errorf("watcher did not start: %w", ctx.Err())
		}
	}
}
