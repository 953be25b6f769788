package mcp

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/fleetmux/fleetmux/mcp/tools"
)

func TestSearchPanes(t *testing.T) {
	e := shEnv(t)
	p0 := e.firstPane()
	e.shSync(p0, "printf '%s_%s 10.0.0.42\\n' Needle Alpha")
	other := e.tmux("new-session", "-d", "-P", "-F", "#{pane_id}", "-s", "other", "-x", "80", "-y", "24")
	e.shSettle(other)
	e.shSync(other, "printf '%s_%s 123\\n' needle beta")

	search := func(args map[string]any) tools.SearchPanesResult {
		t.Helper()
		var r tools.SearchPanesResult
		e.ok("search_panes", args, &r)
		return r
	}
	ids := func(r tools.SearchPanesResult) []string {
		out := []string{}
		for _, m := range r.Matches {
			out = append(out, m.PaneID)
		}
		return out
	}

	r := search(map[string]any{"pattern": "NEEDLE_ALPHA"})
	if len(r.Matches) != 1 || r.Matches[0].PaneID != p0 || !anyContains(r.Matches[0].MatchedLines, "Needle_Alpha 10.0.0.42") {
		t.Fatalf("case-insensitive literal: %+v", r)
	}
	m := r.Matches[0]
	if m.SessionName == nil || *m.SessionName != "fixture" || m.WindowID == nil || !strings.HasPrefix(*m.WindowID, "@") ||
		m.SessionID == nil || m.WindowName == nil || m.PaneLeft == nil || m.PaneAtTop == nil || m.PaneTty == nil || m.IsCaller != nil {
		t.Fatalf("match fields: %+v", m)
	}
	if r := search(map[string]any{"pattern": "NEEDLE_ALPHA", "match_case": true}); len(r.Matches) != 0 || r.TotalPanesMatched != 0 {
		t.Fatalf("case-sensitive miss: %+v", r)
	}
	if r := search(map[string]any{"pattern": "Needle_Alpha", "match_case": true}); len(r.Matches) != 1 {
		t.Fatalf("case-sensitive hit: %+v", r)
	}
	if r := search(map[string]any{"pattern": `beta \d+$`, "regex": true}); len(r.Matches) != 1 || r.Matches[0].PaneID != other {
		t.Fatalf("regex: %+v", r)
	}
	if r := search(map[string]any{"pattern": "10.0.0.42"}); len(r.Matches) != 1 {
		t.Fatalf("literal IP (fast path): %+v", r)
	}
	if r := search(map[string]any{"pattern": "needle_"}); len(r.Matches) != 2 || r.TotalPanesMatched != 2 {
		t.Fatalf("both panes: %+v", r)
	}
	if r := search(map[string]any{"pattern": "needle_", "session_name": "other"}); len(r.Matches) != 1 || r.Matches[0].PaneID != other {
		t.Fatalf("session scope: %+v", r)
	}
	if r := search(map[string]any{"pattern": "needle_", "session_id": *m.SessionID, "regex": true}); len(r.Matches) != 1 || r.Matches[0].PaneID != p0 {
		t.Fatalf("session scope (slow path): %+v", r)
	}
	if r := search(map[string]any{"pattern": "no such text anywhere"}); len(r.Matches) != 0 || r.Truncated || len(r.TruncatedPanes) != 0 {
		t.Fatalf("no match: %+v", r)
	}
	e.fail("search_panes", map[string]any{"pattern": "(abc", "regex": true}, "Invalid regex pattern: ")
	e.fail("search_panes", map[string]any{"pattern": "x", "session_name": "nope"}, "Object not found: Could not find session_name=nope")

	// Paging: offset/limit are echoed; pages cover all matches.
	r = search(map[string]any{"pattern": "needle_", "limit": 1})
	if len(r.Matches) != 1 || !r.Truncated || len(r.TruncatedPanes) != 1 || r.TotalPanesMatched != 2 || r.Offset != 0 || r.Limit == nil || *r.Limit != 1 {
		t.Fatalf("limit=1: %+v", r)
	}
	r2 := search(map[string]any{"pattern": "needle_", "offset": 1, "limit": 10})
	if len(r2.Matches) != 1 || r2.Truncated || r2.Offset != 1 || r2.TotalPanesMatched != 2 || r2.Matches[0].PaneID != r.TruncatedPanes[0] {
		t.Fatalf("offset=1: %+v", r2)
	}
	if r := search(map[string]any{"pattern": "needle_", "offset": -3, "limit": nil}); r.Offset != -3 || r.Limit != nil || len(r.Matches) != 2 {
		t.Fatalf("negative offset: %+v", r)
	}
	if r := search(map[string]any{"pattern": "needle_", "limit": -1}); len(r.Matches) != 0 || len(r.TruncatedPanes) != 2 || !r.Truncated {
		t.Fatalf("negative limit: %+v", r)
	}

	// Per-pane cap keeps the newest matching lines.
	e.shSync(p0, "for w in a b c d e; do printf 'CAP%s_%s\\n' LINE $w; done")
	r = search(map[string]any{"pattern": "CAPLINE_", "max_matched_lines_per_pane": 3})
	if len(r.Matches) != 1 || !r.Truncated || strings.Join(r.Matches[0].MatchedLines, ",") != "CAPLINE_c,CAPLINE_d,CAPLINE_e" {
		t.Fatalf("per-pane cap: %+v", r)
	}
	if r := search(map[string]any{"pattern": "CAPLINE_", "max_matched_lines_per_pane": 0}); len(r.Matches[0].MatchedLines) != 5 || !r.Truncated {
		t.Fatalf("cap 0 keeps all but reports truncation: %+v", r)
	}

	// Format-injection guard: }, #{ and #( force the slow path.
	if r := search(map[string]any{"pattern": "}"}); len(r.Matches) != 0 {
		t.Fatalf("'}' matched panes: %v", ids(r))
	}
	if r := search(map[string]any{"pattern": "#{pane_id}"}); len(r.Matches) != 0 {
		t.Fatalf("'#{pane_id}' matched panes: %v", ids(r))
	}
	marker := filepath.Join(t.TempDir(), "pwned")
	if r := search(map[string]any{"pattern": "#(touch " + marker + ")"}); len(r.Matches) != 0 {
		t.Fatalf("'#(...)' matched panes: %v", ids(r))
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a #( pattern ran a shell command")
	}

	// is_caller: TMUX_PANE without TMUX is never the caller.
	e.setVar("TMUX_PANE", p0)
	if r := search(map[string]any{"pattern": "Needle_Alpha"}); r.Matches[0].IsCaller == nil || *r.Matches[0].IsCaller {
		t.Fatalf("is_caller: %+v", r.Matches[0].IsCaller)
	}
}

func TestSearchPanesOrderingAndWrap(t *testing.T) {
	e := shEnv(t)
	p0 := e.firstPane()
	var panes []string
	for i := 0; i < 11; i++ {
		panes = append(panes, e.tmux("new-window", "-d", "-P", "-F", "#{pane_id}", "-t", "fixture", "printf 'ORDERMARK\\n'; exec sleep 60"))
	}
	e.shSync(p0, "printf 'ORDER%s\\n' MARK")
	panes = append(panes, p0)
	sort.Slice(panes, func(i, j int) bool { return tools.PaneIDLess(panes[i], panes[j]) })
	var r tools.SearchPanesResult
	waitFor(t, "12 panes to show the marker", func() bool {
		r = tools.SearchPanesResult{}
		e.ok("search_panes", map[string]any{"pattern": "ORDERMARK"}, &r)
		return len(r.Matches) == 12
	})
	got := []string{}
	for _, m := range r.Matches {
		got = append(got, m.PaneID)
	}
	if strings.Join(got, " ") != strings.Join(panes, " ") || !tools.PaneIDLess("%2", "%10") || !tools.PaneIDLess("%10", "weird") || tools.PaneIDLess("zzz", "weird") {
		t.Fatalf("order %v, want %v", got, panes)
	}

	// Text split across the wrap column: only the joined slow path sees it.
	long := strings.Repeat("w", 75) + "WRAPNEEDLE"
	e.shSync(p0, "printf '%s\\n' "+long)
	e.ok("search_panes", map[string]any{"pattern": "WRAPNEEDLE", "content_start": -100}, &r)
	if len(r.Matches) != 1 || r.Matches[0].PaneID != p0 || !anyContains(r.Matches[0].MatchedLines, long) {
		t.Fatalf("wrapped slow path: %+v", r)
	}
}
