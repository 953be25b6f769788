package tools

import (
	"reflect"
	"testing"
)

// TestTmuxServer pins the one socket rule tools and fleetmux doctor share.
func TestTmuxServer(t *testing.T) {
	env := map[string]string{"LIBTMUX_SOCKET": "envsock", "LIBTMUX_SOCKET_PATH": "/tmp/s", "LIBTMUX_TMUX_BIN": "/opt/tmux"}
	getenv := func(k string) string { return env[k] }
	named := "arg"
	empty := ""
	for _, tc := range []struct {
		name   string
		socket *string
		local  bool
		want   []string // Prefix()
	}{
		{"env name, local", nil, true, []string{"/opt/tmux", "-L", "envsock", "-S", "/tmp/s"}},
		{"argument wins over env", &named, true, []string{"/opt/tmux", "-L", "arg", "-S", "/tmp/s"}},
		{"empty argument is the default socket", &empty, true, []string{"/opt/tmux", "-S", "/tmp/s"}},
		{"remote: no path, no bin", nil, false, []string{"tmux", "-L", "envsock"}},
	} {
		if got := TmuxServer(nil, tc.socket, tc.local, getenv).Prefix(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
