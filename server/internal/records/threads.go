package records

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
)

const threadCols = `thread_id, owner, created_at, updated_at, metadata, config, status, state_values, interrupts`

// threadColsOf is threadCols of the table named alias in a join.
const threadColsOf = `t.thread_id, t.owner, t.created_at, t.updated_at, t.metadata, t.config, t.status, t.state_values, t.interrupts`

func scanThread(r Rows) (Thread, error) { return scanThreadAnd(r) }

// scanThreadAnd scans a row of threadCols followed by the columns extra
// holds the destinations of.
func scanThreadAnd(r Rows, extra ...any) (Thread, error) {
	var t Thread
	var created, updated int64
	var meta, config string
	var values, interrupts sql.NullString
	if err := r.Scan(append([]any{&t.ID, &t.Owner, &created, &updated, &meta, &config, &t.Status, &values, &interrupts}, extra...)...); err != nil {
		return Thread{}, err
	}
	t.CreatedAt, t.UpdatedAt = fromMicros(created), fromMicros(updated)
	t.Metadata, t.Config = json.RawMessage(meta), json.RawMessage(config)
	if values.Valid {
		t.Values = json.RawMessage(values.String)
	}
	if interrupts.Valid {
		t.Interrupts = json.RawMessage(interrupts.String)
	}
	return t, t.check()
}

// check reports stored JSON that does not decode.
func (t Thread) check() error {
	for _, c := range []struct {
		name string
		raw  []byte
	}{{"metadata", t.Metadata}, {"config", t.Config}, {"state_values", t.Values}, {"interrupts", t.Interrupts}} {
		if err := checkJSON("thread", t.ID, c.name, c.raw); err != nil {
			return err
		}
	}
	return nil
}

// CreateThread stores a new thread for t.Owner, with t.ID, t.Metadata and
// t.Config; its times are now and its status idle. An existing thread of
// the same owner is ErrConflict unless doNothing, when it is returned as
// it is; another owner's thread with the id is always ErrConflict.
func (s *Store) CreateThread(ctx context.Context, t Thread, doNothing bool) (Thread, error) {
	now := s.now()
	t.CreatedAt, t.UpdatedAt, t.Status = now, now, ThreadIdle
	t.Metadata, t.Config = object(t.Metadata), object(t.Config)
	t.Values, t.Interrupts = nil, nil
	var out Thread
	err := s.write(ctx, t.ID, func(tx Tx) error {
		n, err := s.exec(ctx, tx, `INSERT INTO weft_server_threads (`+threadCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, NULL, NULL) ON CONFLICT (thread_id) DO NOTHING`,
			t.ID, t.Owner, micros(now), micros(now), string(t.Metadata), string(t.Config), t.Status)
		if err != nil {
			return err
		}
		if n == 1 {
			out = t
			return nil
		}
		old, err := s.getThread(ctx, tx, t.Owner, t.ID)
		if err != nil || !doNothing {
			return fmt.Errorf("%w: thread %s", ErrConflict, t.ID)
		}
		out = old
		return nil
	})
	return out, err
}

func (s *Store) getThread(ctx context.Context, tx Tx, owner, id string) (Thread, error) {
	return getOne(ctx, s, tx, "thread", id, `SELECT `+threadCols+` FROM weft_server_threads WHERE thread_id = $1 AND owner = $2`, []any{id, owner}, scanThread)
}

// GetThread returns owner's thread id.
func (s *Store) GetThread(ctx context.Context, owner, id string) (Thread, error) {
	var t Thread
	err := s.read(ctx, func(tx Tx) (err error) {
		t, err = s.getThread(ctx, tx, owner, id)
		return err
	})
	return t, err
}

// PatchThread merges metadata into owner's thread's metadata (a shallow
// merge: the keys given replace those stored) and returns the thread.
func (s *Store) PatchThread(ctx context.Context, owner, id string, metadata json.RawMessage) (Thread, error) {
	var t Thread
	err := s.write(ctx, id, func(tx Tx) (err error) {
		t, err = s.getThread(ctx, tx, owner, id)
		if err != nil {
			return err
		}
		if t.Metadata, err = mergeObjects(t.Metadata, metadata); err != nil {
			return err
		}
		t.UpdatedAt = s.now()
		_, err = s.exec(ctx, tx, `UPDATE weft_server_threads SET metadata = $1, updated_at = $2 WHERE thread_id = $3`, string(t.Metadata), micros(t.UpdatedAt), id)
		return err
	})
	return t, err
}

// SetThreadValues records a thread's values and interrupts after its
// state was changed outside a run (a state update), and its status.
func (s *Store) SetThreadValues(ctx context.Context, id, status string, values, interrupts json.RawMessage) error {
	return s.write(ctx, id, func(tx Tx) error {
		_, err := s.exec(ctx, tx, `UPDATE weft_server_threads SET state_values = $1, interrupts = $2, status = $3, updated_at = $4 WHERE thread_id = $5`,
			nullable(values), nullable(interrupts), status, micros(s.now()), id)
		return err
	})
}

// DeleteThread deletes owner's thread and its runs.
func (s *Store) DeleteThread(ctx context.Context, owner, id string) error {
	return s.write(ctx, id, func(tx Tx) error {
		n, err := s.exec(ctx, tx, `DELETE FROM weft_server_threads WHERE thread_id = $1 AND owner = $2`, id, owner)
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("%w: thread %s", ErrNotFound, id)
		}
		if _, err = s.exec(ctx, tx, `DELETE FROM weft_server_runs WHERE thread_id = $1`, id); err != nil {
			return err
		}
		// A thread's crons go with it: they could only fail.
		_, err = s.exec(ctx, tx, `DELETE FROM weft_server_crons WHERE thread_id = $1`, id)
		return err
	})
}

// ThreadQuery narrows SearchThreads and CountThreads.
type ThreadQuery struct {
	Owner string
	// IDs keeps these threads only; empty keeps all.
	IDs []string
	// Metadata and Values keep threads whose metadata (values) contain
	// these keys with equal values.
	Metadata map[string]any
	Values   map[string]any
	// Status keeps threads with this status; empty keeps all.
	Status string
	// SortBy is thread_id, status, created_at (the default) or
	// updated_at; Desc orders newest first.
	SortBy string
	Desc   bool
	Limit  int
	Offset int
}

func (s *Store) threadWhere(q ThreadQuery, a *args) (string, error) {
	conds := []string{"owner = " + a.add(q.Owner)}
	if len(q.IDs) > 0 {
		ps := make([]string, len(q.IDs))
		for i, id := range q.IDs {
			ps[i] = a.add(id)
		}
		conds = append(conds, "thread_id IN ("+strings.Join(ps, ", ")+")")
	}
	if q.Status != "" {
		conds = append(conds, "status = "+a.add(q.Status))
	}
	if len(q.Metadata) > 0 {
		c, err := s.d.Contains("metadata", q.Metadata, a.add)
		if err != nil {
			return "", fmt.Errorf("metadata filter: %w", err)
		}
		conds = append(conds, c)
	}
	if len(q.Values) > 0 {
		c, err := s.d.Contains("state_values", q.Values, a.add)
		if err != nil {
			return "", fmt.Errorf("values filter: %w", err)
		}
		conds = append(conds, "state_values IS NOT NULL AND "+c)
	}
	return strings.Join(conds, " AND "), nil
}

// SearchThreads returns the threads q selects, one page of them, and how
// many it selects in all.
func (s *Store) SearchThreads(ctx context.Context, q ThreadQuery) ([]Thread, int, error) {
	a := &args{}
	where, err := s.threadWhere(q, a)
	if err != nil {
		return nil, 0, err
	}
	order := "created_at"
	switch q.SortBy {
	case "thread_id", "status", "updated_at":
		order = q.SortBy
	}
	return searchPage(ctx, s, pageQuery{table: "weft_server_threads", cols: threadCols, idCol: "thread_id", where: where, order: order,
		vs: a.vs, desc: q.Desc, idFollows: true, limit: q.Limit, offset: q.Offset}, scanThread)
}

// CountThreads returns how many threads q selects (its Limit, Offset and
// sort are ignored).
func (s *Store) CountThreads(ctx context.Context, q ThreadQuery) (int, error) {
	a := &args{}
	where, err := s.threadWhere(q, a)
	if err != nil {
		return 0, err
	}
	return s.countOf(ctx, "weft_server_threads", where, a.vs)
}
