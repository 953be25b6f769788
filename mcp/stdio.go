package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"

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

// NewStdioTransport returns the stdio transport fleetmux serves on: the
// SDK's newline-delimited JSON-RPC over in and out, with a line filter in
// front that makes it robust to what real clients and shell pipes send:
//
//   - a line that is not JSON is answered with a -32700 Parse error (id
//     null) and skipped, instead of ending the session;
//   - a line over MaxLineLength is answered with -32600 and skipped,
//     without buffering it;
//   - after an "initialize" request, nothing more is read until it is
//     answered, so a client that pipelines "notifications/initialized"
//     right behind it is served in order;
//   - when in ends, the requests already received are answered before
//     the session ends (bounded by drainTimeout), so
//     `printf '...' | fleetmux` gets every answer.
func NewStdioTransport(in io.Reader, out io.Writer, log *slog.Logger) sdk.Transport {
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
	gate     string         // id of an unanswered initialize request
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

// forward hands one line to the SDK, or answers it with a parse error.
func (f *stdioFilter) forward(line []byte) {
	trimmed := bytes.TrimSpace(line)
	if !json.Valid(trimmed) {
		f.log.Warn("stdio: line is not JSON; answered with a parse error", "bytes", len(trimmed))
		_ = f.write(parseErrorLine)
		return
	}
	var h rpcHead
	if trimmed[0] == '{' && json.Unmarshal(trimmed, &h) == nil && h.Method != "" && len(h.ID) > 0 && string(h.ID) != "null" {
		id := string(h.ID)
		f.mu.Lock()
		f.pending[id]++
		if h.Method == "initialize" {
			f.gate = id
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
			id := string(h.ID)
			if f.pending[id] > 0 {
				f.pending[id]--
				if f.pending[id] == 0 {
					delete(f.pending, id)
				}
			}
			if f.gate == id {
				f.gate = ""
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
