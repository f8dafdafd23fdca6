package records

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Cron is a scheduled run: at each time of its schedule, a run of its
// payload on its thread, or on a new thread when it has none.
type Cron struct {
	ID          string
	Owner       string
	AssistantID string
	// ThreadID is "" for a cron whose runs each get a new thread.
	ThreadID string
	// Schedule is a cron expression, read in Timezone (an IANA name).
	Schedule string
	Timezone string
	// Payload is the JSON object of the run each tick creates; Metadata
	// is the cron's own (a JSON object).
	Payload  json.RawMessage
	Metadata json.RawMessage
	Enabled  bool
	// EndTime is when the cron stops firing (nil: never).
	EndTime *time.Time
	// NextRunDate is its next tick (nil: none).
	NextRunDate *time.Time
	// OnRunCompleted is "delete" or "keep": what becomes of the thread of
	// a run without a thread once the run ends.
	OnRunCompleted string
	CreatedAt      time.Time
	UpdatedAt      time.Time
	// RetryTick is set while NextRunDate is not a tick of the schedule
	// but when to try again a tick whose run could not be made: it is
	// that tick, and RetryAttempts how many times its run failed. Only
	// RetryCronTick sets them; ClaimCronTick, and an UpdateCron that
	// moves NextRunDate, clear them. CreateCron and UpdateCron ignore
	// them.
	RetryTick     *time.Time
	RetryAttempts int
}

const cronCols = `cron_id, owner, assistant_id, thread_id, schedule, timezone, payload, metadata, enabled, end_time, next_run_date, on_run_completed, created_at, updated_at, retry_tick, retry_attempts`

func scanCron(r Rows) (Cron, error) {
	var c Cron
	var thread sql.NullString
	var payload, meta string
	var enabled, created, updated, attempts int64
	var end, next, retry sql.NullInt64
	if err := r.Scan(&c.ID, &c.Owner, &c.AssistantID, &thread, &c.Schedule, &c.Timezone, &payload, &meta, &enabled, &end, &next, &c.OnRunCompleted, &created, &updated, &retry, &attempts); err != nil {
		return Cron{}, err
	}
	c.RetryTick, c.RetryAttempts = optMicros(retry), int(attempts)
	c.ThreadID = thread.String
	c.Payload, c.Metadata = json.RawMessage(payload), json.RawMessage(meta)
	c.Enabled = enabled != 0
	c.EndTime, c.NextRunDate = optMicros(end), optMicros(next)
	c.CreatedAt, c.UpdatedAt = fromMicros(created), fromMicros(updated)
	for _, col := range []struct {
		name string
		raw  []byte
	}{{"payload", c.Payload}, {"metadata", c.Metadata}} {
		if err := checkJSON("cron", c.ID, col.name, col.raw); err != nil {
			return Cron{}, err
		}
	}
	return c, nil
}

func optMicros(n sql.NullInt64) *time.Time {
	if !n.Valid {
		return nil
	}
	t := fromMicros(n.Int64)
	return &t
}

// microsOrNull is t as a nullable column.
func microsOrNull(t *time.Time) any {
	if t == nil {
		return nil
	}
	return micros(*t)
}

func emptyNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// CreateCron stores a new cron, c as given, with its times now. A cron
// with the same id is ErrConflict. A cron on a thread that c.Owner does
// not have is ErrNotFound.
func (s *Store) CreateCron(ctx context.Context, c Cron) (Cron, error) {
	now := s.now()
	c.CreatedAt, c.UpdatedAt = now, now
	c.Payload, c.Metadata = object(c.Payload), object(c.Metadata)
	c.RetryTick, c.RetryAttempts = nil, 0
	err := s.write(ctx, c.ThreadID, func(tx Tx) error {
		if c.ThreadID != "" {
			if _, err := s.getThread(ctx, tx, c.Owner, c.ThreadID); err != nil {
				return err
			}
		}
		n, err := s.exec(ctx, tx, `INSERT INTO weft_server_crons (`+cronCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, NULL, 0) ON CONFLICT (cron_id) DO NOTHING`,
			c.ID, c.Owner, c.AssistantID, emptyNull(c.ThreadID), c.Schedule, c.Timezone, string(c.Payload), string(c.Metadata),
			boolInt(c.Enabled), microsOrNull(c.EndTime), microsOrNull(c.NextRunDate), c.OnRunCompleted, micros(now), micros(now))
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("%w: cron %s", ErrConflict, c.ID)
		}
		return nil
	})
	return c, err
}

// getCron reads owner's cron id; lock adds the dialect's row lock, for a
// read that the transaction's write depends on.
func (s *Store) getCron(ctx context.Context, tx Tx, owner, id string, lock bool) (Cron, error) {
	q := `SELECT ` + cronCols + ` FROM weft_server_crons WHERE cron_id = $1 AND owner = $2`
	if lock {
		q += s.d.ForUpdate
	}
	return getOne(ctx, s, tx, "cron", id, q, []any{id, owner}, scanCron)
}

// GetCron returns owner's cron id.
func (s *Store) GetCron(ctx context.Context, owner, id string) (Cron, error) {
	var c Cron
	err := s.read(ctx, func(tx Tx) (err error) {
		c, err = s.getCron(ctx, tx, owner, id, false)
		return err
	})
	return c, err
}

// UpdateCron reads owner's cron id, lets change modify it (its id, owner,
// thread, creation time and retry state stay), and stores it with its
// update time now, all in one transaction; change's error leaves it as it
// was. A change of NextRunDate ends the retry of a failed tick, if any
// (Cron.RetryTick).
func (s *Store) UpdateCron(ctx context.Context, owner, id string, change func(*Cron) error) (Cron, error) {
	var c Cron
	err := s.write(ctx, "", func(tx Tx) (err error) {
		// Locked: a tick claimed meanwhile (ClaimCronTick) is not
		// written back as it was read.
		if c, err = s.getCron(ctx, tx, owner, id, true); err != nil {
			return err
		}
		keep := c
		if err := change(&c); err != nil {
			return err
		}
		c.ID, c.Owner, c.ThreadID, c.CreatedAt = keep.ID, keep.Owner, keep.ThreadID, keep.CreatedAt
		c.RetryTick, c.RetryAttempts = keep.RetryTick, keep.RetryAttempts
		if !sameTime(c.NextRunDate, keep.NextRunDate) {
			c.RetryTick, c.RetryAttempts = nil, 0
		}
		c.Payload, c.Metadata = object(c.Payload), object(c.Metadata)
		c.UpdatedAt = s.now()
		_, err = s.exec(ctx, tx, `UPDATE weft_server_crons SET assistant_id = $1, schedule = $2, timezone = $3, payload = $4, metadata = $5, enabled = $6, end_time = $7, next_run_date = $8, on_run_completed = $9, updated_at = $10, retry_tick = $11, retry_attempts = $12 WHERE cron_id = $13 AND owner = $14`,
			c.AssistantID, c.Schedule, c.Timezone, string(c.Payload), string(c.Metadata), boolInt(c.Enabled),
			microsOrNull(c.EndTime), microsOrNull(c.NextRunDate), c.OnRunCompleted, micros(c.UpdatedAt),
			microsOrNull(c.RetryTick), c.RetryAttempts, c.ID, c.Owner)
		return err
	})
	return c, err
}

// DeleteCron deletes owner's cron id.
func (s *Store) DeleteCron(ctx context.Context, owner, id string) error {
	return s.write(ctx, "", func(tx Tx) error {
		n, err := s.exec(ctx, tx, `DELETE FROM weft_server_crons WHERE cron_id = $1 AND owner = $2`, id, owner)
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("%w: cron %s", ErrNotFound, id)
		}
		return nil
	})
}

// CronQuery narrows SearchCrons and CountCrons.
type CronQuery struct {
	Owner string
	// AssistantID and ThreadID keep the crons of this assistant (thread);
	// empty keeps all.
	AssistantID string
	ThreadID    string
	// Enabled keeps the crons enabled (or not); nil keeps all.
	Enabled *bool
	// Metadata keeps crons whose metadata contains these keys with equal
	// values.
	Metadata map[string]any
	// SortBy is cron_id, assistant_id, thread_id, created_at (the
	// default), updated_at or next_run_date; Desc orders from the last.
	SortBy string
	Desc   bool
	Limit  int
	Offset int
}

func (s *Store) cronWhere(q CronQuery, a *args) (string, error) {
	conds := []string{"owner = " + a.add(q.Owner)}
	if q.AssistantID != "" {
		conds = append(conds, "assistant_id = "+a.add(q.AssistantID))
	}
	if q.ThreadID != "" {
		conds = append(conds, "thread_id = "+a.add(q.ThreadID))
	}
	if q.Enabled != nil {
		conds = append(conds, "enabled = "+a.add(boolInt(*q.Enabled)))
	}
	if len(q.Metadata) > 0 {
		c, err := s.d.Contains("metadata", q.Metadata, a.add)
		if err != nil {
			return "", fmt.Errorf("metadata filter: %w", err)
		}
		conds = append(conds, c)
	}
	return strings.Join(conds, " AND "), nil
}

// SearchCrons returns the crons q selects, one page of them, and how many
// it selects in all.
func (s *Store) SearchCrons(ctx context.Context, q CronQuery) ([]Cron, int, error) {
	a := &args{}
	where, err := s.cronWhere(q, a)
	if err != nil {
		return nil, 0, err
	}
	order := "created_at"
	switch q.SortBy {
	case "cron_id", "assistant_id", "thread_id", "updated_at", "next_run_date":
		order = q.SortBy
	}
	return searchPage(ctx, s, pageQuery{table: "weft_server_crons", cols: cronCols, idCol: "cron_id", where: where, order: order,
		vs: a.vs, desc: q.Desc, idFollows: true, limit: q.Limit, offset: q.Offset}, scanCron)
}

// CountCrons returns how many crons q selects (its Limit, Offset and sort
// are ignored).
func (s *Store) CountCrons(ctx context.Context, q CronQuery) (int, error) {
	a := &args{}
	where, err := s.cronWhere(q, a)
	if err != nil {
		return 0, err
	}
	return s.countOf(ctx, "weft_server_crons", where, a.vs)
}

// DueCrons returns, of every owner, up to limit crons enabled whose next
// tick is at or before now and not after their end time, the oldest
// tick first. A tick tried again (Cron.RetryTick) is due at its retry's
// time if the tick itself was not after the end time.
func (s *Store) DueCrons(ctx context.Context, now time.Time, limit int) ([]Cron, error) {
	var out []Cron
	err := s.read(ctx, func(tx Tx) error {
		out = nil
		return s.query(ctx, tx, `SELECT `+cronCols+` FROM weft_server_crons WHERE enabled = 1 AND next_run_date IS NOT NULL AND next_run_date <= $1 AND (end_time IS NULL OR COALESCE(retry_tick, next_run_date) <= end_time) ORDER BY next_run_date, cron_id LIMIT $2`,
			[]any{micros(now), limit}, func(r Rows) error {
				c, err := scanCron(r)
				if errors.Is(err, ErrCorrupt) {
					// One undecodable cron does not stop the others.
					return nil
				}
				out = append(out, c)
				return err
			})
	})
	return out, err
}

// ClaimCronTick moves cron id's next tick from tick to next (nil: none)
// if it still is tick and the cron is enabled, and reports whether it
// did: of several processes claiming one tick, one only succeeds, which
// fires it. The claim ends the retry of a failed tick, if any
// (Cron.RetryTick): the claimant that fails to fire it again gives it
// back with RetryCronTick.
func (s *Store) ClaimCronTick(ctx context.Context, id string, tick time.Time, next *time.Time) (bool, error) {
	claimed := false
	err := s.write(ctx, "", func(tx Tx) error {
		n, err := s.exec(ctx, tx, `UPDATE weft_server_crons SET next_run_date = $1, retry_tick = NULL, retry_attempts = 0 WHERE cron_id = $2 AND next_run_date = $3 AND enabled = 1`,
			microsOrNull(next), id, micros(tick))
		claimed = n == 1
		return err
	})
	return claimed, err
}

// RetryCronTick gives back a tick of cron id that this process claimed
// (ClaimCronTick moved its next tick to claimed) and whose run it could
// not make: it sets the cron's next tick to retryAt, to be claimed again
// then, recording the tick tried again (Cron.RetryTick) and how many
// times its run failed (attempts). It does so only if the next tick
// still is claimed and the cron is enabled, and reports whether it did:
// a later claim of another process, a change of the cron's schedule and
// a disabled cron are not undone.
func (s *Store) RetryCronTick(ctx context.Context, id string, claimed *time.Time, retryAt, tick time.Time, attempts int) (bool, error) {
	if attempts < 1 {
		return false, fmt.Errorf("records: cron %s: a tick tried again failed at least once, not %d times", id, attempts)
	}
	cond, vs := `next_run_date IS NULL`, []any{micros(retryAt), micros(tick), attempts, id}
	if claimed != nil {
		cond, vs = `next_run_date = $5`, append(vs, micros(*claimed))
	}
	given := false
	err := s.write(ctx, "", func(tx Tx) error {
		n, err := s.exec(ctx, tx, `UPDATE weft_server_crons SET next_run_date = $1, retry_tick = $2, retry_attempts = $3 WHERE cron_id = $4 AND `+cond+` AND enabled = 1`, vs...)
		given = n == 1
		return err
	})
	return given, err
}

// sameTime reports whether a and b are both nil or the same time.
func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}
