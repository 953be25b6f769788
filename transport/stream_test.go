package transport

import (
	"bufio"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetmux/fleetmux/transport/sshtest"
)

// TestSSHStream: a stream runs what its first line says, reads the rest
// of stdin, and ends (Done) when closed.
func TestSSHStream(t *testing.T) {
	checkLeaks(t)
	e := sshtest.New(t)
	h := startHost(t, e, "stream", sshtest.HostOptions{})
	s := newRunner(t, h.cfg, SSHOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := s.Stream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Write([]byte("echo started; while IFS= read -r l; do echo \"got $l\"; done\nabc\n")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(st.Stdout())
	for _, want := range []string{"started", "got abc"} {
		line, err := r.ReadString('\n')
		if err != nil || strings.TrimSpace(line) != want {
			t.Fatalf("read %q, %v; want %q", line, err, want)
		}
	}
	st.Close()
	select {
	case <-st.Done():
	case <-ctx.Done():
		t.Fatal("stream not done after Close")
	}
}

// TestSSHStreamReservedSlot: a stream opens while commands hold every
// ordinary session slot (the wait watcher of a busy host starts instead
// of leaving its waits to poll); a second stream, with the kept slot
// taken, queues for an ordinary one.
func TestSSHStreamReservedSlot(t *testing.T) {
	checkLeaks(t)
	e := sshtest.New(t)
	h := startHost(t, e, "busy", sshtest.HostOptions{})
	s := newRunner(t, h.cfg, SSHOptions{MaxSessions: 2, PerCommand: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := s.connection(ctx)
	if err != nil {
		t.Fatal(err)
	}
	busy, stopBusy := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = s.Run(busy, []string{"sleep", "30"}, nil)
		}()
	}
	defer wg.Wait()
	defer stopBusy()
	for len(c.sem) < 2 {
		if ctx.Err() != nil {
			t.Fatal("the commands never held both slots")
		}
		time.Sleep(10 * time.Millisecond)
	}
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	defer scancel()
	st, err := s.Stream(sctx)
	if err != nil {
		t.Fatalf("stream with every ordinary slot taken: %v", err)
	}
	defer st.Close()
	if _, err := st.Write([]byte("echo up; exec cat\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(st.Stdout()).ReadString('\n'); err != nil || line != "up\n" {
		t.Fatalf("stream read %q, %v", line, err)
	}
	qctx, qcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer qcancel()
	if st2, err := s.Stream(qctx); err == nil {
		st2.Close()
		t.Fatal("a second stream got a session beyond MaxSessions plus the kept slot")
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second stream: %v", err)
	}
}
