package tools

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/fleetmux/fleetmux/mcp/pyfmt"
	"github.com/fleetmux/fleetmux/tmux"
)

// searchPanes finds panes whose captured text matches a pattern.
func checkSearchPattern(a searchPanesArgs) error {
	_, err := searchPattern(a.Pattern, a.Regex, a.MatchCase)
	return err
}

func searchPattern(pattern string, regex, matchCase bool) (*regexp.Regexp, error) {
	re, err := compileUserPattern(pattern, regex, matchCase)
	if err != nil {
		return nil, Expectedf("Invalid regex pattern: %v", err)
	}
	return re, nil
}

type searchPanesArgs struct {
	Pattern                string // checked by checkSearchPattern
	Regex, MatchCase       bool
	SessionName, SessionID *string
	ContentStart           *int
	ContentEnd             *int
	MaxMatchedLinesPerPane *int
	Offset, Limit          *int
}

func searchPanes(ctx context.Context, c *Call, a searchPanesArgs) (any, error) {
	pattern := a.Pattern
	regex, matchCase := a.Regex, a.MatchCase
	re, _ := searchPattern(pattern, regex, matchCase) // checked by checkSearchPattern
	srv := c.srv
	contentStart, contentEnd := a.ContentStart, a.ContentEnd
	scoped := a.SessionName != nil || a.SessionID != nil

	// One request lists the panes and captures the candidates: the panes
	// whose visible text tmux finds the pattern in (when it can test the
	// pattern and no row range is asked), else every pane.
	filter := ""
	if contentStart == nil && contentEnd == nil {
		filter, _ = tmux.ContainsFilter(pattern, regex, matchCase)
	}
	var ref *tmux.SessionRef
	if scoped {
		ref = &tmux.SessionRef{Name: a.SessionName, ID: a.SessionID}
	}
	found, err := tmux.PaneCaptures(ctx, srv, ref, filter, contentStart, contentEnd)
	if err != nil {
		return nil, err
	}
	all, candidates, captured := found.Rows, found.IDs, found.Texts
	perPane := 50
	if n := a.MaxMatchedLinesPerPane; n != nil {
		perPane = *n
	}
	matches := []PaneContentMatch{}
	perPaneTruncated := false
	caller := c.NewCallerCheck(ctx, srv)
	for i, id := range candidates {
		pane, err := findPaneRow(all, id)
		if err != nil {
			return nil, err
		}
		if pane == nil {
			continue
		}
		var hits []string
		for _, l := range captured[i] {
			if re.MatchString(l) {
				hits = append(hits, l)
			}
		}
		if len(hits) == 0 {
			continue
		}
		if len(hits) > perPane {
			hits = pyfmt.SliceFrom(hits, -perPane)
			perPaneTruncated = true
		}
		matches = append(matches, PaneContentMatch{
			PaneID:             id,
			PaneEdges:          paneEdges(pane),
			PaneTty:            attrPtr(pane, "pane_tty"),
			PaneCurrentCommand: attrPtr(pane, "pane_current_command"),
			PaneCurrentPath:    attrPtr(pane, "pane_current_path"),
			WindowID:           attrPtr(pane, "window_id"),
			WindowName:         attrPtr(pane, "window_name"),
			SessionID:          attrPtr(pane, "session_id"),
			SessionName:        attrPtr(pane, "session_name"),
			MatchedLines:       append([]string{}, hits...),
			IsCaller:           caller.isCaller(id),
			Host:               c.HostField(),
		})
	}

	sort.SliceStable(matches, func(i, j int) bool { return PaneIDLess(matches[i].PaneID, matches[j].PaneID) })
	total := len(matches)
	offset := 0
	if n := a.Offset; n != nil {
		offset = *n
	}
	limit := a.Limit
	pageStart := min(max(0, offset), total)
	pageEnd := total
	if limit != nil {
		pageEnd = min(pageStart+max(0, *limit), total)
	}
	page := append([]PaneContentMatch{}, matches[pageStart:pageEnd]...)
	skipped := []string{}
	for _, m := range matches[pageEnd:] {
		skipped = append(skipped, m.PaneID)
	}
	return SearchPanesResult{
		Matches:           page,
		Truncated:         perPaneTruncated || len(skipped) > 0,
		TruncatedPanes:    skipped,
		TotalPanesMatched: total,
		Offset:            offset,
		Limit:             limit,
	}, nil
}

// findPaneRow returns the listed row of a pane id, nil when it is gone,
// or an ambiguity error when a linked window lists it more than once.
func findPaneRow(rows []tmux.Attrs, id string) (tmux.Attrs, error) {
	var found tmux.Attrs
	n := 0
	for _, r := range rows {
		if r["pane_id"] == id {
			if found == nil {
				found = r
			}
			n++
		}
	}
	if n > 1 {
		return nil, &tmux.AmbiguousError{Count: n, Key: "pane_id", Value: id}
	}
	return found, nil
}

// PaneIDLess orders pane ids numerically ("%2" before "%10"); ids that
// are not "%<int>" come after, in text order.
func PaneIDLess(a, b string) bool {
	ka, na := paneSortKey(a)
	kb, nb := paneSortKey(b)
	if na != nb {
		return na
	}
	return ka < kb
}

func paneSortKey(id string) (string, bool) {
	n, err := tmux.ParseInt(strings.TrimLeft(id, "%"))
	if err != nil {
		return id, false
	}
	return fmt.Sprintf("%09d", n), true
}
