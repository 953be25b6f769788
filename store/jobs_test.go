package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func intPtr(n int) *int { return &n }

func TestJobsPutGetListUpdate(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	jobs := []Job{
		{ID: "a1", Host: "dev-1", PaneID: "%1", StatusOption: "@fleetmux_job_a1", State: JobRunning, Started: now.Add(-3 * time.Hour), Origin: "detach"},
		{ID: "b2", Host: "local", PaneID: "%2", StatusOption: "@fleetmux_job_b2", State: JobExited, ExitStatus: intPtr(3), Started: now.Add(-time.Hour), Ended: now, Origin: "deadline"},
		{ID: "c3", Host: "dev-2", PaneID: "%0", StatusOption: "@fleetmux_job_c3", State: JobLost, Started: now.Add(-2 * time.Hour)},
	}
	for _, j := range jobs {
		if err := s.PutJob(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	got, ok, err := s.Job(ctx, "b2")
	if err != nil || !ok || got.ExitStatus == nil || *got.ExitStatus != 3 || !got.Ended.Equal(now) || got.Origin != "deadline" {
		t.Fatalf("Job(b2) = %+v %v %v", got, ok, err)
	}
	if _, ok, err := s.Job(ctx, "nope"); ok || err != nil {
		t.Fatalf("Job(nope): %v %v", ok, err)
	}
	for _, tc := range []struct {
		q    JobQuery
		want string
	}{
		{JobQuery{}, "b2,c3,a1"},
		{JobQuery{Since: now.Add(-150 * time.Minute)}, "b2,c3"},
	} {
		list, err := s.Jobs(ctx, tc.q)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, j := range list {
			ids = append(ids, j.ID)
		}
		if strings.Join(ids, ",") != tc.want {
			t.Errorf("Jobs(%+v) = %v, want %s", tc.q, ids, tc.want)
		}
	}
	// UpdateJob writes only what fn asks for, and only once per change.
	finish := func(j *Job) bool {
		if j.State != JobRunning {
			return false
		}
		j.State, j.ExitStatus, j.Ended = JobExited, intPtr(0), now
		return true
	}
	j, changed, err := s.UpdateJob(ctx, "a1", finish)
	if err != nil || !changed || j.State != JobExited {
		t.Fatalf("first update: %+v %v %v", j, changed, err)
	}
	if j, changed, err = s.UpdateJob(ctx, "a1", finish); err != nil || changed || j.State != JobExited {
		t.Fatalf("second update: %+v %v %v", j, changed, err)
	}
	if _, _, err := s.UpdateJob(ctx, "nope", finish); !errors.Is(err, ErrNoJob) {
		t.Fatalf("update of a missing job: %v", err)
	}
	if _, _, err := s.UpdateJob(ctx, "a1", func(j *Job) bool { j.ID = "zz"; return true }); err == nil {
		t.Fatal("an update changed the id")
	}
	for _, bad := range []Job{{State: JobRunning}, {ID: strings.Repeat("x", MaxJobIDBytes+1), State: JobRunning}, {ID: "x", State: "done"}} {
		if err := s.PutJob(ctx, bad); err == nil {
			t.Errorf("PutJob(%+v) accepted", bad)
		}
	}
}

// Two goroutines that see the same end record it once.
func TestUpdateJobOnce(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	if err := s.PutJob(ctx, Job{ID: "j", State: JobRunning, Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for range 8 {
		wg.Go(func() {
			_, changed, err := s.UpdateJob(ctx, "j", func(j *Job) bool {
				if j.State != JobRunning {
					return false
				}
				j.State = JobLost
				return true
			})
			if err != nil {
				t.Error(err)
			}
			if changed {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d updates recorded the end", wins)
	}
}

func TestPruneJobs(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	now := time.Now()
	for _, j := range []Job{
		{ID: "old", State: JobExited, Started: now.Add(-100 * 24 * time.Hour), Ended: now.Add(-99 * 24 * time.Hour)},
		{ID: "old-running", State: JobRunning, Started: now.Add(-100 * 24 * time.Hour)},
		{ID: "ended-late", State: JobExited, Started: now.Add(-100 * 24 * time.Hour), Ended: now.Add(-time.Hour)},
		{ID: "new", State: JobRunning, Started: now},
	} {
		if err := s.PutJob(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.Prune(ctx, 90*24*time.Hour, 0)
	if err != nil || n != 2 {
		t.Fatalf("prune: %d %v", n, err)
	}
	list, _ := s.Jobs(ctx, JobQuery{})
	if len(list) != 2 || list[0].ID != "new" || list[1].ID != "ended-late" {
		t.Fatalf("left: %+v", list)
	}
}

// A version-2 file (no jobs bucket) is migrated by the first write and keeps
// its records; a reader refuses it until then.
func TestMigrateV2AddsJobs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := db.Update(func(tx *bolt.Tx) error {
		if err := createTreeV2(tx, now); err != nil {
			return err
		}
		return tx.Bucket(rootBucket).Bucket(auditBucket).Put(auditKey(now, 1), []byte(`{"time":"2026-01-01T00:00:00Z","tool":"v2","outcome":"ok"}`))
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := OpenContext(context.Background(), path, Options{ReadOnly: true}); !errors.Is(err, ErrOldSchema) {
		t.Fatalf("read-only open of a v2 file: %v", err)
	}
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := tools(mustQuery(t, s, Query{})); got != "v2" {
		t.Fatalf("records after migration: %s", got)
	}
	if err := s.PutJob(context.Background(), Job{ID: "j", State: JobRunning}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode after migration: %v %v", fi, err)
	}
}

func TestQueryJob(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	if err := s.Append(ctx, Record{Tool: "run_command", Job: "a,b"}, Record{Tool: "job_end", Job: "b", Parent: "run_command"}, Record{Tool: "other"}); err != nil {
		t.Fatal(err)
	}
	if got := tools(mustQuery(t, s, Query{Job: "b"})); got != "run_command,job_end" {
		t.Fatalf("job b: %s", got)
	}
	if got := tools(mustQuery(t, s, Query{Job: "a"})); got != "run_command" {
		t.Fatalf("job a: %s", got)
	}
}
