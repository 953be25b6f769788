package doctor

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/fleetmux/fleetmux/mcp"
)

// doctorProbeTimeout bounds the MCP initialize doctor sends to an HTTP
// entry's URL.
const doctorProbeTimeout = 5 * time.Second

// doctorProbeMax bounds the answer doctor reads.
const doctorProbeMax = 64 << 10

// httpProbe is what an MCP server at a URL answered doctor's initialize.
type httpProbe struct {
	// Status is the HTTP status (0: no answer, see Err).
	Status int
	// Fleetmux reports that fleetmux answered: its serverInfo title, or
	// its 401 (WWW-Authenticate realm "fleetmux").
	Fleetmux bool
	// Title is the serverInfo title (or name) of a successful initialize.
	Title string
	Err   error
}

// probeMCP sends an MCP initialize to rawURL with the entry's headers, as
// the client would, and reads who answers. A session it opens is closed
// again (DELETE).
func probeMCP(ctx context.Context, rawURL string, headers map[string]string, version string) httpProbe {
	ctx, cancel := context.WithTimeout(ctx, doctorProbeTimeout)
	defer cancel()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fleetmux-doctor","version":%q}}}`, version)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, strings.NewReader(body))
	if err != nil {
		return httpProbe{Err: fmt.Errorf("doctor probe: %w", err)}
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return httpProbe{Err: fmt.Errorf("doctor probe: %w", err)}
	}
	defer resp.Body.Close()
	p := httpProbe{Status: resp.StatusCode}
	if resp.StatusCode == http.StatusUnauthorized {
		p.Fleetmux = strings.Contains(resp.Header.Get("WWW-Authenticate"), `realm="fleetmux"`)
		return p
	}
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		defer closeProbeSession(rawURL, headers, id)
	}
	if resp.StatusCode != http.StatusOK {
		return p
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, doctorProbeMax))
	var msg struct {
		Result struct {
			ServerInfo struct {
				Name  string `json:"name"`
				Title string `json:"title"`
			} `json:"serverInfo"`
		} `json:"result"`
	}
	for _, doc := range jsonDocuments(data, resp.Header.Get("Content-Type")) {
		if json.Unmarshal(doc, &msg) == nil && msg.Result.ServerInfo.Name != "" {
			p.Title = orText(msg.Result.ServerInfo.Title, msg.Result.ServerInfo.Name)
			t := msg.Result.ServerInfo.Title
			p.Fleetmux = t == mcp.ProductName || strings.HasPrefix(t, mcp.ProductName+" ")
			break
		}
	}
	return p
}

// jsonDocuments returns the JSON messages of an answer: the body itself,
// or the data of each server-sent event.
func jsonDocuments(data []byte, contentType string) [][]byte {
	if !strings.HasPrefix(contentType, "text/event-stream") {
		return [][]byte{data}
	}
	var out [][]byte
	var cur []byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), doctorProbeMax)
	for sc.Scan() {
		line := sc.Text()
		if d, ok := strings.CutPrefix(line, "data:"); ok {
			cur = append(cur, strings.TrimPrefix(d, " ")...)
			continue
		}
		if line == "" && len(cur) > 0 {
			out = append(out, cur)
			cur = nil
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// closeProbeSession ends the MCP session the probe opened.
func closeProbeSession(rawURL string, headers map[string]string, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), doctorProbeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, rawURL, nil)
	if err != nil {
		return
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Mcp-Session-Id", id)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, doctorProbeMax))
		resp.Body.Close()
	}
}

// loopbackURL reports whether u names this machine: doctor only sends an
// entry's headers to a server elsewhere when the entry names fleetmux.
func loopbackURL(u string) bool {
	p, err := url.Parse(u)
	return err == nil && (p.Scheme == "http" || p.Scheme == "https") && mcp.IsLoopbackHost(p.Hostname())
}

// refused reports a connection refused: nothing listens at the URL.
func refused(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
