// Package stdio frames MCP over stdin and stdout: one JSON-RPC message per line,
// with parse errors, over-long lines and batches answered the reference's way.
package stdio

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Stdio framing limits.
const (
	// MaxLineLength bounds one inbound JSON-RPC line (the SDK's default).
	MaxLineLength = 16 << 20
	// drainTimeout bounds how long, after stdin closes, fleetmux keeps
	// running to answer the requests it already received.
	drainTimeout = 30 * time.Second
)

// parseErrorLine is the JSON-RPC answer to a line that is not JSON.
var parseErrorLine = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}` + "\n")

// tooLongLine answers a line longer than MaxLineLength.
var tooLongLine = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: line exceeds the maximum length"}}` + "\n")

// NewTransport returns the stdio transport fleetmux serves on: the
// SDK's newline-delimited JSON-RPC over in and out, with a line filter in
// front that makes it robust to what real clients and shell pipes send:
//
//   - a line that is not JSON is answered with a -32700 Parse error (id
//     null) and skipped, instead of ending the session;
//   - JSON that is not a JSON-RPC 2.0 message ([], 1, "x", null, {},
//     {"jsonrpc":"1.0",...}, a wrong-typed id or method) is answered with
//     -32600 Invalid Request (with its id when it has a usable one) and
//     skipped; batches are handled as the SDK allows them (see
//     forwardBatch);
//   - a line over MaxLineLength is answered with -32600 and skipped,
//     without buffering it;
//   - after an "initialize" request, nothing more is read until it is
//     answered, so a client that pipelines "notifications/initialized"
//     right behind it is served in order;
//   - when in ends, the requests already received are answered before
//     the session ends (bounded by drainTimeout), so
//     `printf '...' | fleetmux` gets every answer.
func NewTransport(in io.Reader, out io.Writer, log *slog.Logger) sdk.Transport {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f := &stdioFilter{in: bufio.NewReaderSize(in, 64<<10), out: out, log: log, pending: map[string]int{}, changed: make(chan struct{})}
	pr, pw := io.Pipe()
	f.pw = pw
	go f.pump()
	return &sdk.IOTransport{Reader: pr, Writer: &filterWriter{f}, MaxLineLength: MaxLineLength}
}

type stdioFilter struct {
	in  *bufio.Reader
	out io.Writer
	log *slog.Logger
	pw  *io.PipeWriter

	wmu sync.Mutex // serialises writes to out

	mu       sync.Mutex
	pending  map[string]int // request ids read but not yet answered
	gate     string         // id key of an unanswered initialize request
	protocol string         // the MCP revision initialize agreed on
	changed  chan struct{}  // closed and replaced whenever pending or gate changes
	stopping bool
}

// rpcHead is what the filter looks at in a message.
type rpcHead struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

func (f *stdioFilter) write(p []byte) error {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	_, err := f.out.Write(p)
	return err
}

func (f *stdioFilter) broadcastLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// pump copies valid lines from in to the SDK's reader.
func (f *stdioFilter) pump() {
	for {
		line, tooLong, err := f.readLine()
		if tooLong {
			f.log.Warn("stdio: line longer than the maximum; answered with an error and skipped", "max_bytes", MaxLineLength)
			_ = f.write(tooLongLine)
		} else if len(bytes.TrimSpace(line)) > 0 {
			f.forward(line)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				f.log.Debug("stdio: read failed", "error", err)
			}
			f.drain()
			_ = f.pw.Close()
			return
		}
	}
}

// readLine returns the next line without its newline; tooLong reports a
// line over MaxLineLength, whose bytes are discarded.
func (f *stdioFilter) readLine() (line []byte, tooLong bool, err error) {
	var buf []byte
	for {
		chunk, err := f.in.ReadSlice('\n')
		if len(buf)+len(chunk) > MaxLineLength {
			tooLong = true
			buf = nil
		} else if !tooLong {
			buf = append(buf, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimRight(buf, "\r\n"), tooLong, err
	}
}

// forward hands one line to the SDK, or answers it with a JSON-RPC error
// when the SDK's reader would fail on it (which ends the session): a
// parse error (-32700) for a line that is not JSON, Invalid Request
// (-32600) for JSON that is not a message, and for a batch where the
// SDK would refuse it.
func (f *stdioFilter) forward(line []byte) {
	trimmed := bytes.TrimSpace(line)
	if !json.Valid(trimmed) {
		f.log.Warn("stdio: line is not JSON; answered with a parse error", "bytes", len(trimmed))
		_ = f.write(parseErrorLine)
		return
	}
	if trimmed[0] == '[' {
		f.forwardBatch(trimmed)
		return
	}
	msg, id, reason := f.check(trimmed, nil)
	if reason != "" {
		f.log.Warn("stdio: line is not a JSON-RPC message; answered with Invalid Request", "reason", reason)
		_ = f.write(append(invalidRequest(id, reason), '\n'))
		return
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.ID.IsValid() {
		f.mu.Lock()
		f.pending[idKey(req.ID)]++
		if req.Method == "initialize" {
			f.gate = idKey(req.ID)
		}
		f.mu.Unlock()
	}
	if _, err := f.pw.Write(append(trimmed, '\n')); err != nil {
		return // the SDK side is gone
	}
	// Hold further input until initialize is answered.
	for {
		f.mu.Lock()
		gate, wake, stop := f.gate, f.changed, f.stopping
		f.mu.Unlock()
		if gate == "" || stop {
			return
		}
		<-wake
	}
}

// maxStdioBatch bounds the messages of one JSON-RPC batch line.
const maxStdioBatch = 64

// forwardBatch handles a JSON-RPC batch (an array). The SDK reads batches
// only for protocol revisions before 2025-06-18 (later ones dropped
// batching) and ends the session on any bad element or on a request id
// still in use; so here a batch is answered with one Invalid Request when
// the session speaks 2025-06-18 or later, is empty or too long, and
// otherwise its bad elements are answered (as an array, as JSON-RPC
// answers a batch) and the valid ones forwarded as a batch.
func (f *stdioFilter) forwardBatch(line []byte) {
	var elems []json.RawMessage
	if err := json.Unmarshal(line, &elems); err != nil {
		_ = f.write(parseErrorLine)
		return
	}
	f.mu.Lock()
	version := f.protocol
	f.mu.Unlock()
	refuse := ""
	switch {
	case len(elems) == 0:
		refuse = "empty batch"
	case version >= batchlessProtocol:
		refuse = "JSON-RPC batching is not supported in protocol " + batchlessProtocol + " and later (this session: " + version + ")"
	case len(elems) > maxStdioBatch:
		refuse = "batch of " + strconv.Itoa(len(elems)) + " messages exceeds the maximum of " + strconv.Itoa(maxStdioBatch)
	}
	if refuse != "" {
		f.log.Warn("stdio: batch refused with Invalid Request", "reason", refuse)
		_ = f.write(append(invalidRequest(nil, refuse), '\n'))
		return
	}
	var errs []json.RawMessage
	var valid []json.RawMessage
	seen := map[string]bool{}
	var ids []string
	for _, e := range elems {
		e = bytes.TrimSpace(e)
		msg, id, reason := f.check(e, seen)
		if reason != "" {
			errs = append(errs, invalidRequest(id, reason))
			continue
		}
		if req, ok := msg.(*jsonrpc.Request); ok && req.ID.IsValid() {
			seen[idKey(req.ID)] = true
			ids = append(ids, idKey(req.ID))
		}
		valid = append(valid, e)
	}
	if len(errs) > 0 {
		f.log.Warn("stdio: batch elements that are not JSON-RPC messages answered with Invalid Request", "count", len(errs))
		b, _ := json.Marshal(errs)
		_ = f.write(append(b, '\n'))
	}
	if len(valid) == 0 {
		return
	}
	f.mu.Lock()
	for _, id := range ids {
		f.pending[id]++
	}
	f.mu.Unlock()
	b, _ := json.Marshal(valid)
	_, _ = f.pw.Write(append(b, '\n'))
}

// check decodes one message as the SDK's reader will. It returns the
// message, or the id to answer with (nil: null) and why it is refused: not
// a JSON-RPC 2.0 message, or a request whose id is already in use (in
// batch, or unanswered: the SDK would end the session on it in a batch and
// misattribute the answer otherwise).
func (f *stdioFilter) check(raw []byte, batch map[string]bool) (msg jsonrpc.Message, id json.RawMessage, reason string) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, nil, "not a JSON-RPC message object"
	}
	var head struct {
		Version json.RawMessage `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  json.RawMessage `json:"method"`
	}
	_ = json.Unmarshal(raw, &head)
	if v := bytes.TrimSpace(head.ID); len(v) > 0 && (v[0] == '"' || v[0] == '-' || (v[0] >= '0' && v[0] <= '9')) {
		id = v
	}
	if string(bytes.TrimSpace(head.Version)) != `"2.0"` {
		return nil, id, `"jsonrpc" must be "2.0"`
	}
	if m := bytes.TrimSpace(head.Method); len(m) > 0 && m[0] != '"' {
		return nil, id, `"method" must be a string`
	}
	msg, err := jsonrpc.DecodeMessage(raw)
	if err != nil {
		return nil, id, "not a JSON-RPC request, notification or response"
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.ID.IsValid() {
		k := idKey(req.ID)
		f.mu.Lock()
		inUse := f.pending[k] > 0
		f.mu.Unlock()
		if inUse || batch[k] {
			return nil, nil, "request id " + string(id) + " is already in use"
		}
	}
	return msg, nil, ""
}

// batchlessProtocol is the first MCP revision without JSON-RPC batching.
const batchlessProtocol = "2025-06-18"

// invalidRequest is a -32600 answer with id (nil: null).
func invalidRequest(id json.RawMessage, reason string) json.RawMessage {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      id,
		"error":   map[string]any{"code": -32600, "message": "Invalid Request: " + reason},
	})
	return b
}

// idKey is the key of a request id as the SDK reads it (1 and 1.0 are
// the same id).
func idKey(id jsonrpc.ID) string {
	switch v := id.Raw().(type) {
	case string:
		return "s:" + v
	case int64:
		return "n:" + strconv.FormatInt(v, 10)
	}
	return ""
}

// rawIDKey is idKey for an id as written in a message.
func rawIDKey(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	id, err := jsonrpc.MakeID(v)
	if err != nil || !id.IsValid() {
		return ""
	}
	return idKey(id)
}

// drain waits, after stdin ended, until every request read so far has
// been answered (or drainTimeout passes).
func (f *stdioFilter) drain() {
	deadline := time.NewTimer(drainTimeout)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		n := 0
		for _, c := range f.pending {
			n += c
		}
		wake := f.changed
		f.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-wake:
		case <-deadline.C:
			f.log.Warn("stdio: input closed; gave up waiting for unanswered requests", "pending", n, "after", drainTimeout)
			return
		}
	}
}

// answered records the responses the SDK writes.
func (f *stdioFilter) answered(p []byte) {
	for _, line := range bytes.Split(p, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var heads []rpcHead
		if line[0] == '[' {
			_ = json.Unmarshal(line, &heads)
		} else {
			var h rpcHead
			if json.Unmarshal(line, &h) == nil {
				heads = append(heads, h)
			}
		}
		f.mu.Lock()
		for _, h := range heads {
			if h.Method != "" || len(h.ID) == 0 || (h.Result == nil && h.Error == nil) {
				continue
			}
			id := rawIDKey(h.ID)
			if f.pending[id] > 0 {
				f.pending[id]--
				if f.pending[id] == 0 {
					delete(f.pending, id)
				}
			}
			if f.gate == id && id != "" {
				f.gate = ""
				var r struct {
					ProtocolVersion string `json:"protocolVersion"`
				}
				if json.Unmarshal(h.Result, &r) == nil {
					f.protocol = r.ProtocolVersion
				}
			}
		}
		f.broadcastLocked()
		f.mu.Unlock()
	}
}

// filterWriter is the SDK's side of stdout.
type filterWriter struct{ f *stdioFilter }

func (w *filterWriter) Write(p []byte) (int, error) {
	if err := w.f.write(p); err != nil {
		return 0, err
	}
	w.f.answered(p)
	return len(p), nil
}

func (w *filterWriter) Close() error {
	w.f.mu.Lock()
	w.f.stopping = true
	w.f.broadcastLocked()
	w.f.mu.Unlock()
	return nil
}
