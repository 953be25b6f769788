package tools

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fleetmux/fleetmux/mcp/pyfmt"
	"github.com/fleetmux/fleetmux/tmux"
)

const (
	captureSinceCursorPrefix = "capture-since-v1:"
	captureSinceAttempts     = 3
)

// sinceCursor is a decoded capture_since cursor: where the cursor row was
// on tmux's absolute grid, and fingerprints of that row and the rows
// below it.
type sinceCursor struct {
	PaneID      string
	PanePid     string
	HistorySize int
	PaneHeight  int
	AnchorAbs   int
	AnchorHash  *string
	BelowHashes []string
}

// paneRead is one stable read of a pane.
type paneRead struct {
	state      tmux.PaneState
	cursorRows []string
	lines      []string
	missed     bool
}

// captureSince returns the rows written since a cursor (or the visible
// screen and a first cursor).
func checkCaptureSince(a captureSinceArgs) error {
	maxLines, maxBytes := a.MaxLines, a.MaxBytes
	if maxLines != nil && *maxLines <= 0 {
		return Expectedf("max_lines must be positive or None (received %d)", *maxLines)
	}
	if maxBytes != nil && *maxBytes <= 0 {
		return Expectedf("max_bytes must be positive or None (received %d)", *maxBytes)
	}
	_, err := sinceCursorArg(a.Cursor)
	return err
}

// sinceCursorArg decodes the cursor argument s (nil when absent).
func sinceCursorArg(s *string) (*sinceCursor, error) {
	if s != nil {
		return decodeSinceCursor(*s)
	}
	return nil, nil
}

type captureSinceArgs struct {
	MaxLines, MaxBytes                       *int
	Cursor                                   *string // checked by checkCaptureSince
	PaneID, SessionName, SessionID, WindowID *string
}

func captureSince(ctx context.Context, c *Call, a captureSinceArgs) (any, error) {
	maxLines, maxBytes := a.MaxLines, a.MaxBytes
	cur, _ := sinceCursorArg(a.Cursor) // checked by checkCaptureSince
	target := tmux.PaneTarget{
		PaneID: a.PaneID, SessionName: a.SessionName,
		SessionID: a.SessionID, WindowID: a.WindowID,
	}
	if cur != nil && target.PaneID == nil && target.SessionName == nil && target.SessionID == nil && target.WindowID == nil {
		id := cur.PaneID
		target.PaneID = &id
	}
	srv := c.srv
	start := time.Now()
	var (
		read   paneRead
		done   bool
		paneID string
	)
	if id := target.PaneID; id != nil && tmux.IsPaneID(*id) && (cur == nil || *id == cur.PaneID) {
		// The lookup and the reads of the common case in one request.
		paneID = *id
		r := &paneReader{srv: srv, paneID: paneID}
		cmds := r.quickCmds(cur)
		_, replies, err := tmux.PaneRead(ctx, srv, target, func(string) []tmux.Cmd { return cmds })
		if err != nil {
			return nil, err
		}
		if read, done, err = r.quick(ctx, cur, replies); err != nil {
			return nil, err
		}
	} else {
		pane, err := tmux.ResolvePane(ctx, srv, target)
		if err != nil {
			return nil, err
		}
		paneID = pane["pane_id"]
		if cur != nil && paneID != cur.PaneID {
			return nil, Expectedf("cursor pane %s does not match requested pane %s", cur.PaneID, paneID)
		}
	}
	if !done {
		r := &paneReader{srv: srv, paneID: paneID}
		var err error
		if cur == nil {
			read, err = r.stableVisible(ctx, "", false)
		} else {
			read, err = r.delta(ctx, cur)
		}
		if err != nil {
			return nil, err
		}
	}
	lim := limitTail(read.lines, maxLines, maxBytes)
	elapsed := time.Since(start).Seconds()
	return CaptureSinceResult{
		PaneID:         paneID,
		Cursor:         encodeSinceCursor(paneID, read.state, read.cursorRows),
		Lines:          lim.lines,
		ElapsedSeconds: PyFloat(round3(elapsed)),
		LinesMissed:    read.missed,
		Truncated:      lim.truncated,
		TruncatedLines: lim.truncLines,
		TruncatedBytes: lim.truncBytes,
	}, nil
}

// quickCmds are the reads of a capture_since call's common case, sent as
// one request: without a cursor, the pane's state, its visible screen,
// its rows from the cursor row and its state again; with one, the history
// limit first, and the rows from the cursor's anchor row instead of the
// screen. The rows start where tmux computes them when it reads them.
func (r *paneReader) quickCmds(cur *sinceCursor) []tmux.Cmd {
	state := tmux.DisplayMessage(r.paneID, tmux.PaneStateFormat)
	capture := tmux.Capture{Target: r.paneID}
	fromCursor := capture.FromRow("#{cursor_y}")
	if cur == nil {
		return []tmux.Cmd{state, capture.Cmd(), fromCursor, state}
	}
	return []tmux.Cmd{tmux.DisplayMessage(r.paneID, tmux.HistoryLimitFormat), state,
		capture.FromRow("#{e|-:" + strconv.Itoa(cur.AnchorAbs) + ",#{history_size}}"), fromCursor, state}
}

// quick judges the replies of quickCmds as stableVisible and delta judge
// their separate reads. done is false when the case is not the common one
// (the pane changed between the two state reads, the history may have
// been trimmed): the step-by-step reads take over.
func (r *paneReader) quick(ctx context.Context, cur *sinceCursor, replies []tmux.Reply) (read paneRead, done bool, err error) {
	limit := 0
	if cur != nil {
		if limit, err = parseLimit(replies[0].Lines); err != nil {
			return read, false, err
		}
		replies = replies[1:]
	}
	before, err := paneStateOf(replies[0].Lines, nil)
	if err != nil {
		return read, false, err
	}
	rows := replies[1].Lines
	if rows == nil {
		rows = []string{}
	}
	pid := before.PanePid
	if cur == nil {
		if err := r.deadFirstRead(before); err != nil {
			return read, false, err
		}
	} else {
		pid = cur.PanePid
		if err := lifecycleChanged(r.paneID, before, pid); err != nil {
			return read, false, err
		}
		if anchorLost(cur, before) {
			read, err = r.missedFallback(ctx, cur)
			return read, err == nil, err
		}
		if historyTrimRisk(cur, before, limit) {
			return read, false, nil
		}
		if cur.AnchorAbs-before.HistorySize >= before.PaneHeight {
			rows = []string{}
		}
	}
	after, err := paneStateOf(replies[3].Lines, nil)
	if err != nil {
		return read, false, err
	}
	if err := lifecycleChanged(r.paneID, after, pid); err != nil {
		return read, false, err
	}
	if before != after {
		return read, false, nil
	}
	if cur != nil {
		rows = dropSeenRows(rows, cur)
	}
	return paneRead{state: after, cursorRows: cursorRowsOf(after, replies[2]), lines: rows}, true, nil
}

// cursorRowsOf is cursorRows read from a reply: none when the cursor is
// below the screen.
func cursorRowsOf(st tmux.PaneState, rep tmux.Reply) []string {
	if st.CursorY >= st.PaneHeight || rep.Lines == nil {
		return []string{}
	}
	return rep.Lines
}

// paneStateOf parses a PaneStateFormat read; a reply that is not what
// the format promised is the reference's ValueError.
func paneStateOf(lines []string, err error) (tmux.PaneState, error) {
	if err != nil {
		return tmux.PaneState{}, err
	}
	st, err := tmux.PaneStateOf(lines)
	if err != nil {
		return st, pyValueError(err)
	}
	return st, nil
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

// paneReader issues the plain (unbounded) tmux reads of capture_since.
type paneReader struct {
	srv    *tmux.Server
	paneID string
}

// state probes the pane (tmux.PaneStateOf).
func (r *paneReader) state(ctx context.Context) (tmux.PaneState, error) {
	return paneStateOf(r.srv.Display(ctx, r.paneID, tmux.PaneStateFormat))
}

func (r *paneReader) historyLimit(ctx context.Context) (int, error) {
	lines, err := r.srv.Display(ctx, r.paneID, tmux.HistoryLimitFormat)
	if err != nil {
		return 0, err
	}
	return parseLimit(lines)
}

// parseLimit reads a HistoryLimitFormat reply (no line reads as 0).
func parseLimit(lines []string) (int, error) {
	raw := "0"
	if len(lines) > 0 {
		raw = lines[0]
	}
	n, err := tmux.ParseInt(raw)
	if err != nil {
		return 0, pyValueError(err)
	}
	return n, nil
}

// pyValueError renders a tmux reply parse failure as the reference's
// unexpected ValueError.
func pyValueError(err error) error {
	var pe *tmux.ParseError
	if errors.As(err, &pe) && !pe.Unpack {
		return Unexpected("ValueError", fmt.Errorf("invalid literal for int() with base 10: %s", pyfmt.Repr(pe.Value)))
	}
	return Unexpected("ValueError", err)
}

// capture returns rows of the pane (start "" = visible screen).
func (r *paneReader) capture(ctx context.Context, start string) ([]string, error) {
	out, err := r.srv.Exec(ctx, tmux.Capture{Target: r.paneID, Start: start}.Cmd())
	if err != nil {
		return nil, err
	}
	lines := out.Lines()
	if lines == nil {
		lines = []string{}
	}
	return lines, nil
}

// settle ends a read: the rows from before's cursor to the bottom, then
// the pane's state again, which must still be the same process (pid).
func (r *paneReader) settle(ctx context.Context, before tmux.PaneState, pid string) ([]string, tmux.PaneState, error) {
	rows, err := r.cursorRows(ctx, before)
	if err != nil {
		return nil, tmux.PaneState{}, err
	}
	after, err := r.state(ctx)
	if err != nil {
		return nil, tmux.PaneState{}, err
	}
	if err := lifecycleChanged(r.paneID, after, pid); err != nil {
		return nil, tmux.PaneState{}, err
	}
	return rows, after, nil
}

// cursorRows captures the rows from the cursor row to the bottom.
func (r *paneReader) cursorRows(ctx context.Context, st tmux.PaneState) ([]string, error) {
	if st.CursorY >= st.PaneHeight {
		return []string{}, nil
	}
	return r.capture(ctx, strconv.Itoa(st.CursorY))
}

func (r *paneReader) deadFirstRead(st tmux.PaneState) error {
	if st.Dead {
		return Expectedf("pane %s died during pane read", r.paneID)
	}
	return nil
}

// lifecycle refuses a dead or respawned pane.
func lifecycleChanged(paneID string, st tmux.PaneState, pid string) error {
	if st.Dead {
		return Expectedf("pane %s died; cursor/baseline anchor is no longer valid", paneID)
	}
	if st.PanePid != pid {
		return Expectedf("pane %s was respawned (pid %s -> %s); cursor/baseline anchor is no longer valid", paneID, pid, st.PanePid)
	}
	return nil
}

// stableVisible captures the visible screen and the cursor rows between
// two identical state probes (up to three attempts). With a baseline pid
// the pane must still run that process.
func (r *paneReader) stableVisible(ctx context.Context, baselinePid string, haveBaseline bool) (paneRead, error) {
	for range captureSinceAttempts {
		before, err := r.state(ctx)
		if err != nil {
			return paneRead{}, err
		}
		expected := baselinePid
		if !haveBaseline {
			if err := r.deadFirstRead(before); err != nil {
				return paneRead{}, err
			}
			expected = before.PanePid
		} else if err := lifecycleChanged(r.paneID, before, expected); err != nil {
			return paneRead{}, err
		}
		lines, err := r.capture(ctx, "")
		if err != nil {
			return paneRead{}, err
		}
		rows, after, err := r.settle(ctx, before, expected)
		if err != nil {
			return paneRead{}, err
		}
		if before == after {
			return paneRead{state: after, cursorRows: rows, lines: lines}, nil
		}
	}
	st, err := r.state(ctx)
	if err != nil {
		return paneRead{}, err
	}
	if !haveBaseline {
		err = r.deadFirstRead(st)
	} else {
		err = lifecycleChanged(r.paneID, st, baselinePid)
	}
	if err != nil {
		return paneRead{}, err
	}
	rows, err := r.cursorRows(ctx, st)
	if err != nil {
		return paneRead{}, err
	}
	lines, err := r.capture(ctx, "")
	if err != nil {
		return paneRead{}, err
	}
	return paneRead{state: st, cursorRows: rows, lines: lines, missed: true}, nil
}

func (r *paneReader) missedFallback(ctx context.Context, cur *sinceCursor) (paneRead, error) {
	read, err := r.stableVisible(ctx, cur.PanePid, true)
	read.missed = true
	return read, err
}

// anchorLost reports whether the sampled state proves the cursor's row is
// gone: beyond the bottom, history wiped, or history trimmed (a shrink
// without a vertical grow).
func anchorLost(cur *sinceCursor, st tmux.PaneState) bool {
	if cur.AnchorAbs > st.HistorySize+st.PaneHeight-1 {
		return true
	}
	if st.HistorySize == 0 && cur.HistorySize > 0 {
		return true
	}
	return st.HistorySize < cur.HistorySize && st.PaneHeight <= cur.PaneHeight
}

// trimRiskFloor is the history size from which tmux may drop old rows.
func trimRiskFloor(limit int) int {
	return limit - max(pyFloorDiv(limit, 10), 1)
}

func pyFloorDiv(a, b int) int {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func historyTrimRisk(cur *sinceCursor, st tmux.PaneState, limit int) bool {
	if limit <= 0 {
		return true
	}
	floor := trimRiskFloor(limit)
	return cur.HistorySize >= floor || st.HistorySize >= floor
}

// delta captures what was written since cur, falling back to the visible
// screen with missed=true when the reference cannot be trusted.
func (r *paneReader) delta(ctx context.Context, cur *sinceCursor) (paneRead, error) {
	limit, err := r.historyLimit(ctx)
	if err != nil {
		return paneRead{}, err
	}
	for range captureSinceAttempts {
		before, err := r.state(ctx)
		if err != nil {
			return paneRead{}, err
		}
		if err := lifecycleChanged(r.paneID, before, cur.PanePid); err != nil {
			return paneRead{}, err
		}
		if anchorLost(cur, before) {
			return r.missedFallback(ctx, cur)
		}
		risk := historyTrimRisk(cur, before, limit)
		start := cur.AnchorAbs - before.HistorySize
		var rows []string
		switch {
		case risk:
			rows, err = r.capture(ctx, "-")
		case start >= before.PaneHeight:
			rows = []string{}
		default:
			rows, err = r.capture(ctx, strconv.Itoa(start))
		}
		if err != nil {
			return paneRead{}, err
		}
		cursorRows, after, err := r.settle(ctx, before, cur.PanePid)
		if err != nil {
			return paneRead{}, err
		}
		if before != after {
			continue
		}
		if risk {
			i, ok := uniqueFingerprint(rows, cur)
			if !ok {
				return r.missedFallback(ctx, cur)
			}
			rows = rows[i:]
		}
		return paneRead{state: after, cursorRows: cursorRows, lines: dropSeenRows(rows, cur)}, nil
	}
	return r.missedFallback(ctx, cur)
}

func lineHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// uniqueFingerprint finds the one position where the rows repeat the
// cursor's anchor and below-row hashes.
func uniqueFingerprint(rows []string, cur *sinceCursor) (int, bool) {
	if cur.AnchorHash == nil {
		return 0, false
	}
	fp := append([]string{*cur.AnchorHash}, cur.BelowHashes...)
	if len(rows) < len(fp) {
		return 0, false
	}
	hashes := make([]string, len(rows))
	for i, r := range rows {
		hashes[i] = lineHash(r)
	}
	found := -1
	for i := 0; i+len(fp) <= len(rows); i++ {
		same := true
		for j, h := range fp {
			if hashes[i+j] != h {
				same = false
				break
			}
		}
		if !same {
			continue
		}
		if found >= 0 {
			return 0, false
		}
		found = i
	}
	return found, found >= 0
}

// dropSeenRows removes the reference row when unchanged and then the leading
// rows still equal to the cursor's below-row fingerprints.
func dropSeenRows(rows []string, cur *sinceCursor) []string {
	out := []string{}
	if len(rows) == 0 {
		return out
	}
	if cur.AnchorHash == nil || lineHash(rows[0]) != *cur.AnchorHash {
		out = append(out, rows[0])
	}
	tail := rows[1:]
	drop := 0
	for i, h := range cur.BelowHashes {
		if i >= len(tail) || lineHash(tail[i]) != h {
			break
		}
		drop++
	}
	return append(out, tail[drop:]...)
}

// encodeSinceCursor builds the opaque cursor: prefix + unpadded base64url
// of compact, key-sorted, ASCII-only JSON.
func encodeSinceCursor(paneID string, st tmux.PaneState, rows []string) string {
	var b strings.Builder
	anchor := "null"
	below := make([]string, 0, len(rows))
	if len(rows) > 0 {
		anchor = `"` + lineHash(rows[0]) + `"`
		for _, r := range rows[1:] {
			below = append(below, `"`+lineHash(r)+`"`)
		}
	}
	fmt.Fprintf(&b, `{"anchor_abs":%d,"anchor_hash":%s,"below_hashes":[%s],"history_size":%d,"pane_height":%d,"pane_id":%s,"pane_pid":%s,"version":1}`,
		st.AbsCursor(), anchor, strings.Join(below, ","), st.HistorySize, st.PaneHeight, pyfmt.JSONQuote(paneID), pyfmt.JSONQuote(st.PanePid))
	return captureSinceCursorPrefix + base64.RawURLEncoding.EncodeToString([]byte(b.String()))
}

func badCursor(reason string) error {
	return Expectedf("invalid capture_since cursor: %s", reason)
}

// decodeSinceCursor validates a cursor the way the reference does, field by
// field and in the same order.
func decodeSinceCursor(s string) (*sinceCursor, error) {
	if !strings.HasPrefix(s, captureSinceCursorPrefix) {
		return nil, badCursor("unsupported cursor format")
	}
	raw, err := pyURLSafeB64Decode(strings.TrimPrefix(s, captureSinceCursorPrefix))
	if err != nil || !utf8.Valid(raw) {
		return nil, badCursor("could not decode payload")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return nil, badCursor("could not decode payload")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, badCursor("payload is not an object")
	}
	if !pyEqualsOne(m["version"]) {
		return nil, badCursor("unsupported cursor version")
	}
	var anchor *string
	if av, present := m["anchor_hash"]; present && av != nil {
		as, ok := av.(string)
		if !ok {
			return nil, badCursor("missing or invalid anchor_hash")
		}
		anchor = &as
	}
	list, ok := m["below_hashes"].([]any)
	if !ok {
		return nil, badCursor("missing or invalid below_hashes")
	}
	below := make([]string, 0, len(list))
	for _, it := range list {
		s, ok := it.(string)
		if !ok {
			return nil, badCursor("missing or invalid below_hashes")
		}
		below = append(below, s)
	}
	cur := &sinceCursor{AnchorHash: anchor, BelowHashes: below}
	for _, f := range []struct {
		key string
		dst *string
	}{{"pane_id", &cur.PaneID}, {"pane_pid", &cur.PanePid}} {
		s, ok := m[f.key].(string)
		if !ok || s == "" {
			return nil, badCursor("missing or invalid " + f.key)
		}
		*f.dst = s
	}
	for _, f := range []struct {
		key string
		dst *int
	}{{"history_size", &cur.HistorySize}, {"pane_height", &cur.PaneHeight}, {"anchor_abs", &cur.AnchorAbs}} {
		n, ok := m[f.key].(json.Number)
		if !ok || strings.ContainsAny(string(n), ".eE") {
			return nil, badCursor("missing or invalid " + f.key)
		}
		i, err := strconv.Atoi(string(n))
		if err != nil || i < 0 {
			return nil, badCursor("missing or invalid " + f.key)
		}
		*f.dst = i
	}
	return cur, nil
}

// pyEqualsOne is Python's `value == 1` for a decoded JSON value (true
// and 1.0 are equal to 1 there).
func pyEqualsOne(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		return err == nil && f == 1
	}
	return false
}

// pyURLSafeB64Decode decodes like Python's base64.urlsafe_b64decode after
// re-padding: "-" and "_" map to "+" and "/", other characters outside
// the alphabet are discarded.
func pyURLSafeB64Decode(s string) ([]byte, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == '-':
			b.WriteByte('+')
		case ch == '_':
			b.WriteByte('/')
		case ch >= 'A' && ch <= 'Z', ch >= 'a' && ch <= 'z', ch >= '0' && ch <= '9', ch == '+', ch == '/':
			b.WriteByte(ch)
		case ch == '=':
			// Padding ends the data.
			i = len(s)
		}
	}
	return base64.RawStdEncoding.DecodeString(b.String())
}

// tailLimit is the result of limitTail.
type tailLimit struct {
	lines      []string
	truncated  bool
	truncLines int
	truncBytes int
}

// limitTail keeps the newest lines within maxLines and maxBytes (the
// "\n"-joined UTF-8 size); a lone oversized line keeps its last maxBytes
// bytes. No marker is added.
func limitTail(lines []string, maxLines, maxBytes *int) tailLimit {
	kept := append([]string{}, lines...)
	res := tailLimit{}
	if maxLines != nil && len(kept) > *maxLines {
		cut := len(kept) - *maxLines
		res.truncLines += cut
		res.truncBytes += JoinedSize(kept[:cut])
		kept = kept[cut:]
	}
	if maxBytes != nil {
		for len(kept) > 0 && JoinedSize(kept) > *maxBytes {
			if len(kept) == 1 {
				s := kept[0]
				res.truncBytes += max(len(s)-*maxBytes, 0)
				if *maxBytes > 0 && len(s) > *maxBytes {
					s = strings.ToValidUTF8(s[len(s)-*maxBytes:], "")
				} else if *maxBytes <= 0 {
					s = ""
				}
				kept = []string{s}
				break
			}
			res.truncLines++
			res.truncBytes += len(kept[0]) + 1
			kept = kept[1:]
		}
	}
	res.lines = kept
	res.truncated = res.truncLines > 0 || res.truncBytes > 0
	return res
}

func JoinedSize(lines []string) int {
	if len(lines) == 0 {
		return 0
	}
	n := len(lines) - 1
	for _, l := range lines {
		n += len(l)
	}
	return n
}
