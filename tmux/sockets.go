package tmux

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/fleetmux/fleetmux/transport"
)

// socketScript lists the socket names in the tmux socket directory and
// then which of its arguments are sockets, one per line ("P<path>").
const socketScript = `d="${1:-${TMUX_TMPDIR:-/tmp}}/tmux-$(id -u)"; shift
printf 'D%s\n' "$d"
if [ -d "$d" ]; then for s in "$d"/* "$d"/.[!.]*; do [ -S "$s" ] && printf 'N%s\n' "${s##*/}"; done; fi
for p in "$@"; do [ -S "$p" ] && printf 'P%s\n' "$p"; done
exit 0`

// Sockets is what FindSockets saw on a host.
type Sockets struct {
	Dir   string          // the tmux socket directory of the user
	Names []string        // socket names in Dir, sorted (live ones only where probing is possible)
	Paths map[string]bool // which of the extra paths are sockets
}

// FindSockets lists the tmux sockets of the user r runs as: the names in
// $TMUX_TMPDIR/tmux-UID (tmpdir overrides TMUX_TMPDIR when not "") and
// which of extra are sockets. One process on the host. Where r can probe
// a socket without a tmux client (locally), stale socket files are
// skipped with a 0.1 s connect probe.
func FindSockets(ctx context.Context, r transport.Runner, tmpdir string, extra []string) (Sockets, error) {
	argv := append([]string{"sh", "-c", socketScript, "sh", tmpdir}, extra...)
	res, err := r.Run(ctx, argv, nil)
	if err != nil {
		return Sockets{}, err
	}
	s := Sockets{Paths: map[string]bool{}}
	for _, line := range SplitLines(res.Stdout) {
		switch {
		case strings.HasPrefix(line, "D"):
			s.Dir = line[1:]
		case strings.HasPrefix(line, "N"):
			s.Names = append(s.Names, line[1:])
		case strings.HasPrefix(line, "P"):
			s.Paths[line[1:]] = true
		}
	}
	sort.Strings(s.Names)
	type prober interface {
		SocketAlive(path string, timeout time.Duration) bool
	}
	if p, ok := r.(prober); ok && s.Dir != "" {
		live := s.Names[:0]
		for _, n := range s.Names {
			if p.SocketAlive(s.Dir+"/"+n, 100*time.Millisecond) {
				live = append(live, n)
			}
		}
		s.Names = live
	}
	return s, nil
}
