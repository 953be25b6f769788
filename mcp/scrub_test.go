package mcp

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

type memAuditor struct {
	mu  sync.Mutex
	evs []AuditEvent
}

func (m *memAuditor) Append(_ context.Context, ev AuditEvent) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.evs = append(m.evs, ev)
	return nil
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestSecretsNeverInAuditOrLogs: tmux repeats a bad option value in its
// error; the audit record and the stderr log carry its digest instead,
// directly and inside a batch. The client still sees its own value.
func TestSecretsNeverInAuditOrLogs(t *testing.T) {
	aud := &memAuditor{}
	logs := &syncBuf{}
	e := newEnv(t, func(_ *testEnv, o *Options) {
		o.Auditor = aud
		o.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	const secret = "S3CRET-opt-value"
	res := e.fail("set_option", map[string]any{"option": "status", "value": secret, "scope": "session", "global_": true}, secret)
	_ = res
	e.batch("call_mutating_tools_batch", "continue",
		batchOp("set_option", map[string]any{"option": "status", "value": secret + "-2", "scope": "session", "global_": true}))
	aud.mu.Lock()
	defer aud.mu.Unlock()
	sawErr := 0
	for _, ev := range aud.evs {
		if strings.Contains(ev.Error, "S3CRET") || strings.Contains(string(ev.Args), "S3CRET") {
			t.Errorf("audit %s: %q %s", ev.Tool, ev.Error, ev.Args)
		}
		if strings.Contains(ev.Error, "<redacted len=") {
			sawErr++
		}
	}
	if sawErr < 2 {
		t.Errorf("expected 2 scrubbed audit errors, got %d: %+v", sawErr, aud.evs)
	}
	if l := logs.String(); strings.Contains(l, "S3CRET") || !strings.Contains(l, "<redacted len=") {
		t.Errorf("log: %s", l)
	}
}
