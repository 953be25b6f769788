package tmux

import (
	"context"
	"errors"
	"fmt"
	"regexp"
)

// SessionRef names a session as the tools do: by id, else by name, else
// the first listed session.
type SessionRef struct{ Name, ID *string }

// plainName is a session name that can travel inside a target and a
// format unchanged: no target separators (: .), no format or parser
// syntax, no leading sigil.
var plainName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_-]*$`)

// TakenName reports whether err is new-session's refusal of name because
// a session of exactly that name exists: tmux stores a plain name
// unchanged, so its "duplicate session" names the session found.
func TakenName(err error, name string) bool {
	var ce *CommandError
	return plainName.MatchString(name) && errors.As(err, &ce) &&
		len(ce.Stderr) == 1 && ce.Stderr[0] == "duplicate session: "+name
}

// PlainName reports whether tmux stores and targets name unchanged (see
// plainName).
func PlainName(name string) bool { return plainName.MatchString(name) }

// sessionPlan is how a request names the session a SessionRef names:
// its target and the commands that go before the action (the session
// listing and, for a name, a check). A plain id ("$3") is targeted as
// is, a plain name as "=name" with a check that stops the request unless
// the session found has that name (tmux would also take a client's
// name); any other ref is looked up first (one more request) and
// targeted by id.
type sessionPlan struct {
	ref    SessionRef
	target string
	pre    []Cmd
	looked Attrs // the session, when it was looked up first
}

func planSession(ctx context.Context, s *Server, ref SessionRef) (sessionPlan, error) {
	p := sessionPlan{ref: ref}
	sessions := cmd("list-sessions", "-F", Format(SessionFields))
	switch {
	case ref.ID != nil && isID(*ref.ID, '$'):
		p.target, p.pre = *ref.ID, []Cmd{sessions}
	case ref.ID == nil && ref.Name != nil && plainName.MatchString(*ref.Name):
		p.target = "=" + *ref.Name
		p.pre = []Cmd{sessions, guard(p.target+":", "#{==:#{session_name},"+*ref.Name+"}")}
	default:
		sess, err := ResolveSession(ctx, s, ref.Name, ref.ID)
		if err != nil {
			return p, err
		}
		p.target, p.looked = sess["session_id"], sess
	}
	return p, nil
}

// judge reads the replies of p.pre (the front of replies): the session,
// or the lookup's error; retry is true when the listing has the session
// but the check failed (ask again by id).
func (p sessionPlan) judge(s *Server, replies []Reply) (sess Attrs, retry bool, err error) {
	if p.looked != nil {
		return p.looked, false, nil
	}
	rows, err := rowsOf(s, p.pre[0], replies[0], SessionFields)
	if err != nil {
		return nil, false, err
	}
	if sess, err = pickSession(rows, p.ref.Name, p.ref.ID); err != nil {
		return nil, false, err
	}
	return sess, len(p.pre) > 1 && replies[1].Err != nil, nil
}

// NewWindowIn creates a window in the session ref names and returns the
// session and the new window's row as RefreshWindow reads it, in one
// request when tmux can name the session exactly (sessionPlan): the
// listing decides a lookup error, so a missing session is reported the
// same way whichever path ran.
func NewWindowIn(ctx context.Context, s *Server, ref SessionRef, nw NewWindow) (Attrs, Attrs, error) {
	sess, replies, err := SessionAct(ctx, s, ref, func(target string) []Cmd {
		nw.Session = target
		return []Cmd{nw.Cmd(), windowListing}
	})
	if err != nil {
		return nil, nil, err
	}
	w, err := createdWindow(ctx, s, replies)
	return sess, w, err
}

var windowListing = cmd("list-windows", "-a", "-F", Format(WindowFields))

// createdWindow reads new-window's reply and the listing after it as
// Created and RefreshWindow would: the window's row in its session. A
// window listed in several sessions (a session group) is read again with
// RefreshWindow, which lets tmux pick the session.
func createdWindow(ctx context.Context, s *Server, replies []Reply) (Attrs, error) {
	created, listing := replies[0], replies[1]
	if created.Err != nil {
		return nil, created.Err
	}
	rows, err := ParseRows(created.Lines, WindowFields)
	switch {
	case err != nil:
		return nil, &ReplyError{err}
	case len(rows) == 0:
		return nil, &ReplyError{fmt.Errorf("new-window printed no window")}
	}
	id := rows[0]["window_id"]
	all, err := rowsOf(s, windowListing, listing, WindowFields)
	if err != nil {
		return nil, err
	}
	var match []Attrs
	for _, r := range all {
		if r["window_id"] == id {
			if len(match) > 0 && match[0]["session_id"] != r["session_id"] {
				return RefreshWindow(ctx, s, id)
			}
			match = append(match, r)
		}
	}
	if len(match) == 0 {
		return RefreshWindow(ctx, s, id)
	}
	return pickWindowRow(match), nil
}

// SessionAct runs act's commands on the session ref names, in the
// request that looks it up when tmux can name it exactly (sessionPlan),
// and returns the session's row as listed before them and the replies
// of act's commands. A check that fails while the listing has the
// session costs one more request, by id.
func SessionAct(ctx context.Context, s *Server, ref SessionRef, act func(target string) []Cmd) (Attrs, []Reply, error) {
	plan, err := planSession(ctx, s, ref)
	if err != nil {
		return nil, nil, err
	}
	replies, err := s.Batch(ctx, append(plan.pre, act(plan.target)...)...)
	if err != nil {
		return nil, nil, err
	}
	sess, retry, err := plan.judge(s, replies)
	if err != nil {
		return nil, nil, err
	}
	if retry {
		id := sess["session_id"]
		return SessionAct(ctx, s, SessionRef{ID: &id}, act)
	}
	return sess, replies[len(plan.pre):], nil
}

// SessionChange is SessionAct followed, in the same request, by the
// session re-read as SessionByID reads it; act's commands are judged as
// Do judges them.
func SessionChange(ctx context.Context, s *Server, ref SessionRef, act func(target string) []Cmd) (Attrs, error) {
	var cmds []Cmd
	listing := cmd("list-sessions", "-F", Format(SessionFields))
	sess, replies, err := SessionAct(ctx, s, ref, func(target string) []Cmd {
		cmds = act(target)
		return append(cmds, listing)
	})
	if err != nil {
		return nil, err
	}
	if err := s.Judge(cmds, replies); err != nil {
		return nil, err
	}
	id := sess["session_id"]
	rows, err := rowsOf(s, listing, replies[len(replies)-1], SessionFields)
	return byID(rows, err, "session_id", id, &NotFoundError{Key: "session_id", ID: id, ListCmd: "list-sessions"})
}
