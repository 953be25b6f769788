package ttyinput

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Lines the probe printed for real programs on x86_64 (see the fixture),
// judged with and without /proc/PID/syscall.
func TestJudgeLines(t *testing.T) {
	const head = "fleetmux-input 1 x86_64 "
	cases := []struct {
		name, line     string
		want, fallback State
	}{
		{"read -s", head + "0 1 0 7684 7684 @ 7684 S 1 0,0x0,0x55dc,0x1000 wait_woken 0,1,2 - tty 0 0", Password, Password},
		{"getpass on /dev/tty", head + "0 1 0 7707 7707 @ 7707 S 0 0,0x3,0x5594,0x2000 wait_woken 0,1,2,3 - tty 0 0", Password, Password},
		{"cat", head + "0 1 1 7776 7776 @ 7776 S 0 0,0x0,0x7fcd,0x20000 wait_woken 0,1,2 - tty 0 0", Line, Line},
		{"python REPL pselect6", head + "0 0 0 7744 7744 @ 7744 S 0 270,0x1,0x7fff,0x0 poll_schedule_timeout.constprop.0 0,1,2 - tty 0 0", Keys, Keys},
		{"node epoll", head + "0 0 0 7811 7811 @ 7811 S 0 281,0xd,0x7ffd,0x400 do_epoll_wait 0,1,17,19,2,20 - other 1 0", Keys, Keys},
		{"vi on the alternate screen", head + "1 0 0 7894 7894 @ 7894 S 0 270,0x1,0x5572 poll_schedule_timeout.constprop.0 0,1,2 - tty 0 0", Screen, Screen},
		{"bash prompt", head + "0 0 0 8195 8195 @ 8195 S 1 270,0x1,0x7ffe poll_schedule_timeout.constprop.0 0,1,2,255 - tty 0 0", Shell, Shell},
		{"dash prompt (canonical)", head + "0 1 1 8167 8167 @ 8167 S 1 0,0x0,0x55cb,0x2000 wait_woken 0,1,10,2 - tty 0 0", Shell, Shell},
		{"bash -c read", head + "0 1 1 7701 7701 @ 7701 S 1 0,0x0,0x5632,0x1000 wait_woken 0,1,2 - tty 0 0", Line, Line},
		{"sleep", head + "0 1 1 8024 8024 @ 8024 S 0 230,0x0,0x0 hrtimer_nanosleep 0,1,2 - tty 0 0", Busy, Busy},
		{"busy loop", head + "0 1 1 8097 8097 @ 8097 R 1 running 0 0,1,2 - - 0 0", Busy, Busy},
		{"pipe", head + "0 1 1 8054 8054 @ 8054 S 1 61,0xffffffff do_wait 0,1,2 - - 0 0 @ 8085 S 0 0,0x0,0x7fcc anon_pipe_read 1,2 - pipe 0 0", Busy, Busy},
		{"accept", head + "0 1 1 8143 8143 @ 8143 S 0 288,0x3,0x7ffe inet_csk_accept 0,1,2 3 sock 0 0", Busy, Busy},
		{"ssh in raw mode relays", head + "0 0 0 9 9 @ 9 S 0 7,0x55,0x3,0xffffffff poll_schedule_timeout 0,1,2,4 3 - 0 0", Unknown, Unknown},
		{"socket read in canonical mode", head + "0 1 1 9 9 @ 9 S 0 0,0x3,0x55 wait_woken 0,1,2 3 sock 0 0", Busy, Unknown},
		{"reader deep in the group", head + "0 1 1 5 5 @ 5 S 0 61,0xffffffff do_wait 0,1,2 - - 0 0 @ 6 S 1 0,0x0,0x1 wait_woken 0,1,2 - tty 0 0", Line, Line},
		{"no readable wchan either", head + "0 1 1 5 5 @ 5 S 0 - 0 0,1,2 - - 0 0", Unknown, Unknown},
		{"unknown arch", "fleetmux-input 1 sparc64 0 1 1 5 5 @ 5 S 0 3,0x0 wait_woken 0,1,2 - tty 0 0", Line, Line},
		{"sleep, modes not asked", head + "0 x x 8024 8024 @ 8024 S 0 230,0x0,0x0 hrtimer_nanosleep 0,1,2 - tty 0 0", Busy, Busy},
		{"pipe, modes not asked", head + "0 x x 8054 8054 @ 8054 S 1 61,0xffffffff do_wait 0,1,2 - - 0 0 @ 8085 S 0 0,0x0,0x7fcc anon_pipe_read 1,2 - pipe 0 0", Busy, Busy},
		{"a tty read while modes not asked", head + "0 x x 5 5 @ 5 S 0 0,0x0,0x55 wait_woken 0,1,2 - tty 0 0", Unknown, Unknown},
		{"a poll on the tty while modes not asked", head + "0 x x 5 5 @ 5 S 0 7,0x55,0x1 poll_schedule_timeout 0,1,2 - - 0 0", Unknown, Unknown},
		{"no process", "fleetmux-input 1 none", Unknown, Unknown},
		{"no foreground group", head + "0 1 1 5 -1", Unknown, Unknown},
		{"terminal modes unknown", head + "0 - - 5 5 @ 5 S 0 0,0x0 wait_woken 0,1,2 - tty 0 0", Unknown, Unknown},
		{"garbage", "fleetmux-input 1 x86_64 0 1 1 5 5 @ 5", Unknown, Unknown},
		{"empty", "", Unknown, Unknown},
		{"too long", head + strings.Repeat("x", maxLine), Unknown, Unknown},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := judge(c.line, true).State; got != c.want {
				t.Errorf("with syscall: %s, want %s", got, c.want)
			}
			if got := judge(c.line, false).State; got != c.fallback {
				t.Errorf("without syscall: %s, want %s", got, c.fallback)
			}
		})
	}
}

// TestWaiting: the bool an agent reads, null where it cannot be told.
func TestWaiting(t *testing.T) {
	for s, want := range map[State]string{Line: "true", Password: "true", Keys: "true", Screen: "false", Shell: "false", Busy: "false", Unknown: "null", "": "null"} {
		got := "null"
		if w := s.Waiting(); w != nil {
			got = map[bool]string{true: "true", false: "false"}[*w]
		}
		if got != want {
			t.Errorf("%q: %s, want %s", s, got, want)
		}
	}
}

// TestDetectionLatency measures (and logs, never asserts) how long after
// a program starts reading a line (a script's read) the probe says so,
// locally (a read typed at the interactive prompt itself counts as the
// shell, see interactive).
func TestDetectionLatency(t *testing.T) {
	for _, local := range []bool{true, false} {
		t.Run(map[bool]string{true: "go", false: "script"}[local], func(t *testing.T) { detectionLatency(t, local) })
	}
}

func detectionLatency(t *testing.T, local bool) {
	srv := localServer(t)
	ctx := context.Background()
	out, err := srv.Cmd(ctx, "new-window", "-d", "-P", "-F", "#{pane_id}", "bash --norc --noprofile")
	if err != nil {
		t.Fatal(err)
	}
	pane := out[0]
	for round := 0; round < 5; round++ {
		for {
			r, err := Probe(ctx, srv.Server, pane, local)
			if err != nil {
				t.Fatal(err)
			}
			if r.State == Shell {
				break
			}
		}
		if _, err := srv.Cmd(ctx, "send-keys", "-t", pane, "bash --norc --noprofile -c 'read -p ok? x'", "Enter"); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		var probes []time.Duration
		for n := 0; ; n++ {
			p0 := time.Now()
			r, err := Probe(ctx, srv.Server, pane, local)
			if err != nil {
				t.Fatal(err)
			}
			probes = append(probes, time.Since(p0))
			if r.State == Line {
				t.Logf("round %d: read seen %v after the keys were sent (%d probes, last took %v)", round, time.Since(start).Round(time.Millisecond), n+1, probes[len(probes)-1].Round(time.Millisecond))
				break
			}
			if time.Since(start) > 60*time.Second {
				t.Fatalf("read never seen; last %s", r.State)
			}
		}
		if _, err := srv.Cmd(ctx, "send-keys", "-t", pane, "y", "Enter"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSampleLocalNotThisPane: the local probe says nothing of a pane
// whose process is not on the pane's terminal (a pane of another host's
// server read here by mistake, a process replaced), a dead pane or a
// line of another pane.
func TestSampleLocalNotThisPane(t *testing.T) {
	ctx := context.Background()
	self := strconv.Itoa(os.Getpid())
	for _, line := range []string{
		"%1 0 " + self + " /dev/null 0", // our process is not on /dev/null
		"%1 0 1 /dev/pts/999999 0",      // no such terminal
		"%1 1 " + self + " /dev/null 0", // dead
		"%2 0 " + self + " /dev/null 0", // another pane
		"%1 0 x /dev/null 0",
		"%1 0",
	} {
		s, err := sampleLocal(ctx, "%1", line)
		if err != nil {
			t.Fatal(err)
		}
		if !s.none || judgeSample(s, true).State != Unknown || s.String() != "fleetmux-input 1 none" {
			t.Errorf("%q: %+v", line, s)
		}
	}
}

// TestLineRoundTrip: a parsed line writes back as itself (the local probe
// writes its sample as the script's line for logs and tests).
func TestLineRoundTrip(t *testing.T) {
	const head = "fleetmux-input 1 x86_64 "
	for _, line := range []string{
		head + "0 x x 8054 8054 @ 8054 S 1 61,0xffffffff do_wait 0,1,2 - - 0 0 @ 8085 S 0 0,0x0,0x7fcc anon_pipe_read 1,2 - pipe 0 0",
		head + "1 0 1 7811 7811 @ 7811 S 0 281,0xd,0x7ffd,0x400 do_epoll_wait 0,1,17,19,2,20 3,4 other 1 1",
		head + "0 - - 5 5 @ 5 R 0 running - 0,1,2 - - 0 0",
		"fleetmux-input 1 - 0 1 1 5 -1",
	} {
		s, ok := parse(line)
		if !ok || s.String() != line {
			t.Errorf("%q: ok %v, wrote %q", line, ok, s.String())
		}
	}
}
