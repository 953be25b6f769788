package mcp

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/fleetmux/fleetmux/mcp/surface"
)

// The grouped text of a fan-out action: hosts whose outcome reads the
// same share one block. What tells hosts apart is what the command
// printed and how it ended, never what differs between any two real
// hosts (prompts, user@hostname, echoed input, tmux ids, job ids,
// timings): run_command groups on the rows between its wrapper's echo
// and the next prompt (RunCommandResult.Printed). The largest group
// comes first with its output in full; each outlier then shows how its
// output differs from it, bounded, so that hundreds of hosts with a few
// distinct answers read in a few kilobytes.

// Bounds of the grouped text's bodies, in rows and bytes: the first
// (largest) group's output, and each other group's.
const (
	groupMainRows    = 100
	groupMainBytes   = 6000
	groupOutlierRows = 20
	groupOutlierByte = 1000
)

type outcomeGroup struct {
	hosts []string
	head  string
	body  []string
	alone string // the head as the single host's own text (errors naming it)
}

// groupedText is a fan-out action's text: a summary line, then one block
// per distinct outcome, naming its hosts compactly ("dev-[01-12]").
func groupedText(tool string, outs []HostOutcome, sum FanoutSummary) string {
	var groups []*outcomeGroup
	byKey := map[string]*outcomeGroup{}
	printed := false
	for _, o := range outs {
		head, body, alone := outcomeText(tool, o)
		if r, ok := o.Result.(RunCommandResult); ok && r.Printed() != nil {
			printed = true
		}
		key := head + "\x00" + strings.Join(body, "\n")
		g := byKey[key]
		if g == nil {
			g = &outcomeGroup{head: head, body: body, alone: alone}
			byKey[key] = g
			groups = append(groups, g)
		}
		g.hosts = append(g.hosts, o.Host)
	}
	// The largest group first: the common answer, then the odd ones out.
	slices.SortStableFunc(groups, func(a, b *outcomeGroup) int { return len(b.hosts) - len(a.hosts) })
	var b strings.Builder
	fmt.Fprintf(&b, "%s on %d hosts: %d ok", tool, sum.Hosts, sum.OK)
	for _, c := range []struct {
		n    int
		what string
	}{{sum.Error, "failed"}, {sum.Refused, "refused"}, {sum.Skipped, "skipped"}} {
		if c.n > 0 {
			fmt.Fprintf(&b, ", %d %s", c.n, c.what)
		}
	}
	if len(groups) > 1 {
		fmt.Fprintf(&b, "; %d distinct outcomes", len(groups))
	}
	b.WriteString("\n")
	if printed {
		b.WriteString("(output: what the command printed, without prompts or echoed input; each host's screen is in structuredContent)\n")
	}
	var main *outcomeGroup
	for i, g := range groups {
		noun := "hosts"
		head := g.head
		if len(g.hosts) == 1 {
			noun = "host"
			if g.alone != "" {
				head = g.alone
			}
		}
		if i > 0 && main != nil && len(g.body) > 0 && len(main.body) > 0 {
			if d, ok := lineDiff(main.body, g.body); ok {
				fmt.Fprintf(&b, "\n%d %s (%s): %s; output differs from the first group's:\n", len(g.hosts), noun, compactHosts(g.hosts), head)
				writeBody(&b, d, groupOutlierRows, groupOutlierByte)
				continue
			}
		}
		fmt.Fprintf(&b, "\n%d %s (%s): %s\n", len(g.hosts), noun, compactHosts(g.hosts), head)
		if i == 0 {
			main = g
			writeBody(&b, g.body, groupMainRows, groupMainBytes)
		} else {
			writeBody(&b, g.body, groupOutlierRows, groupOutlierByte)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// writeBody writes rows, at most maxRows of them and about maxBytes,
// saying how many were left out.
func writeBody(b *strings.Builder, rows []string, maxRows, maxBytes int) {
	n := 0
	for i, r := range rows {
		if i >= maxRows || n+len(r) > maxBytes && i > 0 {
			fmt.Fprintf(b, "… %d more line%s (in structuredContent)\n", len(rows)-i, plural(len(rows)-i))
			return
		}
		if len(r) > maxBytes {
			r = truncateUTF8(r, maxBytes) + "…"
		}
		b.WriteString(r)
		b.WriteString("\n")
		n += len(r) + 1
	}
}

// truncateUTF8 cuts s to at most n bytes on a rune boundary.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// outcomeText is how one host's outcome reads in the grouped text: a
// head line and the rows of its body; hosts whose head and body are
// equal are grouped. alone, when not empty, is the head to show when
// the host is alone in its group (an error that names it).
func outcomeText(tool string, o HostOutcome) (head string, body []string, alone string) {
	switch o.Outcome {
	case surface.OutcomeSkipped:
		return "skipped (not started: max_failures reached)", nil, ""
	case surface.OutcomeError, surface.OutcomeRefused:
		text := firstLine(deref(o.Error))
		// An error naming its host reads the same on every host.
		generic := text
		for _, q := range []string{strconv.Quote(o.Host), "'" + o.Host + "'"} {
			generic = strings.ReplaceAll(generic, q, "(each)")
		}
		if generic != text {
			return o.Outcome + ": " + generic, nil, o.Outcome + ": " + text
		}
		return o.Outcome + ": " + text, nil, ""
	}
	switch r := o.Result.(type) {
	case RunCommandResult:
		switch {
		case r.Pending && r.JobID != nil: // each host's job has its own id
			return "running on as job (each host's job_id is in structuredContent)", nil, ""
		case r.TimedOut:
			// What a command printed before it was cut off is not known
			// apart from the prompts around it: the outcome alone.
			return "timed out", nil, ""
		}
		head = "exit status unknown"
		if r.ExitStatus != nil {
			head = "exit " + strconv.Itoa(*r.ExitStatus)
		}
		lines := r.Printed()
		if lines == nil {
			lines = r.Output
			// The shell's prompt after the command is on screen or not
			// yet, by a few milliseconds: it does not tell hosts apart.
			if n := len(lines); n >= 2 {
				if last := strings.TrimRight(lines[n-1], " "); last != "" && strings.HasPrefix(lines[0], last) {
					lines = lines[:n-1]
				}
			}
		}
		head += fmt.Sprintf(", %d line%s", len(lines), plural(len(lines)))
		return head, lines, ""
	case WaitForTextResult:
		return r.Outcome, r.MatchedLines, ""
	case SessionInfo:
		return "session " + deref(r.SessionName) + " created", nil, ""
	case WindowInfo:
		return "window " + deref(r.WindowName) + " created", nil, ""
	case string:
		return "ok: " + idPattern.ReplaceAllString(r, "${1}…"), nil, ""
	}
	return "ok", nil, ""
}

// lineDiff renders how b differs from a, as hunks of "- " (rows of a
// only) and "+ " (rows of b only) rows headed by "@@ row N" (N counts
// a's rows from 1). ok is false when the diff would not be shorter than
// b itself, which then reads better whole. Rows are compared whole; the
// longest common subsequence is computed on at most 400 rows of each.
func lineDiff(a, b []string) ([]string, bool) {
	const limit = 400
	if len(a) > limit || len(b) > limit {
		return nil, false
	}
	// lcs[i][j]: length of the longest common subsequence of a[i:], b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []string
	bytes, inHunk := 0, false
	add := func(s string) {
		out = append(out, s)
		bytes += len(s) + 1
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			i, j, inHunk = i+1, j+1, false
			continue
		case !inHunk:
			add("@@ row " + strconv.Itoa(i+1))
			inHunk = true
		}
		if j < len(b) && (i == len(a) || lcs[i][j+1] >= lcs[i+1][j]) {
			add("+ " + b[j])
			j++
		} else {
			add("- " + a[i])
			i++
		}
	}
	whole := 0
	for _, r := range b {
		whole += len(r) + 1
	}
	return out, bytes < whole
}
