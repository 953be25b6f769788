// Package audit is `fleetmux audit`: it reads the audit log of the state
// file (store.Query, read-only unless it must migrate or --compact) and
// prints it as a table that stored text cannot use to drive the terminal,
// or as JSON lines; --follow polls for new records.
package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/fleetmux/fleetmux/mcp/age"
	"github.com/fleetmux/fleetmux/store"
)

const auditUsage = `Usage: fleetmux audit [flags]

Shows the audit log: one record per tool call that any fleetmux process made
(including refused and failed calls, and each call inside a batch), with its
host, tool, outcome, duration, error and arguments. Sensitive arguments (keys,
text, command, value, content, shell, environment) were reduced to their
length and a SHA-256 prefix before they were stored; the raw values are not
in the file. The state file is only read (shared lock), never created or
changed, except by --compact and to migrate a file of an older fleetmux.

Flags:
  --state FILE    state file to read. Default: $FLEETMUX_STATE, else
                  $XDG_STATE_HOME/fleetmux/state.db, else
                  ~/.local/state/fleetmux/state.db.
  --json          print one JSON object per line (times in UTC) instead of a table
  --host H        only calls on host H ("local" is this machine)
  --tool T        only calls of tool T
  --outcome O     only calls with outcome O: ok, error or refused
  --session ID    only calls of one session: an MCP session id of an HTTP
                  client of "fleetmux serve --http" (mcp_session_id), or the
                  id of one fleetmux process (session_id); both are in --json
  --job ID        only the records of job ID: the run_command call that
                  started it and the job_end record of its end (written when
                  a fleetmux process first saw the end)
  --since WHEN    only calls at or after WHEN
  --until WHEN    only calls before WHEN
                  WHEN is a time ago (1h, 90m, 7d, 1d12h) or a time
                  (2026-03-01T12:00:00Z, 2026-03-01T12:00:00 or 2026-03-01 in
                  local time).
  --limit N       show the newest N matching calls, oldest first (default 100;
                  0 shows all)
  --follow        after the matching calls, keep printing new ones as they are
                  recorded until interrupted (Ctrl-C)
  --compact       rewrite the state file to give back the space that retention
                  freed, print the sizes and exit

Exit status: 0 on success (also when there are no records yet), 1 on an error,
2 on bad usage.
`

// auditFollowWindow is how far back (before now) each --follow poll looks for
// records committed late by other processes.
const auditFollowWindow = 10 * time.Minute

// auditOptions are the parsed flags of `fleetmux audit`.
type auditOptions struct {
	state   string
	json    bool
	follow  bool
	compact bool
	query   store.Query
}

// auditEnv is what auditMain takes from the process; tests replace it.
type auditEnv struct {
	getenv func(string) string
	now    func() time.Time
	loc    *time.Location
	poll   time.Duration // --follow polling interval
	// lockTimeout bounds each wait for the state file's lock (0: the
	// store's default).
	lockTimeout time.Duration
}

// Run is `fleetmux audit` with the process's environment, clock and
// signals.
func Run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env := auditEnv{getenv: os.Getenv, now: time.Now, loc: time.Local, poll: 500 * time.Millisecond}
	return auditMain(ctx, args, env, stdout, stderr)
}

func auditMain(ctx context.Context, args []string, env auditEnv, stdout, stderr io.Writer) int {
	opts, err := parseAuditArgs(args, env.now(), stderr)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, auditUsage)
		return 0
	}
	if err != nil {
		return 2
	}
	path := opts.state
	if path == "" {
		path = env.getenv("FLEETMUX_STATE")
	}
	if path == "" {
		if path, err = store.DefaultPath(); err != nil {
			fmt.Fprintf(stderr, "fleetmux audit: %v (use --state)\n", err)
			return 1
		}
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(stderr, "no audit records yet (state file %s does not exist)\n", path)
		if !opts.follow {
			return 0
		}
		if !waitForFile(ctx, path, env.poll) {
			return 0
		}
	} else if err != nil {
		fmt.Fprintf(stderr, "fleetmux audit: %v\n", err)
		return 1
	}
	s, err := openForAudit(ctx, path, opts.compact, env.lockTimeout)
	if err != nil {
		fmt.Fprintf(stderr, "fleetmux audit: %v%s\n", err, auditErrorHint(err))
		return 1
	}
	if opts.compact {
		return auditCompact(ctx, s, opts.json, stdout, stderr)
	}

	var baseline uint64
	if opts.follow {
		if baseline, err = s.LastSeq(ctx); err != nil {
			fmt.Fprintf(stderr, "fleetmux audit: %v\n", err)
			return 1
		}
	}
	recs, err := s.Query(ctx, opts.query)
	if err != nil {
		fmt.Fprintf(stderr, "fleetmux audit: %v\n", err)
		return 1
	}
	if opts.follow {
		// Records committed after the baseline are printed by the loop,
		// and so are those still in a writer's journal (no sequence number
		// yet), once they are folded in.
		recs = slices.DeleteFunc(recs, func(r store.Record) bool { return r.Seq > baseline || r.Seq == 0 })
	}
	p := &auditPrinter{w: stdout, json: opts.json, loc: env.loc}
	if err := p.print(recs); err != nil {
		fmt.Fprintf(stderr, "fleetmux audit: %v\n", err)
		return 1
	}
	if !opts.follow {
		if len(recs) == 0 && !opts.json {
			fmt.Fprintln(stderr, "no matching audit records")
		}
		return 0
	}
	return auditFollow(ctx, s, opts.query, baseline, p, env, stderr)
}

// openForAudit opens the state file for `fleetmux audit`: read-only, so a
// reader never creates, migrates or re-modes the file and takes only shared
// locks, unless it must write (--compact, or a file of an older schema that
// has to be migrated before it can be read).
func openForAudit(ctx context.Context, path string, write bool, lockTimeout time.Duration) (*store.Store, error) {
	if !write {
		s, err := store.OpenContext(ctx, path, store.Options{ReadOnly: true, LockTimeout: lockTimeout})
		if !errors.Is(err, store.ErrOldSchema) {
			return s, err
		}
	}
	return store.OpenContext(ctx, path, store.Options{LockTimeout: lockTimeout})
}

// auditErrorHint says what to do about a state file that cannot be read.
func auditErrorHint(err error) string {
	switch {
	case errors.Is(err, store.ErrCorrupt), errors.Is(err, store.ErrForeign):
		return "; move it aside (fleetmux then starts a new one) or pass --state"
	case errors.Is(err, store.ErrLocked):
		return "; try again"
	}
	return ""
}

// auditFollow polls for records committed after lastSeq until ctx is done.
func auditFollow(ctx context.Context, s *store.Store, q store.Query, lastSeq uint64, p *auditPrinter, env auditEnv, stderr io.Writer) int {
	ticker := time.NewTicker(env.poll)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return 0
		case <-ticker.C:
		}
		fq := q
		fq.Limit = 0
		fq.AfterSeq = lastSeq
		if since := env.now().Add(-auditFollowWindow); fq.Since.Before(since) {
			fq.Since = since
		}
		recs, err := s.Query(ctx, fq)
		switch {
		case ctx.Err() != nil:
			return 0
		case errors.Is(err, store.ErrLocked):
			fmt.Fprintf(stderr, "fleetmux audit: %v; retrying\n", err)
			continue
		case err != nil:
			fmt.Fprintf(stderr, "fleetmux audit: %v\n", err)
			return 1
		}
		if err := p.print(recs); err != nil {
			fmt.Fprintf(stderr, "fleetmux audit: %v\n", err)
			return 1
		}
		for _, r := range recs {
			lastSeq = max(lastSeq, r.Seq)
		}
	}
}

// waitForFile polls until path exists; false when ctx ends first.
func waitForFile(ctx context.Context, path string, poll time.Duration) bool {
	ticker := time.NewTicker(poll)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-ticker.C:
			if _, err := os.Stat(path); err == nil {
				return true
			}
		}
	}
}

func auditCompact(ctx context.Context, s *store.Store, asJSON bool, stdout, stderr io.Writer) int {
	size := func() int64 {
		fi, err := os.Stat(s.Path())
		if err != nil {
			return -1
		}
		return fi.Size()
	}
	before := size()
	if err := s.Compact(ctx); err != nil {
		fmt.Fprintf(stderr, "fleetmux audit: %v\n", err)
		return 1
	}
	after := size()
	if asJSON {
		_ = json.NewEncoder(stdout).Encode(map[string]any{"path": s.Path(), "before_bytes": before, "after_bytes": after})
		return 0
	}
	fmt.Fprintf(stdout, "compacted %s: %s -> %s\n", s.Path(), humanBytes(before), humanBytes(after))
	return 0
}

// parseAuditArgs parses the flags of `fleetmux audit`; relative --since and
// --until are taken back from now. Usage errors are reported on stderr.
func parseAuditArgs(args []string, now time.Time, stderr io.Writer) (*auditOptions, error) {
	fs := flag.NewFlagSet("fleetmux audit", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are printed below, usage by the caller
	var o auditOptions
	var since, until string
	fs.StringVar(&o.state, "state", "", "state file")
	fs.BoolVar(&o.json, "json", false, "JSON lines")
	fs.StringVar(&o.query.Host, "host", "", "host")
	fs.StringVar(&o.query.Tool, "tool", "", "tool")
	fs.StringVar(&o.query.Outcome, "outcome", "", "outcome")
	fs.StringVar(&o.query.Session, "session", "", "session")
	fs.StringVar(&o.query.Job, "job", "", "job")
	fs.StringVar(&since, "since", "", "since")
	fs.StringVar(&until, "until", "", "until")
	fs.IntVar(&o.query.Limit, "limit", 100, "limit")
	fs.BoolVar(&o.follow, "follow", false, "follow")
	fs.BoolVar(&o.compact, "compact", false, "compact")
	usageErr := func(format string, a ...any) (*auditOptions, error) {
		err := fmt.Errorf(format, a...)
		fmt.Fprintf(stderr, "fleetmux audit: %v (see fleetmux audit --help)\n", err)
		return nil, err
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return usageErr("%v", err)
	}
	if fs.NArg() > 0 {
		return usageErr("unexpected argument %q", fs.Arg(0))
	}
	switch o.query.Outcome {
	case "", store.OutcomeOK, store.OutcomeError, store.OutcomeRefused:
	default:
		return usageErr("--outcome must be ok, error or refused, not %q", o.query.Outcome)
	}
	if o.query.Limit < 0 {
		return usageErr("--limit must be 0 (all) or more, not %d", o.query.Limit)
	}
	var err error
	if since != "" {
		if o.query.Since, err = parseWhen(since, now); err != nil {
			return usageErr("--since: %v", err)
		}
	}
	if until != "" {
		if o.query.Until, err = parseWhen(until, now); err != nil {
			return usageErr("--until: %v", err)
		}
	}
	if !o.query.Since.IsZero() && !o.query.Until.IsZero() && !o.query.Since.Before(o.query.Until) {
		return usageErr("--since must be before --until")
	}
	if o.compact && o.follow {
		return usageErr("--compact and --follow cannot be combined")
	}
	return &o, nil
}

// parseWhen reads a time ago ("90m", "7d", "1d12h") or a point in time.
func parseWhen(s string, now time.Time) (time.Time, error) {
	if d, ok, err := age.Parse(s); ok {
		if err != nil {
			return time.Time{}, err
		}
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is neither a time ago (1h, 90m, 7d) nor a time (2026-03-01T12:00:00Z)", s)
}

// auditPrinter writes records as an aligned table or as JSON lines. Column
// widths only grow, so --follow output stays aligned as far as it can.
type auditPrinter struct {
	w      io.Writer
	json   bool
	loc    *time.Location
	widths [5]int // host, tool, outcome, duration, error
	header bool
}

const (
	auditTimeLayout   = "2006-01-02T15:04:05.000Z07:00"
	auditMaxErrorCell = 60
	auditMaxArgsCell  = 100
)

func (p *auditPrinter) print(recs []store.Record) error {
	if p.json {
		enc := json.NewEncoder(p.w)
		enc.SetEscapeHTML(false)
		for _, r := range recs {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	if len(recs) == 0 {
		return nil
	}
	rows := make([][7]string, len(recs))
	for i, r := range recs {
		rows[i] = p.row(r)
	}
	if !p.header {
		p.widths = [5]int{4, 4, 7, 8, 5} // the header labels
	}
	for _, row := range rows {
		for c := range p.widths {
			p.widths[c] = max(p.widths[c], utf8.RuneCountInString(row[c+1]))
		}
	}
	var b strings.Builder
	if !p.header {
		p.header = true
		p.line(&b, [7]string{"TIME", "HOST", "TOOL", "OUTCOME", "DURATION", "ERROR", "ARGS"})
	}
	for _, row := range rows {
		p.line(&b, row)
	}
	_, err := io.WriteString(p.w, b.String())
	return err
}

func (p *auditPrinter) line(b *strings.Builder, row [7]string) {
	var l strings.Builder
	l.WriteString(padRight(row[0], len(auditTimeLayout)))
	for c, w := range p.widths {
		l.WriteString("  ")
		if c == 3 { // duration: right-aligned
			l.WriteString(strings.Repeat(" ", max(0, w-utf8.RuneCountInString(row[c+1]))))
			l.WriteString(row[c+1])
		} else {
			l.WriteString(padRight(row[c+1], w))
		}
	}
	l.WriteString("  ")
	l.WriteString(row[6])
	b.WriteString(strings.TrimRight(l.String(), " "))
	b.WriteByte('\n')
}

func (p *auditPrinter) row(r store.Record) [7]string {
	tool := r.Tool
	if r.Parent != "" {
		tool = r.Parent + "/" + r.Tool
	}
	if r.Job != "" {
		tool += " job=" + r.Job
	}
	errText, _, _ := strings.Cut(r.Error, "\n")
	args := string(r.Args)
	var compact bytes.Buffer
	if len(r.Args) > 0 && json.Compact(&compact, r.Args) == nil {
		args = compact.String()
	}
	return [7]string{
		r.Time.In(p.loc).Format(auditTimeLayout),
		cleanCell(r.Host),
		cleanCell(tool),
		cleanCell(r.Outcome),
		formatCallDuration(r.Duration),
		truncateCell(cleanCell(errText), auditMaxErrorCell),
		truncateCell(cleanCell(args), auditMaxArgsCell),
	}
}

func formatCallDuration(d time.Duration) string {
	if d < time.Second {
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 2, 64) + "ms"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) + "s"
}

// cleanCell escapes characters that would let stored text drive the
// terminal: control characters, line and paragraph separators and bidi
// overrides.
func cleanCell(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			fmt.Fprintf(&b, `\x%02x`, r)
		case r == 0x2028 || r == 0x2029 || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func truncateCell(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for pos := range s {
		if i == n-1 {
			return s[:pos] + "…"
		}
		i++
	}
	return s
}

func padRight(s string, w int) string {
	if n := utf8.RuneCountInString(s); n < w {
		return s + strings.Repeat(" ", w-n)
	}
	return s
}

func humanBytes(n int64) string {
	if n < 0 {
		return "?"
	}
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
