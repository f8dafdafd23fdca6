package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"math"
	"strings"
	"time"

	"github.com/weftlabs/weft/checkpoint"
)

// Blob kinds.
const (
	kindEmpty = 0 // the channel has no value at this version
	kindValue = 1 // a whole JSON value that is not an array
	kindArray = 2 // a whole JSON array
	kindLog   = 3 // the first log_len items of log log_id
)

// Special pending-write channels (checkpoint.IsSpecialChannel) get fixed
// negative indexes, as in LangGraph, so that a second write of the same
// task replaces the first. Every special channel must have one: a test
// checks.
var specialIdx = map[string]int64{
	checkpoint.ErrorChannel:     -1,
	checkpoint.ScheduledChannel: -2,
	checkpoint.InterruptChannel: -3,
	checkpoint.ResumeChannel:    -4,
}

// Options tune a Store.
type Options struct {
	// SnapshotEvery is N: every N appends to a log, its last N chunks merge
	// into one chunk a level up. It bounds the rows read for a value to
	// about (N-1) per level. 0 means 32.
	SnapshotEvery int
}

// maxLogDepth bounds how many logs a value's read may pass through: a fork
// of a log is a new log based on the old one, and a fork deeper than this
// is stored whole instead.
const maxLogDepth = 4

// Store implements checkpoint.Driver over a DB.
type Store struct {
	db DB
	d  *Dialect
	n  int
}

// New returns a Store. It does not migrate the schema: call Migrate.
func New(db DB, d *Dialect, opts Options) *Store {
	s := &Store{db: db, d: d, n: opts.SnapshotEvery}
	if s.n <= 1 {
		s.n = 32
	}
	return s
}

// SnapshotEvery returns N, the number of appends after which chunks merge.
func (s *Store) SnapshotEvery() int { return s.n }

// body is a checkpoint without its values, as stored in the body column.
type body struct {
	V  int                         `json:"v"`
	CV map[string]int64            `json:"cv"`
	VS map[string]map[string]int64 `json:"vs"`
	UC *[]string                   `json:"uc,omitempty"`
}

// ref names the blob of a channel at a version when it is not the first
// one stored for that version (see blobs.origin).
type ref struct {
	V int64  `json:"v"`
	O string `json:"o"`
}

func tsToDB(t time.Time) int64 {
	if t.IsZero() {
		return math.MinInt64
	}
	return t.UnixNano()
}

func tsFromDB(n int64) time.Time {
	if n == math.MinInt64 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// corrupt reports a stored row that cannot be decoded.
func corrupt(thread, ns, cpID, what string, err error) error {
	c := checkpoint.Config{ThreadID: thread, Namespace: ns, CheckpointID: cpID}
	if err == nil {
		return fmt.Errorf("%w: %s: %s", checkpoint.ErrCorrupt, c, what)
	}
	return fmt.Errorf("%w: %s: %s: %v", checkpoint.ErrCorrupt, c, what, err)
}

// ---------------------------------------------------------------- Put

// Put implements checkpoint.Driver.
func (s *Store) Put(ctx context.Context, cfg checkpoint.Config, cp *checkpoint.Checkpoint, meta checkpoint.Metadata, blobs []checkpoint.Blob) (checkpoint.Config, error) {
	b := body{V: cp.V, CV: cp.Versions, VS: cp.VersionsSeen}
	if cp.UpdatedChannels != nil {
		uc := cp.UpdatedChannels
		b.UC = &uc
	}
	if b.CV == nil {
		b.CV = map[string]int64{}
	}
	if b.VS == nil {
		b.VS = map[string]map[string]int64{}
	}
	bodyJSON, err := json.Marshal(b)
	if err != nil {
		return checkpoint.Config{}, fmt.Errorf("%w: checkpoint %q: %v", checkpoint.ErrInvalid, cp.ID, err)
	}
	metaJSON, err := json.Marshal(meta)
	if err != nil {
		return checkpoint.Config{}, fmt.Errorf("%w: metadata of checkpoint %q cannot be encoded as JSON: %v", checkpoint.ErrInvalid, cp.ID, err)
	}
	out := checkpoint.Config{ThreadID: cfg.ThreadID, Namespace: cfg.Namespace, CheckpointID: cp.ID}
	err = s.db.Write(ctx, []string{cfg.ThreadID}, func(tx Tx) error {
		p := &putter{s: s, tx: tx, ctx: ctx, thread: cfg.ThreadID, ns: cfg.Namespace, id: cp.ID}
		// Blob references are inherited from the parent, and kept from an
		// earlier Put of the same checkpoint id, for unchanged versions.
		// A fenced write checks its lease in the same query (see fence).
		parentRefs, ownRefs := map[string]ref{}, map[string]ref{}
		query := `SELECT 0, checkpoint_id, refs FROM weft_checkpoints WHERE thread_id = $1 AND ns = $2 AND checkpoint_id IN ($3, $4) AND refs IS NOT NULL`
		args := []any{cfg.ThreadID, cfg.Namespace, cfg.CheckpointID, cp.ID}
		owner, fenced := checkpoint.FenceOwner(ctx, cfg.ThreadID)
		if fenced {
			query = s.fence("$5") + query + ` UNION ALL SELECT 1, '', NULL FROM fence`
			args = append(args, owner)
		}
		held := false
		rows, err := tx.Query(ctx, s.d.q(query), args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var lease int64
			var id string
			var raw []byte
			if err := rows.Scan(&lease, &id, &raw); err != nil {
				rows.Close()
				return err
			}
			if lease == 1 {
				held = true
				continue
			}
			m := parentRefs
			if id == cp.ID {
				m = ownRefs
			}
			if err := json.Unmarshal(raw, &m); err != nil {
				rows.Close()
				return corrupt(cfg.ThreadID, cfg.Namespace, id, "blob references", err)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if fenced && !held {
			return leaseLost(cfg.ThreadID)
		}
		if err := p.loadTaken(blobs); err != nil {
			return err
		}
		refs := map[string]ref{}
		for _, m := range []map[string]ref{parentRefs, ownRefs} {
			for ch, r := range m {
				if cp.Versions[ch] == r.V {
					refs[ch] = r
				}
			}
		}
		for _, bl := range blobs {
			delete(refs, bl.Channel)
			origin, err := p.putBlob(bl, parentRefs)
			if err != nil {
				return err
			}
			if origin != "" {
				refs[bl.Channel] = ref{V: bl.Version, O: origin}
			}
		}
		var refsJSON []byte
		if len(refs) > 0 {
			refsJSON, _ = json.Marshal(refs)
		}
		p.exec(`INSERT INTO weft_checkpoints (thread_id, ns, checkpoint_id, parent_id, ts, fmt, metadata, body, refs)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (thread_id, ns, checkpoint_id) DO UPDATE SET parent_id = excluded.parent_id, ts = excluded.ts, fmt = excluded.fmt,
metadata = excluded.metadata, body = excluded.body, refs = excluded.refs`,
			cfg.ThreadID, cfg.Namespace, cp.ID, nullable(cfg.CheckpointID), tsToDB(cp.TS), formatV1, string(metaJSON), bodyJSON, refsJSON)
		return p.flush()
	})
	if err != nil {
		return checkpoint.Config{}, err
	}
	return out, nil
}

// putter stores the blobs of one checkpoint inside a write transaction.
type putter struct {
	s      *Store
	tx     Tx
	ctx    context.Context
	thread string
	ns     string
	id     string
	// taken holds the channel versions another checkpoint already stored.
	taken map[string]map[int64]bool
	// pending are writes not sent yet: they go together, before the next
	// query or at the end.
	pending []Stmt
}

// exec queues a write.
func (p *putter) exec(query string, args ...any) {
	p.pending = append(p.pending, Stmt{Query: p.s.d.q(query), Args: args})
}

// flush sends the queued writes.
func (p *putter) flush() error {
	if len(p.pending) == 0 {
		return nil
	}
	err := p.tx.ExecBatch(p.ctx, p.pending)
	p.pending = p.pending[:0]
	return err
}

// query sends the queued writes, then runs a query.
func (p *putter) query(query string, args []any, dest ...any) (bool, error) {
	if err := p.flush(); err != nil {
		return false, err
	}
	return queryRow(p.ctx, p.tx, p.s.d.q(query), args, dest...)
}

// loadTaken finds which of the blobs' channel versions are already stored
// without an origin.
func (p *putter) loadTaken(blobs []checkpoint.Blob) error {
	p.taken = map[string]map[int64]bool{}
	if len(blobs) == 0 {
		return nil
	}
	// Each term names the whole primary key, so every database looks each
	// one up in the index instead of scanning the thread's blobs.
	args := []any{p.thread, p.ns}
	var conds []string
	for _, b := range blobs {
		args = append(args, b.Channel, b.Version)
		conds = append(conds, fmt.Sprintf("(thread_id = $1 AND ns = $2 AND channel = $%d AND version = $%d AND origin = '')", len(args)-1, len(args)))
	}
	rows, err := p.tx.Query(p.ctx, p.s.d.q(`SELECT channel, version FROM weft_checkpoint_blobs WHERE `+strings.Join(conds, " OR ")), args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var ch string
		var v int64
		if err := rows.Scan(&ch, &v); err != nil {
			return err
		}
		if p.taken[ch] == nil {
			p.taken[ch] = map[int64]bool{}
		}
		p.taken[ch][v] = true
	}
	return rows.Err()
}

// blobRow is a new row of weft_checkpoint_blobs.
type blobRow struct {
	kind   int
	value  []byte
	logID  int64
	logLen int64
}

// putBlob stores one channel value and returns the origin it was stored
// under: empty, or the checkpoint's id when another value already has the
// version (a fork or replay reusing version numbers).
func (p *putter) putBlob(b checkpoint.Blob, parentRefs map[string]ref) (string, error) {
	var row blobRow
	switch {
	case b.Empty:
		row.kind = kindEmpty
	case b.Value != nil:
		row.kind = kindValue
		if isArray(b.Value) {
			row.kind = kindArray
		}
		row.value = b.Value
	default:
		origin := ""
		if r, ok := parentRefs[b.Channel]; ok && r.V == b.BaseVersion {
			origin = r.O
		}
		var err error
		row, err = p.delta(b, origin)
		if err != nil {
			return "", err
		}
	}
	var logID, logLen any
	if row.kind == kindLog {
		logID, logLen = row.logID, row.logLen
	}
	value, f := encode(row.value)
	origin := ""
	if p.taken[b.Channel][b.Version] {
		// Another branch has this version: store ours under this
		// checkpoint's id.
		origin = p.id
	}
	p.exec(`INSERT INTO weft_checkpoint_blobs (thread_id, ns, channel, version, origin, kind, fmt, value, log_id, log_len)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (thread_id, ns, channel, version, origin) DO UPDATE SET
kind = excluded.kind, fmt = excluded.fmt, value = excluded.value, log_id = excluded.log_id, log_len = excluded.log_len`,
		p.thread, p.ns, b.Channel, b.Version, origin, row.kind, f, value, logID, logLen)
	return origin, nil
}

func isArray(v []byte) bool {
	for _, c := range v {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c == '['
	}
	return false
}

// delta stores appended items on top of the base version and returns the
// blob row that points at the result.
func (p *putter) delta(b checkpoint.Blob, origin string) (blobRow, error) {
	ctx, tx := p.ctx, p.tx
	var kind, logID, logLen, length, appends, depth int64
	found, err := p.query(`SELECT b.kind, COALESCE(b.log_id, 0), COALESCE(b.log_len, 0), COALESCE(l.length, 0), COALESCE(l.appends, 0), COALESCE(l.depth, 0)
FROM weft_checkpoint_blobs b LEFT JOIN weft_checkpoint_logs l
ON l.thread_id = b.thread_id AND l.ns = b.ns AND l.channel = b.channel AND l.log_id = b.log_id
WHERE b.thread_id = $1 AND b.ns = $2 AND b.channel = $3 AND b.version = $4 AND b.origin = $5`,
		[]any{p.thread, p.ns, b.Channel, b.BaseVersion, origin}, &kind, &logID, &logLen, &length, &appends, &depth)
	if err != nil {
		return blobRow{}, err
	}
	cfg := checkpoint.Config{ThreadID: p.thread, Namespace: p.ns, CheckpointID: p.id}
	if !found {
		return blobRow{}, fmt.Errorf("%w: channel %q in %s: appended items are based on version %d, which is not stored", checkpoint.ErrInvalid, b.Channel, cfg, b.BaseVersion)
	}
	items := b.Appended
	switch kind {
	case kindValue:
		return blobRow{}, fmt.Errorf("%w: channel %q in %s: appended items need a JSON array at base version %d, but the value stored there is not an array", checkpoint.ErrInvalid, b.Channel, cfg, b.BaseVersion)
	case kindEmpty:
		return p.newLog(b.Channel, nil, 1, items)
	case kindArray:
		return p.newLog(b.Channel, &ref{V: b.BaseVersion, O: origin}, 1, items)
	case kindLog:
		if len(items) == 0 {
			// Nothing appended: the same log prefix.
			return blobRow{kind: kindLog, logID: logID, logLen: logLen}, nil
		}
		if length == logLen {
			return p.appendLog(b.Channel, logID, logLen, appends, items)
		}
		// The log grew past the base on another branch: fork it.
		if depth+1 > maxLogDepth {
			if err := p.flush(); err != nil {
				return blobRow{}, err
			}
			r := &reader{s: p.s, tx: tx, ctx: ctx, thread: p.thread, ns: p.ns, cpID: p.id}
			base, err := r.log(b.Channel, logID, logLen, 0)
			if err != nil {
				return blobRow{}, err
			}
			v, err := checkpoint.JoinAppended(base, items)
			if err != nil {
				return blobRow{}, err
			}
			return blobRow{kind: kindArray, value: v}, nil
		}
		return p.newLog(b.Channel, &ref{V: b.BaseVersion, O: origin}, depth+1, items)
	}
	return blobRow{}, corrupt(p.thread, p.ns, p.id, fmt.Sprintf("channel %q version %d has unknown kind %d", b.Channel, b.BaseVersion, kind), nil)
}

// newLog starts a log on base (nil: the empty list) with items.
func (p *putter) newLog(ch string, base *ref, depth int64, items []json.RawMessage) (blobRow, error) {
	var id int64
	if _, err := p.query(`SELECT COALESCE(MAX(log_id), 0) + 1 FROM weft_checkpoint_logs WHERE thread_id = $1 AND ns = $2 AND channel = $3`,
		[]any{p.thread, p.ns, ch}, &id); err != nil {
		return blobRow{}, err
	}
	var bv, bo any
	if base != nil {
		bv, bo = base.V, base.O
	}
	appends := int64(0)
	if len(items) > 0 {
		appends = 1
	}
	p.exec(`INSERT INTO weft_checkpoint_logs (thread_id, ns, channel, log_id, base_version, base_origin, length, appends, depth)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, p.thread, p.ns, ch, id, bv, bo, int64(len(items)), appends, depth)
	if len(items) > 0 {
		p.insertChunk(ch, id, 0, 0, items)
	}
	return blobRow{kind: kindLog, logID: id, logLen: int64(len(items))}, nil
}

func (p *putter) insertChunk(ch string, logID, start int64, level int, items []json.RawMessage) {
	data, sizes := encodeChunk(items)
	p.writeChunk(ch, logID, start, int64(len(items)), level, data, sizes)
}

func (p *putter) writeChunk(ch string, logID, start, count int64, level int, data, sizes []byte) {
	stored, f := encode(data)
	p.exec(`INSERT INTO weft_checkpoint_chunks (thread_id, ns, channel, log_id, start, count, level, fmt, items, sizes)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, p.thread, p.ns, ch, logID, start, count, level, f, stored, sizes)
}

// appendLog adds items at the end of a log and merges chunks when the
// number of appends reaches a multiple of N, N², ...
func (p *putter) appendLog(ch string, logID, length, appends int64, items []json.RawMessage) (blobRow, error) {
	p.insertChunk(ch, logID, length, 0, items)
	newLen := length + int64(len(items))
	appends++
	p.exec(`UPDATE weft_checkpoint_logs SET length = $1, appends = $2 WHERE thread_id = $3 AND ns = $4 AND channel = $5 AND log_id = $6`,
		newLen, appends, p.thread, p.ns, ch, logID)
	span := int64(1)
	for level := 1; ; level++ {
		if span > appends/int64(p.s.n) {
			break
		}
		span *= int64(p.s.n)
		if appends%span != 0 {
			break
		}
		if err := p.merge(ch, logID, level); err != nil {
			return blobRow{}, err
		}
	}
	return blobRow{kind: kindLog, logID: logID, logLen: newLen}, nil
}

// merge replaces the last N chunks of level-1 with one chunk of level.
func (p *putter) merge(ch string, logID int64, level int) error {
	if err := p.flush(); err != nil {
		return err
	}
	ctx, tx, q := p.ctx, p.tx, p.s.d.q
	rows, err := tx.Query(ctx, q(`SELECT start, count, fmt, items, sizes FROM weft_checkpoint_chunks
WHERE thread_id = $1 AND ns = $2 AND channel = $3 AND log_id = $4 AND level = $5 ORDER BY start DESC LIMIT $6`),
		p.thread, p.ns, ch, logID, level-1, int64(p.s.n))
	if err != nil {
		return err
	}
	var cs []chunk
	for rows.Next() {
		var c chunk
		if err := rows.Scan(&c.start, &c.count, &c.fmt, &c.items, &c.sizes); err != nil {
			rows.Close()
			return err
		}
		cs = append(cs, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if len(cs) != p.s.n {
		return nil
	}
	// Oldest first, and contiguous; otherwise leave the chunks alone.
	for i, j := 0, len(cs)-1; i < j; i, j = i+1, j-1 {
		cs[i], cs[j] = cs[j], cs[i]
	}
	var data, sizes []byte
	total := int64(0)
	for i, c := range cs {
		if i > 0 && cs[i-1].start+cs[i-1].count != c.start {
			return nil
		}
		items, err := decode(c.items, c.fmt)
		if err != nil {
			return corrupt(p.thread, p.ns, p.id, fmt.Sprintf("channel %q log %d chunk at %d", ch, logID, c.start), err)
		}
		if len(items) > 0 && len(data) > 0 {
			data = append(data, ',')
		}
		data = append(data, items...)
		sizes = append(sizes, c.sizes...)
		total += c.count
	}
	p.exec(`DELETE FROM weft_checkpoint_chunks WHERE thread_id = $1 AND ns = $2 AND channel = $3 AND log_id = $4 AND level = $5 AND start >= $6`,
		p.thread, p.ns, ch, logID, level-1, cs[0].start)
	p.writeChunk(ch, logID, cs[0].start, total, level, data, sizes)
	return nil
}

// ---------------------------------------------------------------- PutWrites

// PutWrites implements checkpoint.Driver.
func (s *Store) PutWrites(ctx context.Context, cfg checkpoint.Config, taskID string, writes []checkpoint.PendingWrite) error {
	return s.db.Write(ctx, []string{cfg.ThreadID}, func(tx Tx) error {
		var hasRegular bool
		args := []any{cfg.ThreadID, cfg.Namespace, cfg.CheckpointID, taskID}
		if owner, fenced := checkpoint.FenceOwner(ctx, cfg.ThreadID); fenced {
			// The lease check rides on the same query (see fence).
			var held, regular int64
			if _, err := queryRow(ctx, tx, s.d.q(s.fence("$5")+`SELECT (SELECT COUNT(*) FROM fence), CASE WHEN EXISTS (SELECT 1 FROM weft_checkpoint_writes
WHERE thread_id = $1 AND ns = $2 AND checkpoint_id = $3 AND task_id = $4 AND idx >= 0) THEN 1 ELSE 0 END`), append(args, owner), &held, &regular); err != nil {
				return err
			}
			if held == 0 {
				return leaseLost(cfg.ThreadID)
			}
			hasRegular = regular == 1
		} else {
			var one int64
			var err error
			hasRegular, err = queryRow(ctx, tx, s.d.q(`SELECT 1 FROM weft_checkpoint_writes WHERE thread_id = $1 AND ns = $2 AND checkpoint_id = $3 AND task_id = $4 AND idx >= 0 LIMIT 1`),
				args, &one)
			if err != nil {
				return err
			}
		}
		insert := s.d.q(`INSERT INTO weft_checkpoint_writes (thread_id, ns, checkpoint_id, task_id, idx, channel, fmt, value)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (thread_id, ns, checkpoint_id, task_id, idx) DO `)
		// One batch: one round trip in PostgreSQL, whatever the number of
		// writes.
		stmts := make([]Stmt, 0, len(writes))
		idx := int64(0)
		for _, w := range writes {
			value, f := encode(w.Value)
			if checkpoint.IsSpecialChannel(w.Channel) {
				// Special channels replace an earlier write of the task.
				stmts = append(stmts, Stmt{insert + "UPDATE SET channel = excluded.channel, fmt = excluded.fmt, value = excluded.value",
					[]any{cfg.ThreadID, cfg.Namespace, cfg.CheckpointID, taskID, specialIdx[w.Channel], w.Channel, f, value}})
				continue
			}
			// A task's regular writes are stored once: a task run again
			// after a resume must not double them.
			if hasRegular {
				continue
			}
			stmts = append(stmts, Stmt{insert + "NOTHING",
				[]any{cfg.ThreadID, cfg.Namespace, cfg.CheckpointID, taskID, idx, w.Channel, f, value}})
			idx++
		}
		if len(stmts) == 0 {
			return nil
		}
		return tx.ExecBatch(ctx, stmts)
	})
}

// ---------------------------------------------------------------- reads

// cpRow is a row of weft_checkpoints.
type cpRow struct {
	ns, id, parent string
	ts             int64
	fmt            int64
	meta, body     []byte
	refs           []byte
}

const cpColumns = `ns, checkpoint_id, COALESCE(parent_id, ''), ts, fmt, metadata, body, refs`

func scanCP(rows Rows) (cpRow, error) {
	var r cpRow
	var meta string
	err := rows.Scan(&r.ns, &r.id, &r.parent, &r.ts, &r.fmt, &meta, &r.body, &r.refs)
	r.meta = []byte(meta)
	return r, err
}

// Get implements checkpoint.Driver.
func (s *Store) Get(ctx context.Context, cfg checkpoint.Config) (*checkpoint.Tuple, error) {
	var tp *checkpoint.Tuple
	err := s.db.Read(ctx, func(tx Tx) error {
		var query string
		args := []any{cfg.ThreadID, cfg.Namespace}
		if cfg.CheckpointID == "" {
			query = `SELECT ` + cpColumns + ` FROM weft_checkpoints WHERE thread_id = $1 AND ns = $2 ORDER BY checkpoint_id DESC LIMIT 1`
		} else {
			query = `SELECT ` + cpColumns + ` FROM weft_checkpoints WHERE thread_id = $1 AND ns = $2 AND checkpoint_id = $3`
			args = append(args, cfg.CheckpointID)
		}
		rows, err := tx.Query(ctx, s.d.q(query), args...)
		if err != nil {
			return err
		}
		var row cpRow
		found := rows.Next()
		if found {
			row, err = scanCP(rows)
		}
		rows.Close()
		if err != nil {
			return err
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if !found {
			return nil
		}
		meta, err := decodeMeta(cfg.ThreadID, row)
		if err != nil {
			return err
		}
		tp, err = s.tuple(ctx, tx, cfg.ThreadID, row, meta)
		return err
	})
	return tp, err
}

func decodeMeta(thread string, row cpRow) (checkpoint.Metadata, error) {
	var meta checkpoint.Metadata
	if row.fmt != formatV1 {
		return meta, corrupt(thread, row.ns, row.id, fmt.Sprintf("checkpoint row has format version %d; this build reads %d", row.fmt, formatV1), nil)
	}
	if err := json.Unmarshal(row.meta, &meta); err != nil {
		return meta, corrupt(thread, row.ns, row.id, "metadata", err)
	}
	return meta, nil
}

// tuple assembles a checkpoint with its values and pending writes.
func (s *Store) tuple(ctx context.Context, tx Tx, thread string, row cpRow, meta checkpoint.Metadata) (*checkpoint.Tuple, error) {
	var b body
	if err := json.Unmarshal(row.body, &b); err != nil {
		return nil, corrupt(thread, row.ns, row.id, "checkpoint body", err)
	}
	refs := map[string]ref{}
	if len(row.refs) > 0 {
		if err := json.Unmarshal(row.refs, &refs); err != nil {
			return nil, corrupt(thread, row.ns, row.id, "blob references", err)
		}
	}
	cp := &checkpoint.Checkpoint{
		V:            b.V,
		ID:           row.id,
		TS:           tsFromDB(row.ts),
		Values:       make(map[string]json.RawMessage, len(b.CV)),
		Versions:     b.CV,
		VersionsSeen: b.VS,
	}
	if b.UC != nil {
		cp.UpdatedChannels = *b.UC
		if cp.UpdatedChannels == nil {
			cp.UpdatedChannels = []string{}
		}
	}
	r := &reader{s: s, tx: tx, ctx: ctx, thread: thread, ns: row.ns, cpID: row.id}
	for ch, v := range b.CV {
		origin := ""
		if rf, ok := refs[ch]; ok && rf.V == v {
			origin = rf.O
		}
		val, ok, err := r.value(ch, v, origin, 0)
		if err != nil {
			return nil, err
		}
		if ok {
			cp.Values[ch] = val
		}
	}
	tp := &checkpoint.Tuple{
		Config:     checkpoint.Config{ThreadID: thread, Namespace: row.ns, CheckpointID: row.id},
		Checkpoint: cp,
		Metadata:   meta,
	}
	if row.parent != "" {
		tp.Parent = &checkpoint.Config{ThreadID: thread, Namespace: row.ns, CheckpointID: row.parent}
	}
	rows, err := tx.Query(ctx, s.d.q(`SELECT task_id, channel, fmt, value FROM weft_checkpoint_writes
WHERE thread_id = $1 AND ns = $2 AND checkpoint_id = $3 ORDER BY `+s.d.WritesOrder), thread, row.ns, row.id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var w checkpoint.PendingWrite
		var f int64
		var v []byte
		if err := rows.Scan(&w.TaskID, &w.Channel, &f, &v); err != nil {
			return nil, err
		}
		if v != nil {
			if v, err = decode(v, f); err != nil {
				return nil, corrupt(thread, row.ns, row.id, fmt.Sprintf("pending write of task %s to channel %q", w.TaskID, w.Channel), err)
			}
			if !json.Valid(v) {
				return nil, corrupt(thread, row.ns, row.id, fmt.Sprintf("pending write of task %s to channel %q is not valid JSON", w.TaskID, w.Channel), nil)
			}
			w.Value = v
		}
		tp.PendingWrites = append(tp.PendingWrites, w)
	}
	return tp, rows.Err()
}

// reader reads channel values for one checkpoint.
type reader struct {
	s      *Store
	tx     Tx
	ctx    context.Context
	thread string
	ns     string
	cpID   string
}

func (r *reader) bad(ch string, format string, args ...any) error {
	return corrupt(r.thread, r.ns, r.cpID, fmt.Sprintf("channel %q: ", ch)+fmt.Sprintf(format, args...), nil)
}

// value reads channel ch at version ver; ok is false when the channel has
// no value there.
func (r *reader) value(ch string, ver int64, origin string, depth int) (json.RawMessage, bool, error) {
	if depth > maxLogDepth+1 {
		return nil, false, r.bad(ch, "log bases nest deeper than %d", maxLogDepth)
	}
	var kind, f, logID, logLen int64
	var v []byte
	found, err := queryRow(r.ctx, r.tx, r.s.d.q(`SELECT kind, fmt, value, COALESCE(log_id, 0), COALESCE(log_len, 0) FROM weft_checkpoint_blobs
WHERE thread_id = $1 AND ns = $2 AND channel = $3 AND version = $4 AND origin = $5`),
		[]any{r.thread, r.ns, ch, ver, origin}, &kind, &f, &v, &logID, &logLen)
	if err != nil || !found {
		return nil, false, err
	}
	if v != nil {
		if v, err = decode(v, f); err != nil {
			return nil, false, r.bad(ch, "value at version %d: %v", ver, err)
		}
	}
	switch kind {
	case kindEmpty:
		return nil, false, nil
	case kindValue, kindArray:
		if !json.Valid(v) {
			return nil, false, r.bad(ch, "value at version %d is not valid JSON", ver)
		}
		return v, true, nil
	case kindLog:
		val, err := r.log(ch, logID, logLen, depth)
		if err != nil {
			return nil, false, err
		}
		if depth == 0 && !json.Valid(val) {
			return nil, false, r.bad(ch, "value at version %d (log %d) is not valid JSON", ver, logID)
		}
		return val, true, nil
	}
	return nil, false, r.bad(ch, "value at version %d has unknown kind %d", ver, kind)
}

// log reads the first n items of a log, on top of its base.
func (r *reader) log(ch string, logID, n int64, depth int) (json.RawMessage, error) {
	var bv, length int64
	var bo string
	var hasBase bool
	found, err := queryRow(r.ctx, r.tx, r.s.d.q(`SELECT base_version IS NOT NULL, COALESCE(base_version, 0), COALESCE(base_origin, ''), length FROM weft_checkpoint_logs
WHERE thread_id = $1 AND ns = $2 AND channel = $3 AND log_id = $4`),
		[]any{r.thread, r.ns, ch, logID}, &hasBase, &bv, &bo, &length)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, r.bad(ch, "log %d is missing", logID)
	}
	if n > length {
		return nil, r.bad(ch, "log %d has %d items, %d wanted", logID, length, n)
	}
	var base json.RawMessage
	if hasBase {
		v, ok, err := r.value(ch, bv, bo, depth+1)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, r.bad(ch, "log %d is based on version %d, which has no stored value", logID, bv)
		}
		base = v
	}
	rows, err := r.tx.Query(r.ctx, r.s.d.q(`SELECT start, count, fmt, items, sizes FROM weft_checkpoint_chunks
WHERE thread_id = $1 AND ns = $2 AND channel = $3 AND log_id = $4 AND start < $5 ORDER BY start`),
		r.thread, r.ns, ch, logID, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var parts [][]byte
	next := int64(0)
	for rows.Next() {
		var c chunk
		if err := rows.Scan(&c.start, &c.count, &c.fmt, &c.items, &c.sizes); err != nil {
			return nil, err
		}
		if c.items, err = decode(c.items, c.fmt); err != nil {
			return nil, r.bad(ch, "log %d chunk at %d: %v", logID, c.start, err)
		}
		if c.start != next {
			return nil, r.bad(ch, "log %d has a gap: chunk at %d, expected %d", logID, c.start, next)
		}
		data, err := c.prefix(min(c.count, n-c.start))
		if err != nil {
			return nil, r.bad(ch, "log %d chunk at %d: %v", logID, c.start, err)
		}
		parts = append(parts, data)
		next = c.start + c.count
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if next < n {
		return nil, r.bad(ch, "log %d ends at item %d, %d wanted", logID, next, n)
	}
	v, err := joinParts(base, parts)
	if err != nil {
		// The base is stored data: one that is not an array is damage.
		return nil, r.bad(ch, "log %d: %v", logID, err)
	}
	return v, nil
}

// joinParts appends comma-separated item lists to a JSON array (nil: the
// empty list), as checkpoint.JoinAppended joins items, so every backend
// returns the same bytes.
func joinParts(base json.RawMessage, parts [][]byte) (json.RawMessage, error) {
	items := make([]json.RawMessage, 0, len(parts))
	for _, p := range parts {
		if len(p) > 0 {
			items = append(items, p)
		}
	}
	return checkpoint.JoinAppended(base, items)
}

// List implements checkpoint.Driver. It reads a page of checkpoints at a
// time, so a caller may write to the saver while it iterates.
func (s *Store) List(ctx context.Context, threadID string, opts checkpoint.ListOptions) iter.Seq2[*checkpoint.Tuple, error] {
	return func(yield func(*checkpoint.Tuple, error) bool) {
		const page = 32
		count := 0
		var afterID, afterNS string
		more := true
		for more {
			var out []*checkpoint.Tuple
			err := s.db.Read(ctx, func(tx Tx) error {
				query := `SELECT ` + cpColumns + ` FROM weft_checkpoints WHERE thread_id = $1`
				args := []any{threadID}
				if opts.Namespace != nil {
					args = append(args, *opts.Namespace)
					query += fmt.Sprintf(` AND ns = $%d`, len(args))
				}
				if opts.Before != "" {
					args = append(args, opts.Before)
					query += fmt.Sprintf(` AND checkpoint_id < $%d`, len(args))
				}
				if afterID != "" {
					args = append(args, afterID, afterNS)
					query += fmt.Sprintf(` AND (checkpoint_id < $%d OR (checkpoint_id = $%d AND ns < $%d))`, len(args)-1, len(args)-1, len(args))
				}
				query += fmt.Sprintf(` ORDER BY checkpoint_id DESC, ns DESC LIMIT %d`, page)
				rows, err := tx.Query(ctx, s.d.q(query), args...)
				if err != nil {
					return err
				}
				var cps []cpRow
				for rows.Next() {
					row, err := scanCP(rows)
					if err != nil {
						rows.Close()
						return err
					}
					cps = append(cps, row)
				}
				rows.Close()
				if err := rows.Err(); err != nil {
					return err
				}
				more = len(cps) == page
				for _, row := range cps {
					afterID, afterNS = row.id, row.ns
					meta, err := decodeMeta(threadID, row)
					if err != nil {
						return err
					}
					if !checkpoint.MatchMetadata(meta, opts.Filter) {
						continue
					}
					tp, err := s.tuple(ctx, tx, threadID, row, meta)
					if err != nil {
						return err
					}
					out = append(out, tp)
					if opts.Limit > 0 && count+len(out) >= opts.Limit {
						more = false
						break
					}
				}
				return nil
			})
			if err != nil {
				yield(nil, err)
				return
			}
			for _, tp := range out {
				if !yield(tp, nil) {
					return
				}
				count++
			}
		}
	}
}
