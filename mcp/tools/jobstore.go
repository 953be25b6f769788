package tools

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fleetmux/fleetmux/fleet/vocab"
)

// Extensions: what fleetmux adds to the reference's surface in fleet mode
// (--hosts) or with --extensions in local mode: durable jobs (run_command's
// detach, get_job, list_jobs, cancel_job), a run_command that answers
// "pending" at --max-call-seconds, and progress notifications on long
// calls. Without either, none of it is visible and local mode stays the
// reference's surface byte for byte.

// DefaultMaxCallSeconds is the default of --max-call-seconds: below the
// 60 s request deadline of the TypeScript SDK's clients.
const DefaultMaxCallSeconds = 50.0

// Job states.
const (
	JobRunning = vocab.JobRunning
	JobExited  = vocab.JobExited
	JobLost    = vocab.JobLost
)

// Job is the job record of the shared vocabulary (vocab.Job). The exit
// status is kept on the host: the typed wrapper sets the tmux server
// option StatusOption to "<exit status>:<unix seconds>" when the command
// ends, so it survives fleetmux restarts and dropped SSH connections; the
// record says where to read it.
type Job = vocab.Job

// JobStore persists jobs. Implementations must make UpdateJob atomic: fn
// sees the stored job and its change is written only when it returns
// true, so that one process records a job's end.
type JobStore interface {
	PutJob(ctx context.Context, j Job) error
	GetJob(ctx context.Context, id string) (Job, bool, error)
	// ListJobs returns the jobs started at or after since (zero: all),
	// newest first.
	ListJobs(ctx context.Context, since time.Time) ([]Job, error)
	UpdateJob(ctx context.Context, id string, fn func(j *Job) bool) (Job, bool, error)
}

// errNoJob is UpdateJob's error for an unknown id (memory store).
var errNoJob = errors.New("no such job")

// memJobs keeps jobs in this process only (no state file: --no-audit, or
// a state file that cannot be used).
type memJobs struct {
	mu   sync.Mutex
	jobs map[string]Job
}

func NewMemJobs() *memJobs { return &memJobs{jobs: map[string]Job{}} }

func (m *memJobs) PutJob(_ context.Context, j Job) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.jobs[j.ID] = j
	return nil
}

func (m *memJobs) GetJob(_ context.Context, id string) (Job, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, ok := m.jobs[id]
	return j, ok, nil
}

func (m *memJobs) ListJobs(_ context.Context, since time.Time) ([]Job, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Job
	for _, j := range m.jobs {
		if since.IsZero() || !j.Started.Before(since) {
			out = append(out, j)
		}
	}
	sort.Slice(out, func(a, b int) bool {
		if !out[a].Started.Equal(out[b].Started) {
			return out[a].Started.After(out[b].Started)
		}
		return out[a].ID < out[b].ID
	})
	return out, nil
}

func (m *memJobs) UpdateJob(_ context.Context, id string, fn func(j *Job) bool) (Job, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, ok := m.jobs[id]
	if !ok {
		return Job{}, false, fmt.Errorf("%w: %q", errNoJob, id)
	}
	if !fn(&j) {
		return j, false, nil
	}
	m.jobs[id] = j
	return j, true, nil
}

// Jobs is what the server uses: the persistent store when there is
// one, with this process's memory as the fallback for jobs it could not
// persist (a locked or broken state file never loses a job its own
// process started).
type Jobs struct {
	disk JobStore // nil without a state file
	mem  *memJobs
	warn func(error)
}

func (s *Jobs) put(ctx context.Context, j Job) {
	// The command was typed: the record must not be lost to a client
	// that cancels now.
	ctx = context.WithoutCancel(ctx)
	_ = s.mem.PutJob(ctx, j)
	if s.disk != nil {
		if err := s.disk.PutJob(ctx, j); err != nil {
			s.warn(err)
		}
	}
}

func (s *Jobs) get(ctx context.Context, id string) (Job, bool) {
	if s.disk != nil {
		j, ok, err := s.disk.GetJob(ctx, id)
		if err != nil {
			s.warn(err)
		} else if ok {
			return j, true
		}
	}
	j, ok, _ := s.mem.GetJob(ctx, id)
	return j, ok
}

func (s *Jobs) list(ctx context.Context, since time.Time) []Job {
	mem, _ := s.mem.ListJobs(ctx, since)
	if s.disk == nil {
		return mem
	}
	disk, err := s.disk.ListJobs(ctx, since)
	if err != nil {
		s.warn(err)
		return mem
	}
	seen := make(map[string]bool, len(disk))
	for _, j := range disk {
		seen[j.ID] = true
	}
	for _, j := range mem {
		if !seen[j.ID] {
			disk = append(disk, j)
		}
	}
	sort.SliceStable(disk, func(a, b int) bool { return disk[a].Started.After(disk[b].Started) })
	return disk
}

// update applies fn where the job lives: the state file, else memory.
// fellBack reports that the state file failed and memory took the change
// (other processes and later runs do not see it).
func (s *Jobs) update(ctx context.Context, id string, fn func(j *Job) bool) (j Job, changed, fellBack bool, err error) {
	if s.disk != nil {
		j, changed, err := s.disk.UpdateJob(ctx, id, fn)
		if err == nil {
			_, _, _ = s.mem.UpdateJob(ctx, id, func(m *Job) bool { *m = j; return true })
			return j, changed, false, nil
		}
		if _, ok, _ := s.mem.GetJob(ctx, id); !ok {
			return Job{}, false, false, err
		}
		s.warn(err)
		fellBack = true
	}
	j, changed, err = s.mem.UpdateJob(ctx, id, fn)
	return j, changed, fellBack, err
}

// ---- audit: the jobs a call started ----

type auditNoteKey struct{}

// auditNote collects what a call's audit record needs from its handler:
// the ids of the jobs it started. A call inside another (a fan-out's
// host) has its own note; its jobs are noted in the enclosing call's too.
type auditNote struct {
	mu     sync.Mutex
	jobs   []string
	parent *auditNote
}

// WithAuditNote gives a call (dispatch, a fan-out's host) its note.
func WithAuditNote(ctx context.Context) context.Context {
	parent, _ := ctx.Value(auditNoteKey{}).(*auditNote)
	return context.WithValue(ctx, auditNoteKey{}, &auditNote{parent: parent})
}

// noteJob records that the call started job id.
func noteJob(ctx context.Context, id string) {
	n, _ := ctx.Value(auditNoteKey{}).(*auditNote)
	for ; n != nil; n = n.parent {
		n.mu.Lock()
		n.jobs = append(n.jobs, id)
		n.mu.Unlock()
	}
}

// NotedJobs is the comma-separated ids of the jobs the call started.
func NotedJobs(ctx context.Context) string {
	n, ok := ctx.Value(auditNoteKey{}).(*auditNote)
	if !ok {
		return ""
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return strings.Join(n.jobs, ",")
}

// NewJobs is the server's job store: disk when there is one (nil: this
// process's memory only); warn reports a store that failed.
func NewJobs(disk JobStore, warn func(error)) *Jobs {
	return &Jobs{disk: disk, mem: NewMemJobs(), warn: warn}
}
