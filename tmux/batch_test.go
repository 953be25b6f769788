package tmux

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestBatchSplitsOutputs: each command's output comes back on its own,
// also for commands that print nothing, and matches the same command run
// alone.
func TestBatchSplitsOutputs(t *testing.T) {
	srv := testServer(t, "batch")
	ctx := context.Background()
	cmds := []Cmd{
		ListIDs("session", ""),
		SetOption(OptionTarget{ID: "s", Scope: ScopeSession}, "@fmx", "1"), // prints nothing
		DisplayMessage("s", "#{session_name}\n\nx"),                        // empty line inside
		ListIDs("pane", ""),
	}
	replies, err := srv.Batch(ctx, cmds...)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cmds {
		r := replies[i]
		if !r.Ran || r.Err != nil {
			t.Fatalf("%s: ran %v err %v", c.Name(), r.Ran, r.Err)
		}
		if i == 1 {
			if len(r.Lines) != 0 {
				t.Errorf("set-option printed %q", r.Lines)
			}
			continue
		}
		alone, err := srv.Exec(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(r.Lines, alone.Lines()) {
			t.Errorf("%s: batched %q, alone %q", c.Name(), r.Lines, alone.Lines())
		}
	}
}

// TestBatchAttributesFailure: tmux stops a list at the first failing
// command; its stderr is that command's error, earlier outputs are kept
// and later commands are marked as not run.
func TestBatchAttributesFailure(t *testing.T) {
	srv := testServer(t, "batchfail")
	replies, err := srv.Batch(context.Background(), ListIDs("session", ""), KillWindow("@999"), SetOption(OptionTarget{ID: "s", Scope: ScopeSession}, "@never", "1"))
	if err != nil {
		t.Fatal(err)
	}
	if r := replies[0]; !r.Ran || r.Err != nil || len(r.Lines) != 1 {
		t.Errorf("first: %+v", r)
	}
	if r := replies[1]; !r.Ran || r.Err == nil || r.Err.Sub != "kill-window" || !strings.Contains(r.Err.Error(), "can't find window") {
		t.Errorf("second: %+v", r)
	}
	if r := replies[2]; r.Ran || r.Err != nil {
		t.Errorf("third: %+v", r)
	}
	out, _ := srv.Exec(context.Background(), ShowOptions(OptionTarget{ID: "s", Scope: ScopeSession}, "@never"))
	if len(out.Lines()) != 0 {
		t.Errorf("command after the failure ran: %q", out.Lines())
	}
	// The first command failing.
	replies, err = srv.Batch(context.Background(), KillPane("%999"), ListIDs("session", ""))
	if err != nil {
		t.Fatal(err)
	}
	if replies[0].Err == nil || replies[1].Ran {
		t.Errorf("first failing: %+v", replies)
	}
	// One command: the same as Do.
	replies, err = srv.Batch(context.Background(), ListIDs("session", ""))
	if err != nil || len(replies) != 1 || replies[0].Err != nil || len(replies[0].Lines) != 1 {
		t.Errorf("single: %+v %v", replies, err)
	}
}

// TestSessionPanesMatchesListPanes: the one-request session listing gives
// what list-panes -s -t gives, linked windows included.
func TestSessionPanesMatchesListPanes(t *testing.T) {
	srv := testServer(t, "sesspanes")
	ctx := context.Background()
	for _, c := range [][]string{
		{"new-session", "-d", "-s", "b"},
		{"split-window", "-t", "s:0"},
		{"new-window", "-t", "s:"},
		{"link-window", "-s", "s:1", "-t", "b:5"},
		{"link-window", "-s", "s:0", "-t", "s:7"},
	} {
		if _, err := srv.Do(ctx, cmd(c...)); err != nil {
			t.Fatalf("%v: %v", c, err)
		}
	}
	// The new panes' shells print their prompts while the test reads, so
	// the cursor can move between the two listings: compare again until
	// two consecutive reads agree (a real mismatch never does).
	for _, name := range []string{"s", "b"} {
		n := name
		var got, want []Attrs
		for try := 0; try < 50; try++ {
			sess, g, err := SessionPanes(ctx, srv, &n, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			w, err := srv.Panes(ctx, PanesSession, sess["session_id"])
			if err != nil {
				t.Fatal(err)
			}
			got, want = g, w
			if reflect.DeepEqual(got, want) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("session %s:\n got %v\nwant %v", name, got, want)
		}
	}
	missing := "nope"
	if _, _, err := SessionPanes(ctx, srv, &missing, nil, nil); err == nil || !strings.Contains(err.Error(), "session_name=nope") {
		t.Errorf("missing session: %v", err)
	}
}

// TestPaneActGuards: the commands run only for a pane listed once; a
// missing pane and a pane of a linked window (listed twice) give the
// lookup's error and nothing runs.
func TestPaneActGuards(t *testing.T) {
	srv := testServer(t, "paneact")
	ctx := context.Background()
	ids, err := srv.Do(ctx, cmd("list-panes", "-a", "-F", "#{pane_id}"))
	if err != nil || len(ids) != 1 {
		t.Fatalf("panes %q %v", ids, err)
	}
	pane := ids[0]
	mark := func(id string) []Cmd {
		return []Cmd{SetOption(OptionTarget{ID: id, Scope: ScopePane}, "@acted", "yes"), DisplayMessage(id, "#{@acted}")}
	}
	acted := func(id string) string {
		out, err := srv.Exec(ctx, DisplayMessage(id, "#{@acted}"))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(out.Lines(), "")
	}
	p, replies, err := PaneAct(ctx, srv, PaneTarget{PaneID: &pane}, mark)
	if err != nil || p["pane_id"] != pane || len(replies) != 2 || strings.Join(replies[1].Lines, "") != "yes" {
		t.Fatalf("unique pane: %v %v %+v", p, err, replies)
	}
	missing := "%999"
	if _, _, err := PaneAct(ctx, srv, PaneTarget{PaneID: &missing}, mark); err == nil || err.Error() != "Pane not found: %999" {
		t.Fatalf("missing pane: %v", err)
	}
	// Link the window into a second session: the pane is listed twice.
	if _, err := srv.Do(ctx, cmd("set-option", "-p", "-t", pane, "-u", "@acted")); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do(ctx, cmd("new-session", "-d", "-s", "other")); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do(ctx, cmd("link-window", "-s", "s:0", "-t", "other:5")); err != nil {
		t.Fatal(err)
	}
	_, _, err = PaneAct(ctx, srv, PaneTarget{PaneID: &pane}, mark)
	var amb *AmbiguousError
	if !errors.As(err, &amb) || amb.Count != 2 {
		t.Fatalf("linked window: %v", err)
	}
	if got := acted(pane); got != "" {
		t.Fatalf("commands ran for an ambiguous pane: @acted=%q", got)
	}
}

// TestNewWindowIn: a window is created in the session named by id, by a
// plain name or by any other name, and read back as RefreshWindow reads
// it; a missing session is the lookup's error and creates nothing.
func TestNewWindowIn(t *testing.T) {
	srv := testServer(t, "newwin")
	ctx := context.Background()
	if _, err := srv.Do(ctx, cmd("new-session", "-d", "-s", "odd name#1")); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do(ctx, cmd("new-session", "-d", "-s", "ss")); err != nil { // a prefix match for "s" must not be taken
		t.Fatal(err)
	}
	sid, err := srv.Do(ctx, cmd("display-message", "-p", "-t", "=s:", "#{session_id}"))
	if err != nil {
		t.Fatal(err)
	}
	str := func(s string) *string { return &s }
	count := func() int {
		ids, err := srv.Do(ctx, cmd("list-windows", "-a", "-F", "#{window_id}"))
		if err != nil {
			t.Fatal(err)
		}
		return len(ids)
	}
	for _, tc := range []struct {
		name    string
		ref     SessionRef
		session string
	}{
		{"by id", SessionRef{ID: str(sid[0])}, "s"},
		{"by plain name", SessionRef{Name: str("s")}, "s"},
		{"by other name", SessionRef{Name: str("odd name#1")}, "odd name#1"},
		{"first session", SessionRef{}, "odd name#1"},
	} {
		sess, w, err := NewWindowIn(ctx, srv, tc.ref, NewWindow{Name: str(tc.name)})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		want, err := RefreshWindow(ctx, srv, w["window_id"])
		if err != nil {
			t.Fatal(err)
		}
		// window_linked counts references, and a notification queued by
		// new-window holds one until the request ends; window_activity is
		// a time in seconds, which may tick between the two reads.
		for _, volatile := range []string{"window_linked", "window_activity"} {
			delete(w, volatile)
			delete(want, volatile)
		}
		if !reflect.DeepEqual(w, want) || w["session_name"] != tc.session || sess["session_name"] != tc.session || w["window_name"] != tc.name {
			t.Errorf("%s: got %v, want %v in %q", tc.name, w, want, tc.session)
		}
	}
	before := count()
	for _, ref := range []SessionRef{{Name: str("s2")}, {Name: str("client-1")}, {ID: str("$99")}, {Name: str("s:0")}} {
		var nf *NotFoundError
		if _, _, err := NewWindowIn(ctx, srv, ref, NewWindow{}); !errors.As(err, &nf) {
			t.Errorf("%+v: %v", ref, err)
		}
	}
	if n := count(); n != before {
		t.Errorf("windows %d -> %d after failed creates", before, n)
	}
}

// TestPaneCapturesAgreesWithListing: the one-request search finds the
// panes list-panes -f finds, each once (a linked window too), with the
// text capture-pane gives, server-wide and per session.
func TestPaneCapturesAgreesWithListing(t *testing.T) {
	srv := testServer(t, "matching")
	ctx := context.Background()
	for _, args := range [][]string{
		{"new-window", "-d", "-t", "s:", "printf 'needle-1 %%3 50%%\\n'; exec sleep 60"},
		{"new-window", "-d", "-t", "s:", "printf 'hay\\n'; exec sleep 60"},
		{"new-session", "-d", "-s", "odd name", "printf 'NEEDLE-2\\n'; exec sleep 60"},
		{"new-session", "-d", "-s", "t2", "printf 'needle-3\\n'; exec sleep 60"},
		{"link-window", "-s", "s:1", "-t", "t2:7"},
	} {
		if _, err := srv.Do(ctx, cmd(args...)); err != nil {
			t.Fatal(args, err)
		}
	}
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		name    string
		ref     *SessionRef
		session string
	}{
		{"server", nil, ""},
		{"plain name", &SessionRef{Name: str("t2")}, "t2"},
		{"odd name", &SessionRef{Name: str("odd name")}, "odd name"},
	} {
		var want []string
		deadline := time.Now().Add(5 * time.Second)
		for {
			// The reference: list-panes -f with the same test.
			filter, _ := ContainsFilter("needle", false, false)
			list := cmd("list-panes", "-a", "-f", filter, "-F", "#{pane_id}")
			if tc.session != "" {
				list = cmd("list-panes", "-t", "="+tc.session, "-s", "-f", filter, "-F", "#{pane_id}")
			}
			out, err := srv.Exec(ctx, list)
			if err != nil {
				t.Fatal(err)
			}
			want = nil
			seen := map[string]bool{}
			for _, id := range out.Lines() {
				if !seen[id] {
					seen[id] = true
					want = append(want, id)
				}
			}
			if len(want) >= 1 && (tc.session != "" || len(want) == 3) || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		filter, _ := ContainsFilter("needle", false, false)
		m, err := PaneCaptures(ctx, srv, tc.ref, filter, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !reflect.DeepEqual(m.IDs, want) {
			t.Errorf("%s: ids %q, list-panes -f %q", tc.name, m.IDs, want)
		}
		for i, id := range m.IDs {
			out, err := srv.Exec(ctx, Capture{Target: id, Join: true}.Cmd())
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(m.Texts[i], out.Lines()) {
				t.Errorf("%s: %s text %q, capture %q", tc.name, id, m.Texts[i], out.Lines())
			}
		}
		if len(m.Rows) < 6 {
			t.Errorf("%s: %d pane rows", tc.name, len(m.Rows))
		}
	}
	var nf *NotFoundError
	if _, err := PaneCaptures(ctx, srv, &SessionRef{Name: str("nope")}, "", nil, nil); !errors.As(err, &nf) {
		t.Errorf("missing session: %v", err)
	}
	if _, ok := ContainsFilter("#{pane_id}", false, false); ok {
		t.Error("a format pattern was tested by tmux")
	}
	// No filter, a row range: every pane of the session, as capture-pane -S -E reads it.
	start, end := -5, 3
	m, err := PaneCaptures(ctx, srv, &SessionRef{Name: str("s")}, "", &start, &end)
	if err != nil || len(m.IDs) != 3 {
		t.Fatalf("all panes of s: %q %v", m.IDs, err)
	}
	for i, id := range m.IDs {
		out, err := srv.Exec(ctx, Capture{Target: id, Start: "-5", End: "3", Join: true}.Cmd())
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Texts[i]; !reflect.DeepEqual(got, out.Lines()) && !(len(got) == 0 && len(out.Lines()) == 0) {
			t.Errorf("%s: text %q, capture %q", id, got, out.Lines())
		}
	}
}
