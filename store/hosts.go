package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// PutHostState merges st into the stored state of st.Host: fields of st
// that are zero ("" or the zero time or duration) keep their stored values,
// so a caller can record just a connect, just an error or just an RTT. To
// tell whether LastError is still current, compare LastErrorTime with
// LastConnect.
func (s *Store) PutHostState(ctx context.Context, st HostState) error {
	if st.Host == "" {
		return errors.New("store: host state without a host name")
	}
	return s.update(ctx, func(root *bolt.Bucket) error {
		b := root.Bucket(hostsBucket)
		var old HostState
		if v := b.Get([]byte(st.Host)); v != nil {
			// An unreadable entry is replaced rather than blocking updates.
			_ = json.Unmarshal(v, &old)
		}
		v, err := json.Marshal(old.merge(st))
		if err != nil {
			return fmt.Errorf("store: encode host state: %w", err)
		}
		if err := b.Put([]byte(st.Host), v); err != nil {
			return fmt.Errorf("store: put host state: %w", err)
		}
		return nil
	})
}

// HostStates returns the stored state of every host, keyed by host alias.
// Entries that cannot be decoded are left out.
func (s *Store) HostStates(ctx context.Context) (map[string]HostState, error) {
	out := map[string]HostState{}
	err := s.view(ctx, func(root *bolt.Bucket) error {
		clear(out)
		if root == nil {
			return nil
		}
		return root.Bucket(hostsBucket).ForEach(func(k, v []byte) error {
			var st HostState
			if json.Unmarshal(v, &st) == nil {
				st.Host = string(k)
				out[st.Host] = st
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
