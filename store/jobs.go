package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/fleetmux/fleetmux/fleet/vocab"
	bolt "go.etcd.io/bbolt"
)

// Job states, as stored in Job.State.
const (
	JobRunning = vocab.JobRunning
	JobExited  = vocab.JobExited
	JobLost    = vocab.JobLost
)

// MaxJobIDBytes bounds a job id (the key).
const MaxJobIDBytes = 64

// Job is the job record of the shared vocabulary (vocab.Job): what
// fleetmux stores of a job, as JSON.
type Job = vocab.Job

// JobQuery selects jobs. Zero fields do not filter.
type JobQuery struct {
	Since time.Time // jobs started at or after Since
}

func checkJob(j *Job) error {
	switch {
	case j.ID == "" || len(j.ID) > MaxJobIDBytes:
		return fmt.Errorf("store: job id must be 1 to %d bytes", MaxJobIDBytes)
	case j.State != JobRunning && j.State != JobExited && j.State != JobLost:
		return fmt.Errorf("store: job %s: unknown state %q", j.ID, j.State)
	}
	for _, f := range []*string{&j.Host, &j.PaneID, &j.SocketName, &j.SocketPath, &j.TmuxBin, &j.StatusOption, &j.PaneOption, &j.CommandSHA256, &j.Origin, &j.SessionID, &j.Client} {
		*f = truncateBytes(*f, MaxNameBytes)
	}
	j.Started, j.Ended = j.Started.UTC(), j.Ended.UTC()
	return nil
}

// PutJob stores j under j.ID (replacing a job of that id) and returns
// once it is committed.
func (s *Store) PutJob(ctx context.Context, j Job) error {
	if err := checkJob(&j); err != nil {
		return err
	}
	v, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("store: encode job: %w", err)
	}
	return s.update(ctx, func(root *bolt.Bucket) error {
		if err := root.Bucket(jobsBucket).Put([]byte(j.ID), v); err != nil {
			return fmt.Errorf("store: put job: %w", err)
		}
		return nil
	})
}

// Job returns the job with id; ok is false when there is none.
func (s *Store) Job(ctx context.Context, id string) (j Job, ok bool, err error) {
	err = s.view(ctx, func(root *bolt.Bucket) error {
		j, ok = Job{}, false
		if root == nil {
			return nil
		}
		v := root.Bucket(jobsBucket).Get([]byte(id))
		if v == nil {
			return nil
		}
		if err := json.Unmarshal(v, &j); err != nil {
			return s.corruptError(fmt.Errorf("job %q: %w", id, err))
		}
		ok = true
		return nil
	})
	return j, ok, err
}

// Jobs returns the jobs that match q, newest first (by start time). Jobs
// whose record cannot be decoded are skipped.
func (s *Store) Jobs(ctx context.Context, q JobQuery) ([]Job, error) {
	var out []Job
	err := s.view(ctx, func(root *bolt.Bucket) error {
		out = nil // the transaction may be retried
		if root == nil {
			return nil
		}
		return root.Bucket(jobsBucket).ForEach(func(k, v []byte) error {
			var j Job
			if json.Unmarshal(v, &j) != nil {
				return nil
			}
			if !q.Since.IsZero() && j.Started.Before(q.Since) {
				return nil
			}
			out = append(out, j)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(a, b int) bool {
		if !out[a].Started.Equal(out[b].Started) {
			return out[a].Started.After(out[b].Started)
		}
		return out[a].ID < out[b].ID
	})
	return out, nil
}

// ErrNoJob is returned by UpdateJob for an id with no job.
var ErrNoJob = errors.New("store: no such job")

// UpdateJob reads the job with id, lets fn change it and stores it when
// fn returns true, all in one write transaction (so two processes that
// see the same job end cannot both record it). It returns the job as
// stored afterwards and whether fn's change was written.
func (s *Store) UpdateJob(ctx context.Context, id string, fn func(j *Job) bool) (Job, bool, error) {
	var (
		out     Job
		changed bool
	)
	err := s.update(ctx, func(root *bolt.Bucket) error {
		out, changed = Job{}, false
		b := root.Bucket(jobsBucket)
		v := b.Get([]byte(id))
		if v == nil {
			return fmt.Errorf("%w: %q", ErrNoJob, id)
		}
		var j Job
		if err := json.Unmarshal(v, &j); err != nil {
			return s.corruptError(fmt.Errorf("job %q: %w", id, err))
		}
		if !fn(&j) {
			out = j
			return nil
		}
		if j.ID != id {
			return fmt.Errorf("store: update job %q: the id cannot change", id)
		}
		if err := checkJob(&j); err != nil {
			return err
		}
		nv, err := json.Marshal(j)
		if err != nil {
			return fmt.Errorf("store: encode job: %w", err)
		}
		if err := b.Put([]byte(id), nv); err != nil {
			return fmt.Errorf("store: update job: %w", err)
		}
		out, changed = j, true
		return nil
	})
	return out, changed, err
}

// pruneJobs deletes the jobs whose last event (end, else start) is before
// cutoff, and records that cannot be decoded.
func (s *Store) pruneJobs(ctx context.Context, cutoff time.Time) (int, error) {
	n := 0
	err := s.update(ctx, func(root *bolt.Bucket) error {
		n = 0
		b := root.Bucket(jobsBucket)
		var doomed [][]byte
		err := b.ForEach(func(k, v []byte) error {
			var j Job
			if json.Unmarshal(v, &j) != nil {
				doomed = append(doomed, bytes.Clone(k))
				return nil
			}
			last := j.Started
			if j.Ended.After(last) {
				last = j.Ended
			}
			if last.Before(cutoff) {
				doomed = append(doomed, bytes.Clone(k))
			}
			return nil
		})
		if err != nil {
			return err
		}
		n = len(doomed)
		return deleteKeys(b, doomed)
	})
	return n, err
}
