package mcp

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/fleetmux/fleetmux/mcp/surface"
	"github.com/fleetmux/fleetmux/mcp/tools"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetmux/fleetmux/mcp/pyfmt"
	"github.com/fleetmux/fleetmux/tmux"
)

// Resources: six URI templates over the local tmux
// server. They bypass the tool pipeline (no tiers, audit, retry or
// limiter). URIs are matched the way the reference's framework does, not by
// the SDK's RFC 6570 matcher: path variables are one segment ([^/]+),
// percent-decoded leniently; query variables follow Python's parse_qs.

// resourceDescriptions are ours; the reference's come from docstrings.
var resourceDescriptions = map[string]string{
	"get_sessions":        "All tmux sessions on the server as a JSON array of session objects. Optional query parameter socket_name (default: LIBTMUX_SOCKET).",
	"get_session":         "One tmux session, looked up by name, as a JSON object with its windows under \"windows\".",
	"get_session_windows": "The windows of one tmux session, looked up by name, as a JSON array.",
	"get_window":          "One window, by session name and window index, as a JSON object with its panes under \"panes\".",
	"get_pane":            "One pane by id as a JSON object. Percent-encode the id: %12 is written %2512.",
	"get_pane_content":    "The visible rows of one pane as plain text (capture-pane -p). Percent-encode the id: %12 is written %2512.",
}

// resourceReadMIME is the MIME type of every resources/read content item;
// the templates advertise their own types.
const resourceReadMIME = "text/plain"

type resourceTemplate struct {
	spec  surface.Resource
	path  *regexp.Regexp
	query []string
	read  func(ctx context.Context, s *Server, p map[string]string) (string, error)
}

// resourceError is a lookup miss reported to the client as
// "Internal error: <msg>".
type resourceError struct{ msg string }

func (e *resourceError) Error() string { return e.msg }

var resourceReaders = map[string]func(ctx context.Context, s *Server, p map[string]string) (string, error){
	"get_sessions":        readSessions,
	"get_session":         readSession,
	"get_session_windows": readSessionWindows,
	"get_window":          readWindow,
	"get_pane":            readPane,
	"get_pane_content":    readPaneContent,
}

var (
	queryVarRE = regexp.MustCompile(`\{\?[^}]+\}`)
	pathVarRE  = regexp.MustCompile(`\{[^}]+\}`)
)

// compileResourceTemplate builds the path matcher of a URI template:
// literals match exactly, {name} matches one path segment.
func compileResourceTemplate(rs surface.Resource) (*resourceTemplate, error) {
	rt := &resourceTemplate{spec: rs}
	if m := queryVarRE.FindString(rs.URITemplate); m != "" {
		for _, q := range strings.Split(m[2:len(m)-1], ",") {
			rt.query = append(rt.query, strings.TrimSpace(q))
		}
	}
	tmpl := queryVarRE.ReplaceAllString(rs.URITemplate, "")
	var sb strings.Builder
	sb.WriteString("^")
	last := 0
	for _, loc := range pathVarRE.FindAllStringIndex(tmpl, -1) {
		sb.WriteString(regexp.QuoteMeta(tmpl[last:loc[0]]))
		name := tmpl[loc[0]+1 : loc[1]-1]
		if strings.HasSuffix(name, "*") {
			fmt.Fprintf(&sb, "(?P<%s>.+)", strings.TrimSuffix(name, "*"))
		} else {
			fmt.Fprintf(&sb, "(?P<%s>[^/]+)", name)
		}
		last = loc[1]
	}
	sb.WriteString(regexp.QuoteMeta(tmpl[last:]))
	// Python's $ also matches before a final newline.
	sb.WriteString(`\n?$`)
	re, err := regexp.Compile(sb.String())
	if err != nil {
		return nil, err
	}
	rt.path = re
	return rt, nil
}

// match returns the template's variables for uri, or nil.
func (rt *resourceTemplate) match(uri string) map[string]string {
	path, query, _ := strings.Cut(uri, "?")
	m := rt.path.FindStringSubmatch(path)
	if m == nil {
		return nil
	}
	params := map[string]string{}
	for i, name := range rt.path.SubexpNames() {
		if name != "" {
			params[name] = pyUnquote(m[i])
		}
	}
	if query != "" {
		qs := parseQueryFirst(query)
		for _, name := range rt.query {
			if v, ok := qs[name]; ok {
				params[name] = v
			}
		}
	}
	return params
}

// resourceTemplates are compiled once from the surface file.
var resourceTemplates = sync.OnceValue(func() []*resourceTemplate {
	var out []*resourceTemplate
	for _, rs := range surface.Spec.Resources {
		rt, err := compileResourceTemplate(rs)
		if err != nil {
			panic(fmt.Sprintf("mcp: resource template %s: %v", rs.URITemplate, err))
		}
		rt.read = resourceReaders[rs.Name]
		if rt.read == nil {
			panic("mcp: no reader for resource " + rs.Name)
		}
		out = append(out, rt)
	}
	return out
})

// addResources registers the six templates (Server.middleware answers
// resources/read with the reference's matching and error codes).
func (s *Server) addResources() {
	for _, rt := range resourceTemplates() {
		rs := rt.spec
		s.sdk.AddResourceTemplate(&sdk.ResourceTemplate{
			Name:        rs.Name,
			Title:       rs.Title,
			URITemplate: rs.URITemplate,
			MIMEType:    rs.MIMEType,
			Description: resourceDescriptions[rs.Name],
			Meta:        sdk.Meta{"fastmcp": map[string]any{"tags": []string{}}},
		}, nil) // resources/read is answered by Server.middleware
	}
}

// templateNames lists the resource templates in registration order.
func templateNames() []string {
	var names []string
	for _, rt := range resourceTemplates() {
		names = append(names, rt.spec.URITemplate)
	}
	return names
}

// readResource finds the first template matching uri and reads it.
func (s *Server) readResource(ctx context.Context, uri string) (*sdk.ReadResourceResult, error) {
	for _, rt := range resourceTemplates() {
		params := rt.match(uri)
		if params == nil {
			continue
		}
		if s.opts.Backend.Fleet() {
			params["host"] = s.resourceHost(uri)
		}
		body, err := rt.read(ctx, s, params)
		if err != nil {
			if re, ok := err.(*resourceError); ok {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Internal error: " + re.msg}
			}
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("Internal error: Error reading resource %s: %v", pyfmt.Repr(uri), err)}
		}
		return &sdk.ReadResourceResult{
			Contents:  []*sdk.ResourceContents{{URI: uri, MIMEType: resourceReadMIME, Text: body}},
			Cacheable: sdk.Cacheable{CacheScope: "public"},
		}, nil
	}
	return nil, &jsonrpc.Error{Code: -32002, Message: "Resource not found: Unknown resource: " + pyfmt.Repr(uri)}
}

// resourceCall is a tool-less Call on the local host, used for its tmux
// and serialisation helpers.
func (s *Server) resourceCall(p map[string]string) *Call {
	args := map[string]any{}
	if v, ok := p["socket_name"]; ok {
		args["socket_name"] = v
	}
	host := LocalHost
	if h := p["host"]; h != "" {
		host = h // fleet mode: the URI's ?host= (resourceHost)
	}
	return s.newCall(nil, args, host, nil, "")
}

// resourceServer is the call and tmux server a resource URI reads from.
func (s *Server) resourceServer(ctx context.Context, p map[string]string) (*Call, *tmux.Server, error) {
	c := s.resourceCall(p)
	srv, err := c.Tmux(ctx)
	return c, srv, err
}

func readSessions(ctx context.Context, s *Server, p map[string]string) (string, error) {
	c, srv, err := s.resourceServer(ctx, p)
	if err != nil {
		return "", err
	}
	rows, err := srv.Sessions(ctx)
	if err != nil {
		return "", err
	}
	out := []any{}
	for _, r := range rows {
		out = append(out, resourceSessionInfo(c, r))
	}
	return pyIndentJSON(out), nil
}

// resourceSession finds a session by exact name.
func resourceSession(ctx context.Context, srv *tmux.Server, name string) (tmux.Attrs, error) {
	rows, err := srv.Sessions(ctx)
	return firstRow(rows, err, "session_name", name, "Session not found: ")
}

// firstRow is the first of rows whose key field is value (resourceError
// notFound+value when none is).
func firstRow(rows []tmux.Attrs, err error, key, value, notFound string) (tmux.Attrs, error) {
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if r[key] == value {
			return r, nil
		}
	}
	return nil, &resourceError{notFound + value}
}

func resourceSessionInfo(c *Call, a tmux.Attrs) any {
	info := c.SessionInfo(a)
	info.Host = nil
	return tools.OrderedJSON(info)
}

func resourceWindowInfo(c *Call, a tmux.Attrs) any {
	info := c.WindowInfo(a)
	info.Host = nil
	return tools.OrderedJSON(info)
}

func resourcePaneInfo(c *Call, a tmux.Attrs, cc *tools.CallerCheck) any {
	info := c.PaneInfo(a, cc)
	info.Host = nil
	return tools.OrderedJSON(info)
}

func resourceWindows(c *Call, ctx context.Context, srv *tmux.Server, sess tmux.Attrs) ([]any, error) {
	rows, err := srv.Windows(ctx, sess["session_id"])
	if err != nil {
		return nil, err
	}
	out := []any{}
	for _, r := range rows {
		out = append(out, resourceWindowInfo(c, r))
	}
	return out, nil
}

// sessionAndWindows reads the session a resource URI names and its
// windows.
func sessionAndWindows(ctx context.Context, s *Server, p map[string]string) (*Call, tmux.Attrs, []any, error) {
	c, srv, err := s.resourceServer(ctx, p)
	if err != nil {
		return nil, nil, nil, err
	}
	sess, err := resourceSession(ctx, srv, p["session_name"])
	if err != nil {
		return nil, nil, nil, err
	}
	wins, err := resourceWindows(c, ctx, srv, sess)
	if err != nil {
		return nil, nil, nil, err
	}
	return c, sess, wins, nil
}

func readSession(ctx context.Context, s *Server, p map[string]string) (string, error) {
	c, sess, wins, err := sessionAndWindows(ctx, s, p)
	if err != nil {
		return "", err
	}
	obj, _ := resourceSessionInfo(c, sess).(*pyfmt.OMap)
	if obj == nil {
		obj = pyfmt.NewOMap()
	}
	obj.Set("windows", wins)
	return pyIndentJSON(obj), nil
}

func readSessionWindows(ctx context.Context, s *Server, p map[string]string) (string, error) {
	_, _, wins, err := sessionAndWindows(ctx, s, p)
	if err != nil {
		return "", err
	}
	return pyIndentJSON(wins), nil
}

func readWindow(ctx context.Context, s *Server, p map[string]string) (string, error) {
	c, srv, err := s.resourceServer(ctx, p)
	if err != nil {
		return "", err
	}
	sess, err := resourceSession(ctx, srv, p["session_name"])
	if err != nil {
		return "", err
	}
	rows, err := srv.Windows(ctx, sess["session_id"])
	if err != nil {
		return "", err
	}
	var win tmux.Attrs
	for _, r := range rows {
		if r["window_index"] == p["window_index"] {
			win = r
			break
		}
	}
	if win == nil {
		return "", &resourceError{"Window not found: index " + p["window_index"]}
	}
	panes, err := srv.Panes(ctx, tmux.PanesWindow, win["window_id"])
	if err != nil {
		return "", err
	}
	cc := c.NewCallerCheck(ctx, srv)
	list := []any{}
	for _, r := range panes {
		list = append(list, resourcePaneInfo(c, r, cc))
	}
	obj, _ := resourceWindowInfo(c, win).(*pyfmt.OMap)
	if obj == nil {
		obj = pyfmt.NewOMap()
	}
	obj.Set("panes", list)
	return pyIndentJSON(obj), nil
}

// resourcePane finds a pane server-wide by exact id.
func resourcePane(ctx context.Context, srv *tmux.Server, id string) (tmux.Attrs, error) {
	rows, err := srv.Panes(ctx, tmux.PanesAll, "")
	return firstRow(rows, err, "pane_id", id, "Pane not found: ")
}

func readPane(ctx context.Context, s *Server, p map[string]string) (string, error) {
	c, srv, err := s.resourceServer(ctx, p)
	if err != nil {
		return "", err
	}
	pane, err := resourcePane(ctx, srv, p["pane_id"])
	if err != nil {
		return "", err
	}
	return pyIndentJSON(resourcePaneInfo(c, pane, c.NewCallerCheck(ctx, srv))), nil
}

func readPaneContent(ctx context.Context, s *Server, p map[string]string) (string, error) {
	_, srv, err := s.resourceServer(ctx, p)
	if err != nil {
		return "", err
	}
	pane, err := resourcePane(ctx, srv, p["pane_id"])
	if err != nil {
		return "", err
	}
	out, err := srv.Exec(ctx, tmux.CapturePane(pane["pane_id"], nil, nil))
	if err != nil {
		return "", err
	}
	return strings.Join(out.Lines(), "\n"), nil
}

// ---- Python compatibility helpers ----

// pyUnquote is urllib.parse.unquote: valid %XX escapes are decoded, the
// rest is kept; decoded bytes that are not UTF-8 become U+FFFD.
func pyUnquote(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHexByte(s[i+1]) && isHexByte(s[i+2]) {
			v, _ := strconv.ParseUint(s[i+1:i+3], 16, 8)
			b = append(b, byte(v))
			i += 2
			continue
		}
		b = append(b, s[i])
	}
	return pyfmt.DecodeReplace(b)
}

func isHexByte(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// parseQueryFirst is Python's parse_qs keeping the first value of each
// name; blank values and pieces without "=" are skipped.
func parseQueryFirst(q string) map[string]string {
	out := map[string]string{}
	for _, piece := range strings.Split(q, "&") {
		k, v, ok := strings.Cut(piece, "=")
		if !ok || v == "" {
			continue
		}
		name := pyUnquote(strings.ReplaceAll(k, "+", " "))
		if _, seen := out[name]; !seen {
			out[name] = pyUnquote(strings.ReplaceAll(v, "+", " "))
		}
	}
	return out
}

// pyIndentJSON renders v like Python's json.dumps(v, indent=2): two-space
// indent, "," between items, ": " after keys, non-ASCII escaped. v is
// built from *pyfmt.OMap, []any, strings, json.Number, bools and nil.
func pyIndentJSON(v any) string {
	var sb strings.Builder
	writePyIndent(&sb, v, 0)
	return sb.String()
}

func writePyIndent(sb *strings.Builder, v any, level int) {
	ind := func(l int) string { return strings.Repeat("  ", l) }
	switch x := v.(type) {
	case *pyfmt.OMap:
		if x == nil {
			sb.WriteString("null")
			return
		}
		if x.Len() == 0 {
			sb.WriteString("{}")
			return
		}
		sb.WriteString("{\n")
		for i, k := range x.Keys() {
			if i > 0 {
				sb.WriteString(",\n")
			}
			sb.WriteString(ind(level + 1))
			sb.WriteString(pyfmt.JSONQuote(k))
			sb.WriteString(": ")
			val, _ := x.Get(k)
			writePyIndent(sb, val, level+1)
		}
		sb.WriteString("\n")
		sb.WriteString(ind(level))
		sb.WriteString("}")
	case []any:
		if len(x) == 0 {
			sb.WriteString("[]")
			return
		}
		sb.WriteString("[\n")
		for i, e := range x {
			if i > 0 {
				sb.WriteString(",\n")
			}
			sb.WriteString(ind(level + 1))
			writePyIndent(sb, e, level+1)
		}
		sb.WriteString("\n")
		sb.WriteString(ind(level))
		sb.WriteString("]")
	case string:
		sb.WriteString(pyfmt.JSONQuote(x))
	case nil:
		sb.WriteString("null")
	case bool:
		if x {
			sb.WriteString("true")
		} else {
			sb.WriteString("false")
		}
	default:
		// json.Number and other scalars: their compact JSON form.
		sb.WriteString(pyfmt.Compact(x))
	}
}
