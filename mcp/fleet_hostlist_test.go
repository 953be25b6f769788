package mcp

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// hostOption reads a global user option of the tmux server of a fake
// fleet host, out of band ("" when unset).
func hostOption(t *testing.T, tmpdir, option string) string {
	t.Helper()
	cmd := exec.Command("tmux", "show-options", "-g", "-q", "-v", option)
	cmd.Env = append(cmd.Environ(), "TMUX_TMPDIR="+tmpdir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("show-options %s: %v %s", option, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestFleetHostListBounds: a host list naming hosts outside the selection,
// or longer than the cap, is refused before anything runs, with one
// audit record of bounded size; globs and lists within the cap still fan
// out.
func TestFleetHostListBounds(t *testing.T) {
	aud := &memAuditor{}
	e, dirs := newFleetEnv(t, func(_ *testEnv, o *Options) { o.Auditor = aud })
	names := func(n int, format string) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = fmt.Sprintf(format, i)
		}
		return out
	}
	atCap := make([]any, 256) // duplicates count as entries
	for i := range atCap {
		atCap[i] = []string{"dev-1", "dev-2"}[i%2]
	}
	for _, tc := range []struct {
		name  string
		tool  string
		host  any
		want  []string // fragments of the error; nil: success
		hosts int      // hosts answered on success
	}{
		{"20,000 unknown and dev-1 (the review's case)", "set_option", append(names(20000, "ghost-%05d"), "dev-1"), []string{"host list of 20001 entries", "at most 256 entries"}, 0},
		{"257 entries", "set_option", append(names(256, "ghost-%d"), "dev-1"), []string{"at most 256 entries"}, 0},
		{"over the byte bound", "set_option", strings.Repeat("dev-1,", 3000) + "dev-2", []string{"at most 256 entries and 16384 bytes"}, 0},
		{"ten unknown and dev-1", "set_option", append(names(10, "ghost-%d"), "dev-1"), []string{"10 entries name no selected host", `"ghost-0"`, `"ghost-4"`, "and 5 more", "nothing ran"}, 0},
		{"two unknown, comma list", "set_option", "dev-1, nosuch-a, nosuch-b", []string{"2 entries name no selected host", `"nosuch-a", "nosuch-b"`}, 0},
		{"one unknown in a list", "set_option", []any{"dev-1", "nosuch"}, []string{`host "nosuch"`}, 0},
		{"a glob matching nothing", "set_option", []any{"dev-1", "nomatch-*"}, []string{`host "nomatch-*"`, "no selected host matches"}, 0},
		{"unknown in a listing's list", "list_sessions", []any{"dev-1", "nosuch"}, []string{`host "nosuch"`}, 0},
		{"256 entries (the cap) of known hosts", "set_option", atCap, nil, 2},
		{"a glob", "set_option", "dev-*", nil, 2},
		{"a list and a glob", "set_option", []any{"prod-1", "dev-*", "dev-1"}, nil, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host, hosts := tc.host, tc.hosts
			marker := fmt.Sprintf("on-%d", len(tc.name))
			aud.mu.Lock()
			before := len(aud.evs)
			aud.mu.Unlock()
			args := map[string]any{"host": host, "option": "@i19", "value": marker, "global_": true}
			if tc.tool == "list_sessions" {
				args = map[string]any{"host": host}
			}
			res := e.call(tc.tool, args)
			aud.mu.Lock()
			evs := append([]AuditEvent(nil), aud.evs[before:]...)
			aud.mu.Unlock()
			if tc.want == nil {
				if res.IsError {
					t.Fatalf("refused: %s", text(res))
				}
				if len(evs) != hosts+1 {
					t.Fatalf("%d audit records, want %d (one per host and the call's)", len(evs), hosts+1)
				}
				if got := hostOption(t, dirs["dev-1"], "@i19"); got != marker {
					t.Fatalf("dev-1 @i19 = %q, want %q", got, marker)
				}
				return
			}
			if !res.IsError {
				t.Fatalf("accepted: %.300s", text(res))
			}
			for _, w := range tc.want {
				if !strings.Contains(text(res), w) {
					t.Errorf("error lacks %q: %s", w, text(res))
				}
			}
			if n := len(text(res)); n > 600 {
				t.Errorf("error of %d bytes", n)
			}
			if len(evs) != 1 {
				t.Fatalf("%d audit records, want 1", len(evs))
			}
			if n := len(evs[0].Host); n > 256 {
				t.Errorf("audit host field of %d bytes", n)
			}
			if evs[0].Outcome == "ok" {
				t.Errorf("audit outcome %q", evs[0].Outcome)
			}
			for _, h := range []string{"dev-1", "dev-2"} {
				if got := hostOption(t, dirs[h], "@i19"); got == marker {
					t.Fatalf("%s: the action ran (@i19 = %q)", h, got)
				}
			}
		})
	}
}
