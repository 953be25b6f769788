package tmux

import (
	"context"
	"errors"
	"os/exec"
	"testing"

	"github.com/fleetmux/fleetmux/transport"
)

func TestVersionAtLeast(t *testing.T) {
	for _, v := range []struct {
		in   string
		want bool
	}{{"3.3a", true}, {"3.2a", true}, {"3.2", false}, {"3.1c", false}, {"2.9", false}, {"next-3.4", true}, {"master", true}, {"3.10", true}} {
		if got := VersionAtLeast(v.in, MinVersion); got != v.want {
			t.Errorf("VersionAtLeast(%q, %q) = %v", v.in, MinVersion, got)
		}
	}
}

func TestProbeVersion(t *testing.T) {
	bin, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("no tmux")
	}
	ctx := context.Background()
	r := transport.NewLocal()
	if v, err := ProbeVersion(ctx, r, bin); err != nil || v == "" || !VersionAtLeast(v, "1.0") {
		t.Errorf("tmux: %q %v", v, err)
	}
	// A binary whose -V exits non-zero.
	var ve *VersionError
	if _, err := ProbeVersion(ctx, r, "false"); !errors.As(err, &ve) || ve.ExitCode == 0 {
		t.Errorf("false -V: %v", err)
	}
	if _, err := ProbeVersion(ctx, r, "/nope/tmux"); err == nil || errors.As(err, &ve) {
		t.Errorf("missing binary: %v", err)
	}
}
