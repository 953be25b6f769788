package tmux

import (
	"context"
	"strconv"
	"strings"
)

// PaneMatches is what PaneCaptures read: every pane's row (list-panes
// -a) and, for each pane captured, in tmux's order (a pane
// of a linked window once), its id and its visible text.
type PaneMatches struct {
	Rows  []Attrs
	IDs   []string
	Texts [][]string
}

// PaneCaptures captures panes (capture-pane -p -J, rows start to end
// when set) in one request with the pane listing: run-shell -C expands a
// format loop over the panes that emits, for each pane, a marker line and
// its capture command, and runs the result. The emitted commands hold
// only constants, numbers and pane ids. filter, when set, is a test from
// ContainsFilter: only the panes whose visible contents pass it are
// captured (it stays inside the loop's condition). ref limits the panes
// to one session (nil: the whole server); a session tmux cannot name
// exactly is looked up first.
func PaneCaptures(ctx context.Context, s *Server, ref *SessionRef, filter string, start, end *int) (m PaneMatches, err error) {
	marker, err := newMarker("fleetmux-pane-")
	if err != nil {
		return m, err
	}
	// display-message runs its text through strftime before expanding
	// it: the id's '%' is doubled.
	capture := `display-message -p "` + marker + ` %#{pane_id}" ; capture-pane -p -J -t #{pane_id}`
	if start != nil {
		capture += " -S " + strconv.Itoa(*start)
	}
	if end != nil {
		capture += " -E " + strconv.Itoa(*end)
	}
	each := "#{P:" + capture + " ;}"
	if filter != "" {
		each = "#{P:#{?" + filter + "," + capture + " ;,}}"
	}
	var plan sessionPlan
	loop := cmd("run-shell", "-C", "#{S:#{W:"+each+"}}")
	if ref != nil {
		if plan, err = planSession(ctx, s, *ref); err != nil {
			return m, err
		}
		loop = cmd("run-shell", "-t", plan.target+":", "-C", "#{W:"+each+"}")
	}
	pre := plan.pre
	listing := paneListing(PaneFields)
	replies, err := s.Batch(ctx, append(pre, loop, listing)...)
	if err != nil {
		return m, err
	}
	if ref != nil {
		sess, retry, err := plan.judge(s, replies)
		if err != nil {
			return m, err
		}
		if retry {
			id := sess["session_id"]
			return PaneCaptures(ctx, s, &SessionRef{ID: &id}, filter, start, end)
		}
	}
	found := replies[len(pre)]
	if found.Err != nil {
		return m, found.Err
	}
	if m.Rows, err = rowsOf(s, listing, replies[len(pre)+1], PaneFields); err != nil {
		return m, err
	}
	seen := map[string]bool{}
	skip := false
	for _, line := range found.Lines {
		if id, isMark := strings.CutPrefix(line, marker+" "); isMark {
			skip = seen[id]
			if !skip {
				seen[id] = true
				m.IDs = append(m.IDs, id)
				m.Texts = append(m.Texts, []string{})
			}
			continue
		}
		if !skip && len(m.Texts) > 0 {
			m.Texts[len(m.Texts)-1] = append(m.Texts[len(m.Texts)-1], line)
		}
	}
	for i, lines := range m.Texts {
		for len(lines) > 0 && lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1] // as SplitLines ends a capture
		}
		m.Texts[i] = lines
	}
	return m, nil
}
