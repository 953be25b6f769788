package tools

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"time"

	"github.com/fleetmux/fleetmux/mcp/pyfmt"
	"github.com/fleetmux/fleetmux/tmux"
)

// tmux wait-for channels.

// channelNameRE is constants.CHANNEL_NAME_RE.
var channelNameRE = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,128}$`)

// Bounds of the short channel commands: signalling and the liveness probe
// that follows a wait (constants.SIGNAL_CHANNEL_TIMEOUT_SECONDS and
// CHANNEL_LIVENESS_TIMEOUT_SECONDS). Variables so tests can shorten them.
var (
	channelSignalTimeout   = 5 * time.Second
	channelLivenessTimeout = 5 * time.Second
)

// checkChannel refuses names outside the channel alphabet before any
// wait-for command is built.
func checkChannel(name string) error {
	if !channelNameRE.MatchString(name) {
		return Expectedf("Invalid channel name: %s", pyfmt.Repr(name))
	}
	return nil
}

// decodedStderr is a failed child's stderr as Python's
// stderr.decode(errors="replace").strip() renders it.
func decodedStderr(out *tmux.Output) string {
	return pyfmt.Strip(pyfmt.DecodeReplace(out.Stderr))
}

// calledProcessError renders Python's CalledProcessError text for a
// direct tmux invocation that exited non-zero without stderr.
func calledProcessError(srv *tmux.Server, out *tmux.Output, cmd tmux.Cmd) string {
	argv := srv.PlainArgv(cmd)
	return fmt.Sprintf("Command '%s' returned non-zero exit status %d.", pyfmt.List(argv), out.ExitCode)
}

// boundedCmd runs cmd bounded by timeout and maps expiry and non-zero
// exits to the reference's messages (the buffer tools, signal_channel):
// timeoutMsg on expiry; fail renders the failure text from tmux's stderr
// (or Python's CalledProcessError text).
func boundedCmd(ctx context.Context, srv *tmux.Server, timeout time.Duration, timeoutMsg string, fail func(detail string) string, cmd tmux.Cmd) (*tmux.Output, error) {
	bctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := srv.Exec(bctx, cmd)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if bctx.Err() != nil {
			return nil, Expectedf("%s", timeoutMsg)
		}
		return nil, err
	}
	if out.ExitCode != 0 {
		detail := decodedStderr(out)
		if detail == "" {
			detail = calledProcessError(srv, out, cmd)
		}
		return nil, Expectedf("%s", fail(detail))
	}
	return out, nil
}

type waitForChannelArgs struct {
	Channel string
	Timeout *float64
}

func waitForChannel(ctx context.Context, c *Call, a waitForChannelArgs) (any, error) {
	srv := c.srv
	name := a.Channel
	if err := checkChannel(name); err != nil {
		return nil, err
	}
	timeout := 30.0
	if f := a.Timeout; f != nil {
		timeout = *f
	}
	eff := math.Min(timeout, waitCeiling(c))
	defer c.tick(ctx, eff, "wait_for_channel "+name)()
	wctx, cancel := context.WithTimeout(ctx, time.Duration(eff*float64(time.Second)))
	defer cancel()
	out, err := srv.Exec(wctx, tmux.WaitFor(name))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if wctx.Err() != nil {
			return nil, Expectedf("wait-for timeout: channel %s was not signalled within %ss", pyfmt.Repr(name), pyfmt.Float(eff))
		}
		return nil, err
	}
	if out.ExitCode != 0 {
		detail := decodedStderr(out)
		if detail == "" {
			detail = fmt.Sprintf("exit %d", out.ExitCode)
		}
		return nil, Expectedf("wait-for failed for channel %s: %s", pyfmt.Repr(name), detail)
	}
	// tmux also exits 0 when the server goes away (kill-server, SIGTERM),
	// so a clean exit only means "signalled" while the server still runs.
	alive, err := channelServerAlive(ctx, srv)
	if err != nil {
		return nil, err
	}
	if !alive {
		return nil, Expectedf("wait-for returned for channel %s but the tmux server is no longer running, so the channel was probably never signalled — tmux exits 0 for both. Re-check the work you were waiting on.", pyfmt.Repr(name))
	}
	return fmt.Sprintf("Channel %s was signalled (timeout %ss)", pyfmt.Repr(name), pyfmt.Float(eff)), nil
}

// channelServerAlive probes list-sessions (which never starts a server);
// a timeout or a failure to run counts as dead. Only cancellation of the
// call itself is an error.
func channelServerAlive(ctx context.Context, srv *tmux.Server) (bool, error) {
	lctx, cancel := context.WithTimeout(ctx, channelLivenessTimeout)
	defer cancel()
	out, err := srv.Exec(lctx, tmux.ListSessionsPlain())
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	return err == nil && out.ExitCode == 0, nil
}

type signalChannelArgs struct {
	Channel string
}

func signalChannel(ctx context.Context, c *Call, a signalChannelArgs) (any, error) {
	name := a.Channel
	if err := checkChannel(name); err != nil {
		return nil, err
	}
	_, err := boundedCmd(ctx, c.srv, channelSignalTimeout,
		fmt.Sprintf("signal-channel timeout after 5.0s: channel %s", pyfmt.Repr(name)),
		func(detail string) string {
			return fmt.Sprintf("signal-channel failed for channel %s: %s", pyfmt.Repr(name), detail)
		},
		tmux.Signal(name))
	if err != nil {
		return nil, err
	}
	return fmt.Sprintf("Channel %s signalled", pyfmt.Repr(name)), nil
}
