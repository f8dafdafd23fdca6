package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"maps"
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
	// SnapshotEvery is N: every N appends to a log, its open tail is
	// sealed into one chunk (see appendLog). A read of n items of a log
	// reads about n/N chunks and at most N-1 tail slots. 0 means 32.
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

// SnapshotEvery returns N, the number of appends after which a log's tail
// is sealed into a chunk.
func (s *Store) SnapshotEvery() int { return s.n }

// body is a checkpoint without its values, as stored in the body column.
type body struct {
	V  int                         `json:"v"`
	CV map[string]int64            `json:"cv"`
	VS map[string]map[string]int64 `json:"vs"`
	UC *[]string                   `json:"uc,omitempty"`
}

// slotMax is the most bytes (stored items and sizes) an append may take
// in a tail slot; a larger one seals the tail. It keeps a slot row of
// PostgreSQL below the size at which it would move to TOAST, where an
// overwrite leaves a dead copy until vacuum.
const slotMax = 1536

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
	bodyJSON, err := appendBody(nil, b)
	if err != nil {
		return checkpoint.Config{}, fmt.Errorf("%w: checkpoint %q: %v", checkpoint.ErrInvalid, cp.ID, err)
	}
	metaJSON, err := marshalMeta(meta)
	if err != nil {
		return checkpoint.Config{}, fmt.Errorf("%w: metadata of checkpoint %q cannot be encoded as JSON: %v", checkpoint.ErrInvalid, cp.ID, err)
	}
	out := checkpoint.Config{ThreadID: cfg.ThreadID, Namespace: cfg.Namespace, CheckpointID: cp.ID}
	err = s.write(ctx, []string{cfg.ThreadID}, func(tx Tx, bt *batch) error {
		p := &putter{s: s, tx: tx, ctx: ctx, thread: cfg.ThreadID, ns: cfg.Namespace, id: cp.ID}
		// Entries (see refs.go) are inherited from the parent, and kept
		// from an earlier Put of the same checkpoint id, for unchanged
		// versions. A fenced write checks its lease in the same query
		// (see fence), unless its batch already did. An unfenced write
		// whose parent's entries are known (it has none, or its batch
		// wrote it) needs no query: its insert tells whether the
		// checkpoint was stored before (see below). A checkpoint naming
		// itself as parent is not one of those: the query finds its
		// entries as its own, none as its parent's, as outside a batch.
		parentRefs, ownRefs := map[string]ref{}, map[string]ref{}
		owner, fenced := bt.fenceOwner(ctx, cfg.ThreadID)
		known := false
		if !fenced {
			if cfg.CheckpointID == "" {
				known = true
			} else if raw, ok := bt.refsOf(cfg.Namespace, cfg.CheckpointID); ok && cfg.CheckpointID != cp.ID {
				m, err := decodeRefs(cfg.ThreadID, cfg.Namespace, cfg.CheckpointID, raw)
				if err != nil {
					return err
				}
				parentRefs, known = m, true
			}
		}
		if !known {
			// Which of the blob rows to store are taken is asked in the
			// same query, so that their inserts need no answer of their
			// own (loadTaken, putValue) and go with the checkpoint's.
			// (When the parent's entries are known, the probing insert
			// of putValue and the checkpoint's insert are two statements
			// where this query and the upserts would be three.)
			var taken []checkpoint.Blob
			for _, bl := range blobs {
				if mayNeedRow(bl) {
					taken = append(taken, bl)
				}
			}
			query := `SELECT 0, checkpoint_id, refs, 0 FROM weft_checkpoints WHERE thread_id = $1 AND ns = $2 AND checkpoint_id IN ($3, $4) AND refs IS NOT NULL`
			args := []any{cfg.ThreadID, cfg.Namespace, cfg.CheckpointID, cp.ID}
			if fenced {
				query = s.fence("$5") + query + ` UNION ALL SELECT 1, '', NULL, 0 FROM fence`
				args = append(args, owner)
			}
			if len(taken) > 0 {
				var conds string
				conds, args = p.takenTerms(taken, args)
				query += ` UNION ALL SELECT 2, channel, NULL, version FROM weft_checkpoint_blobs WHERE ` + conds
			}
			held := false
			rows, err := tx.Query(ctx, s.d.q(query), args...)
			if err != nil {
				return err
			}
			for rows.Next() {
				var lease, version int64
				var id string
				var raw []byte
				if err := rows.Scan(&lease, &id, &raw, &version); err != nil {
					rows.Close()
					return err
				}
				if lease == 1 {
					held = true
					continue
				}
				if lease == 2 {
					p.markTaken(id, version)
					continue
				}
				m, err := decodeRefs(cfg.ThreadID, cfg.Namespace, id, raw)
				if err != nil {
					rows.Close()
					return err
				}
				if id == cp.ID {
					ownRefs = m
				} else {
					parentRefs = m
				}
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			if fenced {
				if !held {
					return leaseLost(cfg.ThreadID)
				}
				bt.checked(cfg.ThreadID, owner)
			}
		}
		// Where the checkpoint's insert is to be answered (below), a
		// probing insert of a blob row goes in the same round trip.
		p.deferProbe = known
		if err := p.loadTaken(blobs); err != nil {
			return err
		}
		kept := map[string]ref{}
		for _, bl := range blobs {
			r, keep, err := p.putBlob(bl, parentRefs)
			if err != nil {
				return err
			}
			if keep {
				kept[bl.Channel] = r
			}
		}
		entries := func(ownRefs map[string]ref) []byte {
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
				if r, ok := kept[bl.Channel]; ok {
					refs[bl.Channel] = r
				}
			}
			return encodeRefs(refs)
		}
		refsJSON := entries(ownRefs)
		row := []any{cfg.ThreadID, cfg.Namespace, cp.ID, nullable(cfg.CheckpointID), tsToDB(cp.TS), formatV1, string(metaJSON), bodyJSON}
		const insert = `INSERT INTO weft_checkpoints (thread_id, ns, checkpoint_id, parent_id, ts, fmt, metadata, body, refs)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (thread_id, ns, checkpoint_id) DO `
		if known {
			// Stored unless the checkpoint was stored before; then its
			// entries count too, as above, and it is updated.
			if err := p.flush(); err != nil {
				return err
			}
			stmts := []Stmt{{Query: s.d.q(insert + `NOTHING`), Args: append(row, refsJSON)}}
			d := p.deferred
			if d != nil {
				stmts = append([]Stmt{{Query: s.d.q(probeSQL), Args: []any{p.thread, p.ns, d.ch, d.version, d.kind, d.f, d.value}}}, stmts...)
			}
			ns, err := execAll(ctx, tx, stmts)
			if err != nil {
				return err
			}
			n := ns[len(ns)-1]
			if d != nil && ns[0] == 0 {
				// The version was taken: the value goes under this
				// checkpoint's id, which its entries then name.
				p.exec(upsertBlobSQL, p.thread, p.ns, d.ch, d.version, p.id, d.kind, d.f, d.value)
				kept[d.ch] = ref{V: d.version, Kind: refBlob, O: p.id}
				refsJSON = entries(ownRefs)
				if n == 1 {
					p.exec(`UPDATE weft_checkpoints SET refs = $4 WHERE thread_id = $1 AND ns = $2 AND checkpoint_id = $3`, cfg.ThreadID, cfg.Namespace, cp.ID, refsJSON)
				}
			}
			if n == 0 {
				var raw []byte
				if _, err := queryRow(ctx, tx, s.d.q(`SELECT refs FROM weft_checkpoints WHERE thread_id = $1 AND ns = $2 AND checkpoint_id = $3 AND refs IS NOT NULL`),
					[]any{cfg.ThreadID, cfg.Namespace, cp.ID}, &raw); err != nil {
					return err
				}
				if raw != nil {
					if ownRefs, err = decodeRefs(cfg.ThreadID, cfg.Namespace, cp.ID, raw); err != nil {
						return err
					}
				}
				refsJSON = entries(ownRefs)
				if _, err := tx.Exec(ctx, s.d.q(`UPDATE weft_checkpoints SET parent_id = $4, ts = $5, fmt = $6, metadata = $7, body = $8, refs = $9
WHERE thread_id = $1 AND ns = $2 AND checkpoint_id = $3`), append(row, refsJSON)...); err != nil {
					return err
				}
			}
			bt.remember(cfg.Namespace, cp.ID, refsJSON)
			return p.flush()
		}
		p.exec(insert+`UPDATE SET parent_id = excluded.parent_id, ts = excluded.ts, fmt = excluded.fmt,
metadata = excluded.metadata, body = excluded.body, refs = excluded.refs`, append(row, refsJSON)...)
		bt.remember(cfg.Namespace, cp.ID, refsJSON)
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
	// taken holds the channel versions another checkpoint already stored
	// in a blob row of origin "", among those asked about.
	taken map[string]map[int64]bool
	// asked holds the channel versions whose takenness Put's first query
	// asked already.
	asked map[probeKey]bool
	// nextLog holds, by channel, the next free log id when a query of
	// this putter read it (nextLogSQL).
	nextLog map[string]int64
	// deferProbe leaves the probing insert of a blob row (putValue) to
	// be sent with the checkpoint's insert, as deferred.
	deferProbe bool
	deferred   *deferredBlob
	// probe, when probing, is the one channel version loadTaken did not
	// ask about: putValue's insert finds out whether it is taken.
	probe   probeKey
	probing bool
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

// probeKey is a channel version.
type probeKey struct {
	ch string
	v  int64
}

// mayNeedRow reports whether a blob may be stored in a blob row: a whole
// value too large to keep inline. Appended items go to a log, except when
// a fork nests too deep (delta checks that case itself).
func mayNeedRow(b checkpoint.Blob) bool {
	return !b.Empty && b.Value != nil && len(b.Value) > inlineMax
}

// loadTaken finds which of the blobs' channel versions are already stored
// without an origin, for the blobs that may need a row. Most checkpoints
// have none (triggers, small values and appends are kept inline), and so
// cost no query here.
func (p *putter) loadTaken(blobs []checkpoint.Blob) error {
	args := []any{p.thread, p.ns}
	var conds []string
	for _, b := range blobs {
		if !mayNeedRow(b) || p.asked[probeKey{b.Channel, b.Version}] {
			continue
		}
		var cond string
		cond, args = takenTerm(b, args)
		conds = append(conds, cond)
	}
	if len(conds) == 0 {
		return nil
	}
	if len(conds) == 1 && !p.probing {
		// One row to store (the usual case): its insert tells whether
		// the version is taken, one statement instead of a query and an
		// insert (see putValue).
		p.probe, p.probing = probeKey{args[2].(string), args[3].(int64)}, true
		return nil
	}
	if err := p.flush(); err != nil {
		return err
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
		p.markTaken(ch, v)
	}
	return rows.Err()
}

// takenTerms returns the condition that selects, among blobs, those whose
// channel version is stored without an origin, in a query of the thread
// ($1) and namespace ($2) whose arguments are args, and args with the
// condition's; the blobs count as asked (loadTaken).
func (p *putter) takenTerms(blobs []checkpoint.Blob, args []any) (string, []any) {
	if p.asked == nil {
		p.asked = map[probeKey]bool{}
	}
	conds := make([]string, len(blobs))
	for i, b := range blobs {
		conds[i], args = takenTerm(b, args)
		p.asked[probeKey{b.Channel, b.Version}] = true
	}
	return strings.Join(conds, " OR "), args
}

// takenTerm returns the condition that selects b's channel version stored
// without an origin, in a query of the thread ($1) and namespace ($2)
// whose arguments are args, and args with the condition's. It names the
// whole primary key, so every database looks it up in the index instead
// of scanning the thread's blobs.
func takenTerm(b checkpoint.Blob, args []any) (string, []any) {
	args = append(args, b.Channel, b.Version)
	return fmt.Sprintf("(thread_id = $1 AND ns = $2 AND channel = $%d AND version = $%d AND origin = '')", len(args)-1, len(args)), args
}

// markTaken records that channel ch's version v is stored without an
// origin.
func (p *putter) markTaken(ch string, v int64) {
	if p.taken == nil {
		p.taken = map[string]map[int64]bool{}
	}
	if p.taken[ch] == nil {
		p.taken[ch] = map[int64]bool{}
	}
	p.taken[ch][v] = true
}

// putBlob stores one channel value and returns the checkpoint's entry for
// it, and whether the entry must be kept: an inline value, or a blob row
// stored under the checkpoint's id because another value already has the
// version (a fork or replay reusing version numbers).
func (p *putter) putBlob(b checkpoint.Blob, parentRefs map[string]ref) (ref, bool, error) {
	switch {
	case b.Empty:
		return ref{V: b.Version, Kind: refEmpty}, true, nil
	case b.Value != nil:
		return p.putValue(b.Channel, b.Version, b.Value)
	}
	r, err := p.delta(b, parentRefs)
	if err != nil {
		return ref{}, false, err
	}
	r.V = b.Version
	if r.Kind == refValue && len(r.J) > inlineMax {
		// A fork too deep to log: the whole list, in a row.
		if err := p.loadTaken([]checkpoint.Blob{{Channel: b.Channel, Version: b.Version, Value: r.J}}); err != nil {
			return ref{}, false, err
		}
		return p.putValue(b.Channel, b.Version, r.J)
	}
	return r, true, nil
}

// putValue stores a whole value: inline when small, else in a blob row.
func (p *putter) putValue(ch string, version int64, v json.RawMessage) (ref, bool, error) {
	if len(v) <= inlineMax {
		// Kept in the refs column's JSON, so it must be JSON: the Saver
		// checked only its shape.
		if !json.Valid(v) {
			return ref{}, false, fmt.Errorf("%w: the value of channel %q at version %d is not valid JSON: %q", checkpoint.ErrInvalid, ch, version, v)
		}
		return ref{V: version, Kind: refValue, J: v}, true, nil
	}
	kind := kindValue
	if isArray(v) {
		kind = kindArray
	}
	value, f := encode(v)
	origin := ""
	if p.probing && p.probe == (probeKey{ch, version}) {
		p.probing = false
		if p.deferProbe && p.deferred == nil {
			// Sent with the checkpoint's insert, which fixes up its
			// entries if the version was taken.
			p.deferred = &deferredBlob{ch: ch, version: version, kind: kind, f: f, value: value}
			return ref{V: version, Kind: refBlob}, false, nil
		}
		if err := p.flush(); err != nil {
			return ref{}, false, err
		}
		n, err := p.tx.Exec(p.ctx, p.s.d.q(probeSQL), p.thread, p.ns, ch, version, kind, f, value)
		if err != nil {
			return ref{}, false, err
		}
		if n == 1 {
			return ref{V: version, Kind: refBlob}, false, nil
		}
		// Taken: stored below under this checkpoint's id.
		origin = p.id
	} else if p.taken[ch][version] {
		// Another branch has this version: store ours under this
		// checkpoint's id.
		origin = p.id
	}
	p.exec(upsertBlobSQL, p.thread, p.ns, ch, version, origin, kind, f, value)
	return ref{V: version, Kind: refBlob, O: origin}, origin != "", nil
}

// probeSQL stores a channel version's blob row of origin "" unless it is
// taken: its count of rows says which.
const probeSQL = `INSERT INTO weft_checkpoint_blobs (thread_id, ns, channel, version, origin, kind, fmt, value, log_id, log_len)
VALUES ($1, $2, $3, $4, '', $5, $6, $7, NULL, NULL) ON CONFLICT (thread_id, ns, channel, version, origin) DO NOTHING`

// upsertBlobSQL stores a blob row.
const upsertBlobSQL = `INSERT INTO weft_checkpoint_blobs (thread_id, ns, channel, version, origin, kind, fmt, value, log_id, log_len)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULL, NULL) ON CONFLICT (thread_id, ns, channel, version, origin) DO UPDATE SET
kind = excluded.kind, fmt = excluded.fmt, value = excluded.value, log_id = excluded.log_id, log_len = excluded.log_len`

// deferredBlob is a probing insert of a blob row (probeSQL) left for the
// checkpoint's insert to send.
type deferredBlob struct {
	ch      string
	version int64
	kind, f any
	value   []byte
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

// logState is a row of weft_checkpoint_logs.
type logState struct {
	id, length, appends, depth int64
	// sealed is where the open tail starts: items before it are in
	// weft_checkpoint_chunks, the tail's in weft_checkpoint_tails, one row
	// for each of its tail appends.
	sealed, tail int64
}

const logCols = `l.length, l.appends, l.depth, l.sealed, l.tail`

// delta stores appended items on top of the base version and returns the
// entry that points at the result: a log prefix, or, for a fork nested too
// deep, the whole value.
func (p *putter) delta(b checkpoint.Blob, parentRefs map[string]ref) (ref, error) {
	cfg := checkpoint.Config{ThreadID: p.thread, Namespace: p.ns, CheckpointID: p.id}
	items := b.Appended
	var kind int64
	var lg logState
	var logLen int64
	baseRef := ref{V: b.BaseVersion, Kind: refBlob}
	if r, ok := parentRefs[b.Channel]; ok && r.V == b.BaseVersion {
		baseRef = r
	}
	switch baseRef.Kind {
	case refEmpty:
		return p.newLog(b.Channel, nil, 1, items)
	case refValue:
		var base []json.RawMessage
		if err := json.Unmarshal(baseRef.J, &base); err != nil || !isArray(baseRef.J) {
			return ref{}, fmt.Errorf("%w: channel %q in %s: appended items need a JSON array at base version %d, but the value stored there is not an array", checkpoint.ErrInvalid, b.Channel, cfg, b.BaseVersion)
		}
		// A small list: the log starts with its items.
		return p.newLog(b.Channel, nil, 1, append(base, items...))
	case refLog:
		kind, lg.id, logLen = kindLog, baseRef.L, baseRef.N
		var next int64
		found, err := p.query(`SELECT `+logCols+`, `+nextLogSQL+` FROM weft_checkpoint_logs l WHERE l.thread_id = $1 AND l.ns = $2 AND l.channel = $3 AND l.log_id = $4`,
			[]any{p.thread, p.ns, b.Channel, lg.id}, &lg.length, &lg.appends, &lg.depth, &lg.sealed, &lg.tail, &next)
		if err != nil {
			return ref{}, err
		}
		p.knowNextLog(b.Channel, next)
		if !found {
			return ref{}, corrupt(p.thread, p.ns, p.id, fmt.Sprintf("channel %q: log %d, the base of version %d, is missing", b.Channel, lg.id, b.BaseVersion), nil)
		}
	default:
		var next int64
		found, err := p.query(`SELECT b.kind, COALESCE(b.log_id, 0), COALESCE(b.log_len, 0), COALESCE(l.length, 0), COALESCE(l.appends, 0), COALESCE(l.depth, 0), COALESCE(l.sealed, 0), COALESCE(l.tail, 0), `+nextLogSQL+`
FROM weft_checkpoint_blobs b LEFT JOIN weft_checkpoint_logs l
ON l.thread_id = b.thread_id AND l.ns = b.ns AND l.channel = b.channel AND l.log_id = b.log_id
WHERE b.thread_id = $1 AND b.ns = $2 AND b.channel = $3 AND b.version = $4 AND b.origin = $5`,
			[]any{p.thread, p.ns, b.Channel, b.BaseVersion, baseRef.O}, &kind, &lg.id, &logLen, &lg.length, &lg.appends, &lg.depth, &lg.sealed, &lg.tail, &next)
		if err != nil {
			return ref{}, err
		}
		p.knowNextLog(b.Channel, next)
		if !found {
			return ref{}, fmt.Errorf("%w: channel %q in %s: appended items are based on version %d, which is not stored", checkpoint.ErrInvalid, b.Channel, cfg, b.BaseVersion)
		}
	}
	switch kind {
	case kindValue:
		return ref{}, fmt.Errorf("%w: channel %q in %s: appended items need a JSON array at base version %d, but the value stored there is not an array", checkpoint.ErrInvalid, b.Channel, cfg, b.BaseVersion)
	case kindEmpty:
		return p.newLog(b.Channel, nil, 1, items)
	case kindArray:
		return p.newLog(b.Channel, &ref{V: b.BaseVersion, O: baseRef.O}, 1, items)
	case kindLog:
		if len(items) == 0 {
			// Nothing appended: the same log prefix.
			return ref{V: b.Version, Kind: refLog, L: lg.id, N: logLen}, nil
		}
		if lg.length == logLen {
			return p.appendLog(b.Channel, lg, items, nil)
		}
		// The log grew past the base on another branch: fork it.
		if lg.depth+1 > maxLogDepth {
			if err := p.flush(); err != nil {
				return ref{}, err
			}
			r := &reader{s: p.s, tx: p.tx, ctx: p.ctx, thread: p.thread, ns: p.ns, cpID: p.id}
			base, err := r.log(b.Channel, lg.id, logLen, 0)
			if err != nil {
				return ref{}, err
			}
			v, err := checkpoint.JoinAppended(base, items)
			if err != nil {
				return ref{}, err
			}
			return ref{V: b.Version, Kind: refValue, J: v}, nil
		}
		if baseRef.Kind == refLog {
			// The new log is based on the prefix itself.
			return p.newLog(b.Channel, &ref{Kind: refLog, L: lg.id, N: logLen}, lg.depth+1, items)
		}
		return p.newLog(b.Channel, &ref{V: b.BaseVersion, O: baseRef.O}, lg.depth+1, items)
	}
	return ref{}, corrupt(p.thread, p.ns, p.id, fmt.Sprintf("channel %q version %d has unknown kind %d", b.Channel, b.BaseVersion, kind), nil)
}

// newLog starts a log with items on base: nil for the empty list, a blob
// row (refBlob: version V, origin O) or a log prefix (refLog: the first N
// items of log L).
func (p *putter) newLog(ch string, base *ref, depth int64, items []json.RawMessage) (ref, error) {
	row := &newLogRow{}
	if base != nil {
		if base.Kind == refLog {
			row.bl, row.bn = base.L, base.N
		} else {
			row.bv, row.bo = base.V, base.O
		}
	}
	return p.appendLog(ch, logState{depth: depth}, items, row)
}

// nextLogSQL is the channel's ($3 of the thread $1 and namespace $2) next
// free log id, as a column of the query that reads a log's base: the
// thread's writes take turns (its lock), so a log created in the same
// transaction may take it without asking again (createLog).
const nextLogSQL = `(SELECT COALESCE(MAX(m.log_id), 0) + 1 FROM weft_checkpoint_logs m WHERE m.thread_id = $1 AND m.ns = $2 AND m.channel = $3)`

// knowNextLog records the next free log id of channel ch, read in this
// transaction.
func (p *putter) knowNextLog(ch string, id int64) {
	if p.nextLog == nil {
		p.nextLog = map[string]int64{}
	}
	p.nextLog[ch] = id
}

// newLogRow is what a new log's row holds besides its state: its base.
type newLogRow struct{ bv, bo, bl, bn any }

// createLog inserts the row of a new log, in state st, under the
// channel's next free log id, which it sets in lg: one statement, where
// a query for the id, an insert and an update of the state after the
// first append were three.
func (p *putter) createLog(ch string, lg *logState, st logState, row *newLogRow) error {
	if id, ok := p.nextLog[ch]; ok {
		// The id is known: the insert needs no answer, and goes with
		// the checkpoint's.
		p.exec(`INSERT INTO weft_checkpoint_logs (thread_id, ns, channel, log_id, base_version, base_origin, base_log, base_len, length, appends, depth, sealed, tail)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
			p.thread, p.ns, ch, id, row.bv, row.bo, row.bl, row.bn, st.length, st.appends, lg.depth, st.sealed, st.tail)
		lg.id = id
		p.nextLog[ch] = id + 1
		return nil
	}
	found, err := p.query(`INSERT INTO weft_checkpoint_logs (thread_id, ns, channel, log_id, base_version, base_origin, base_log, base_len, length, appends, depth, sealed, tail)
SELECT $1, $2, $3, COALESCE(MAX(log_id), 0) + 1, $4, $5, $6, $7, $8, $9, $10, $11, $12 FROM weft_checkpoint_logs
WHERE thread_id = $1 AND ns = $2 AND channel = $3 RETURNING log_id`,
		[]any{p.thread, p.ns, ch, row.bv, row.bo, row.bl, row.bn, st.length, st.appends, lg.depth, st.sealed, st.tail}, &lg.id)
	if err == nil && !found {
		err = fmt.Errorf("checkpoint: creating a log of channel %q returned no id", ch)
	}
	return err
}

// appendLog adds items at the end of a log. Small appends go to the open
// tail, one row each, in the slot that the append's position in the tail
// names; every N-th append, or an append too large for a slot, seals the
// tail: its items and the new ones become one chunk of
// weft_checkpoint_chunks, and the slots are free for the next tail.
//
// So no chunk is ever rewritten or deleted while the thread lives, and
// what is rewritten in place are the small slot rows: in PostgreSQL the
// slots table keeps room on its pages (fillfactor) so that an overwrite
// is a HOT update, whose old version the next visit to the page reclaims,
// without waiting for a vacuum. A read of the log's first n items reads
// about n/N chunks and at most N-1 slots.
//
// fresh, when set, is a log that does not exist yet (lg is its empty
// state): its row is created with the state after the append.
func (p *putter) appendLog(ch string, lg logState, items []json.RawMessage, fresh *newLogRow) (ref, error) {
	if len(items) == 0 {
		if fresh != nil {
			if err := p.createLog(ch, &lg, lg, fresh); err != nil {
				return ref{}, err
			}
		}
		return ref{Kind: refLog, L: lg.id, N: lg.length}, nil
	}
	data, sizes := encodeChunk(items)
	stored, f := encode(data)
	newLen := lg.length + int64(len(items))
	if lg.tail+1 < int64(p.s.n) && len(stored)+len(sizes) <= slotMax {
		if fresh != nil {
			st := lg
			st.length, st.appends, st.tail = newLen, lg.appends+1, lg.tail+1
			if err := p.createLog(ch, &lg, st, fresh); err != nil {
				return ref{}, err
			}
		}
		p.exec(`INSERT INTO weft_checkpoint_tails (thread_id, ns, channel, log_id, slot, start, count, fmt, items, sizes)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (thread_id, ns, channel, log_id, slot) DO UPDATE SET
start = excluded.start, count = excluded.count, fmt = excluded.fmt, items = excluded.items, sizes = excluded.sizes`,
			p.thread, p.ns, ch, lg.id, lg.tail, lg.length, int64(len(items)), f, stored, sizes)
		if fresh == nil {
			p.exec(`UPDATE weft_checkpoint_logs SET length = $1, appends = appends + 1, tail = tail + 1 WHERE thread_id = $2 AND ns = $3 AND channel = $4 AND log_id = $5`,
				newLen, p.thread, p.ns, ch, lg.id)
		}
		return ref{Kind: refLog, L: lg.id, N: newLen}, nil
	}
	level := 0
	if fresh != nil {
		// A new log has no tail to seal.
		st := lg
		st.length, st.appends, st.sealed, st.tail = newLen, lg.appends+1, newLen, 0
		if err := p.createLog(ch, &lg, st, fresh); err != nil {
			return ref{}, err
		}
	} else if lg.tail > 0 {
		// Seal: the tail's items, then the new ones, in one chunk.
		tail, err := p.readTail(ch, lg)
		if err != nil {
			return ref{}, err
		}
		if len(tail.items) > 0 && len(data) > 0 {
			tail.items = append(tail.items, ',')
		}
		data = append(tail.items, data...)
		sizes = append(tail.sizes, sizes...)
		stored, f = encode(data)
		level = 1
	}
	p.exec(`INSERT INTO weft_checkpoint_chunks (thread_id, ns, channel, log_id, start, count, level, fmt, items, sizes)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, p.thread, p.ns, ch, lg.id, lg.sealed, newLen-lg.sealed, level, f, stored, sizes)
	if fresh == nil {
		p.exec(`UPDATE weft_checkpoint_logs SET length = $1, appends = appends + 1, sealed = $1, tail = 0 WHERE thread_id = $2 AND ns = $3 AND channel = $4 AND log_id = $5`,
			newLen, p.thread, p.ns, ch, lg.id)
	}
	return ref{Kind: refLog, L: lg.id, N: newLen}, nil
}

// readTail reads a log's open tail as one chunk: its items from
// lg.sealed to lg.length, decoded.
func (p *putter) readTail(ch string, lg logState) (chunk, error) {
	if err := p.flush(); err != nil {
		return chunk{}, err
	}
	r := &reader{s: p.s, tx: p.tx, ctx: p.ctx, thread: p.thread, ns: p.ns, cpID: p.id}
	out := chunk{start: lg.sealed}
	rows, err := p.tx.Query(p.ctx, p.s.d.q(`SELECT start, count, fmt, items, sizes FROM weft_checkpoint_tails
WHERE thread_id = $1 AND ns = $2 AND channel = $3 AND log_id = $4 AND slot < $5 ORDER BY slot`), p.thread, p.ns, ch, lg.id, lg.tail)
	if err != nil {
		return chunk{}, err
	}
	defer rows.Close()
	next := lg.sealed
	for rows.Next() {
		var c chunk
		if err := rows.Scan(&c.start, &c.count, &c.fmt, &c.items, &c.sizes); err != nil {
			return chunk{}, err
		}
		items, err := decode(c.items, c.fmt)
		if err != nil {
			return chunk{}, r.bad(ch, "log %d tail slot at %d: %v", lg.id, c.start, err)
		}
		c.items = items
		if c.start != next {
			return chunk{}, r.bad(ch, "log %d tail has a gap: slot at %d, expected %d", lg.id, c.start, next)
		}
		// Checks the item sizes against the bytes.
		if _, err := c.prefix(c.count); err != nil {
			return chunk{}, r.bad(ch, "log %d tail slot at %d: %v", lg.id, c.start, err)
		}
		if len(out.items) > 0 && len(c.items) > 0 {
			out.items = append(out.items, ',')
		}
		out.items = append(out.items, c.items...)
		out.sizes = append(out.sizes, c.sizes...)
		out.count += c.count
		next += c.count
	}
	if err := rows.Err(); err != nil {
		return chunk{}, err
	}
	if next != lg.length {
		return chunk{}, r.bad(ch, "log %d tail ends at item %d; the log has %d", lg.id, next, lg.length)
	}
	return out, nil
}

// ---------------------------------------------------------------- PutWrites

// PutWrites implements checkpoint.Driver.
func (s *Store) PutWrites(ctx context.Context, cfg checkpoint.Config, taskID string, writes []checkpoint.PendingWrite) error {
	// The runs of regular writes (between special ones): each is one row.
	runs, specials, prevSpecial := 0, 0, true
	for _, w := range writes {
		special := checkpoint.IsSpecialChannel(w.Channel)
		if !special && prevSpecial {
			runs++
		}
		if special {
			specials++
		}
		prevSpecial = special
	}
	return s.write(ctx, []string{cfg.ThreadID}, func(tx Tx, bt *batch) error {
		// A task's regular writes are stored once: a task run again after
		// a resume must not double them. hasRegular says whether some are
		// stored already; unknown, it is checked by the insert itself.
		var hasRegular, known bool
		args := []any{cfg.ThreadID, cfg.Namespace, cfg.CheckpointID, taskID}
		owner, fenced := bt.fenceOwner(ctx, cfg.ThreadID)
		if fenced && runs == 1 && specials == 0 {
			row := packRun(writes)
			value, f := encode(row.value)
			const insert = `INSERT INTO weft_checkpoint_writes (thread_id, ns, checkpoint_id, task_id, idx, channel, fmt, value)
SELECT $1, $2, $3, $4, $5, $6, $7, $8 WHERE `
			const noRegular = `NOT EXISTS (SELECT 1 FROM weft_checkpoint_writes
WHERE thread_id = $1 AND ns = $2 AND checkpoint_id = $3 AND task_id = $4 AND idx >= 0)
ON CONFLICT (thread_id, ns, checkpoint_id, task_id, idx) DO NOTHING`
			if bt != nil {
				// In a batch, the one row goes with the batch's next
				// statement and needs no answer: the lease is checked by
				// the batch's next fenced write (a run's next checkpoint
				// asks for its parent's entries anyway), or before the
				// batch commits. Until then the row is the batch's, which
				// stores nothing without its lease.
				bt.relyOn(cfg.ThreadID, owner)
				return tx.ExecBatch(ctx, []Stmt{{Query: s.d.q(insert + noRegular),
					Args: []any{cfg.ThreadID, cfg.Namespace, cfg.CheckpointID, taskID, int64(0), row.channel, f, value}}})
			}
			// The usual case, one row: one statement checks the lease,
			// that the task has no regular writes stored, and inserts.
			n, err := tx.Exec(ctx, s.d.q(s.fence("$9")+insert+`EXISTS (SELECT 1 FROM fence) AND `+noRegular),
				cfg.ThreadID, cfg.Namespace, cfg.CheckpointID, taskID, int64(0), row.channel, f, value, owner)
			if err != nil {
				return err
			}
			if n == 0 {
				// Not stored: the lease is gone, or the writes were
				// stored before.
				if err := s.checkFence(ctx, tx, cfg.ThreadID); err != nil {
					return err
				}
			}
			bt.checked(cfg.ThreadID, owner)
			return nil
		}
		switch {
		case fenced:
			// The lease check rides on the same query (see fence).
			var held, regular int64
			if _, err := queryRow(ctx, tx, s.d.q(s.fence("$5")+`SELECT (SELECT COUNT(*) FROM fence), CASE WHEN EXISTS (SELECT 1 FROM weft_checkpoint_writes
WHERE thread_id = $1 AND ns = $2 AND checkpoint_id = $3 AND task_id = $4 AND idx >= 0) THEN 1 ELSE 0 END`), append(args, owner), &held, &regular); err != nil {
				return err
			}
			if held == 0 {
				return leaseLost(cfg.ThreadID)
			}
			bt.checked(cfg.ThreadID, owner)
			hasRegular, known = regular == 1, true
		case runs > 1:
			// Several regular rows: the first one's insert would hide
			// the state before it from the next, so ask first.
			var one int64
			var err error
			hasRegular, err = queryRow(ctx, tx, s.d.q(`SELECT 1 FROM weft_checkpoint_writes WHERE thread_id = $1 AND ns = $2 AND checkpoint_id = $3 AND task_id = $4 AND idx >= 0 LIMIT 1`),
				args, &one)
			if err != nil {
				return err
			}
			known = true
		}
		stmts, _ := s.taskWriteStmts(cfg, taskID, writes, hasRegular, known, 0)
		if len(stmts) == 0 {
			return nil
		}
		return tx.ExecBatch(ctx, stmts)
	})
}

// taskWriteStmts are the statements that store one task's pending writes
// of checkpoint cfg, as PutWrites stores them: each special write replaces
// the task's earlier one, and each run of regular writes between them is
// one row, stored only when the task has none stored (hasRegular; unless
// known, the insert itself checks). The rows of regular writes take the
// indexes from idx on; it returns the next one.
func (s *Store) taskWriteStmts(cfg checkpoint.Config, taskID string, writes []checkpoint.PendingWrite, hasRegular, known bool, idx int64) ([]Stmt, int64) {
	insert := s.d.q(`INSERT INTO weft_checkpoint_writes (thread_id, ns, checkpoint_id, task_id, idx, channel, fmt, value)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (thread_id, ns, checkpoint_id, task_id, idx) DO `)
	// The one regular row, inserted only when the task has none
	// stored: one statement instead of a query and an insert.
	insertOnce := s.d.q(`INSERT INTO weft_checkpoint_writes (thread_id, ns, checkpoint_id, task_id, idx, channel, fmt, value)
SELECT $1, $2, $3, $4, $5, $6, $7, $8 WHERE NOT EXISTS (SELECT 1 FROM weft_checkpoint_writes
WHERE thread_id = $1 AND ns = $2 AND checkpoint_id = $3 AND task_id = $4 AND idx >= 0)
ON CONFLICT (thread_id, ns, checkpoint_id, task_id, idx) DO NOTHING`)
	// One batch: one round trip in PostgreSQL, whatever the number of
	// writes.
	stmts := make([]Stmt, 0, len(writes))
	for i := 0; i < len(writes); {
		w := writes[i]
		if checkpoint.IsSpecialChannel(w.Channel) {
			// Special channels replace an earlier write of the task.
			value, f := encode(w.Value)
			stmts = append(stmts, Stmt{Query: insert + "UPDATE SET channel = excluded.channel, fmt = excluded.fmt, value = excluded.value",
				Args: []any{cfg.ThreadID, cfg.Namespace, cfg.CheckpointID, taskID, specialIdx[w.Channel], w.Channel, f, value}})
			i++
			continue
		}
		// A run of regular writes goes in one row (see packWrites).
		j := i + 1
		for j < len(writes) && !checkpoint.IsSpecialChannel(writes[j].Channel) {
			j++
		}
		run := writes[i:j]
		i = j
		if hasRegular {
			continue
		}
		row := packRun(run)
		channel := row.channel
		stored, f := encode(row.value)
		q := insert + "NOTHING"
		if !known {
			q = insertOnce
		}
		stmts = append(stmts, Stmt{Query: q,
			Args: []any{cfg.ThreadID, cfg.Namespace, cfg.CheckpointID, taskID, idx, channel, f, stored}})
		idx++
	}
	return stmts, idx
}

// ReplaceWrites implements checkpoint.Driver: in one transaction, fenced,
// it deletes every pending write of checkpoint cfg and stores writes in
// their order, each run of one task's writes as PutWrites stores them.
func (s *Store) ReplaceWrites(ctx context.Context, cfg checkpoint.Config, writes []checkpoint.PendingWrite) error {
	return s.write(ctx, []string{cfg.ThreadID}, func(tx Tx, bt *batch) error {
		bt.forget()
		if err := s.checkFence(ctx, tx, cfg.ThreadID); err != nil {
			return err
		}
		var one int64
		found, err := queryRow(ctx, tx, s.d.q(`SELECT 1 FROM weft_checkpoints WHERE thread_id = $1 AND ns = $2 AND checkpoint_id = $3`),
			[]any{cfg.ThreadID, cfg.Namespace, cfg.CheckpointID}, &one)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%w: replace writes: thread %q has no checkpoint %q in namespace %q", checkpoint.ErrNotFound, cfg.ThreadID, cfg.CheckpointID, cfg.Namespace)
		}
		if _, err := tx.Exec(ctx, s.d.q(`DELETE FROM weft_checkpoint_writes WHERE thread_id = $1 AND ns = $2 AND checkpoint_id = $3`), cfg.ThreadID, cfg.Namespace, cfg.CheckpointID); err != nil {
			return err
		}
		// A task's writes may come in several runs, apart: each run's
		// regular writes are stored, in rows whose indexes follow those
		// of the task's earlier runs (next), so that none is taken for a
		// row stored already and the rows read back in the given order.
		next := map[string]int64{}
		var stmts []Stmt
		for i := 0; i < len(writes); {
			task := writes[i].TaskID
			j := i + 1
			for j < len(writes) && writes[j].TaskID == task {
				j++
			}
			var ts []Stmt
			ts, next[task] = s.taskWriteStmts(cfg, task, writes[i:j], false, true, next[task])
			stmts = append(stmts, ts...)
			i = j
		}
		if len(stmts) == 0 {
			return nil
		}
		return tx.ExecBatch(ctx, stmts)
	})
}

// PatchMetadata implements checkpoint.Driver: in one transaction, fenced,
// it reads checkpoint cfg's metadata, sets extra's keys in its Extra and
// writes it back.
func (s *Store) PatchMetadata(ctx context.Context, cfg checkpoint.Config, extra map[string]any) error {
	return s.write(ctx, []string{cfg.ThreadID}, func(tx Tx, bt *batch) error {
		bt.forget()
		if err := s.checkFence(ctx, tx, cfg.ThreadID); err != nil {
			return err
		}
		row := cpRow{ns: cfg.Namespace, id: cfg.CheckpointID}
		found, err := queryRow(ctx, tx, s.d.q(`SELECT fmt, metadata FROM weft_checkpoints WHERE thread_id = $1 AND ns = $2 AND checkpoint_id = $3`),
			[]any{cfg.ThreadID, cfg.Namespace, cfg.CheckpointID}, &row.fmt, &row.meta)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%w: patch metadata: thread %q has no checkpoint %q in namespace %q", checkpoint.ErrNotFound, cfg.ThreadID, cfg.CheckpointID, cfg.Namespace)
		}
		meta, err := decodeMeta(cfg.ThreadID, row)
		if err != nil {
			return err
		}
		if meta.Extra == nil {
			meta.Extra = make(map[string]any, len(extra))
		}
		maps.Copy(meta.Extra, extra)
		b, err := marshalMeta(meta)
		if err != nil {
			return fmt.Errorf("%w: patch metadata: %v", checkpoint.ErrInvalid, err)
		}
		_, err = tx.Exec(ctx, s.d.q(`UPDATE weft_checkpoints SET metadata = $4 WHERE thread_id = $1 AND ns = $2 AND checkpoint_id = $3`),
			cfg.ThreadID, cfg.Namespace, cfg.CheckpointID, string(b))
		return err
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
	refs, err := decodeRefs(thread, row.ns, row.id, row.refs)
	if err != nil {
		return nil, err
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
		rf, ok := refs[ch]
		if !ok || rf.V != v {
			rf = ref{V: v, Kind: refBlob}
		}
		val, ok, err := r.entry(ch, rf)
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
		if w.Channel == "" {
			ws, err := unpackWrites(w.TaskID, v)
			if err != nil {
				return nil, corrupt(thread, row.ns, row.id, fmt.Sprintf("pending writes of task %s", w.TaskID), err)
			}
			tp.PendingWrites = append(tp.PendingWrites, ws...)
			continue
		}
		tp.PendingWrites = append(tp.PendingWrites, w)
	}
	return tp, rows.Err()
}

// writeRow is the channel and value of a row of regular writes.
type writeRow struct {
	channel string
	value   []byte
}

// packRun returns the row a run of regular writes is stored in: the
// write itself, or several packed (packWrites).
func packRun(run []checkpoint.PendingWrite) writeRow {
	if len(run) == 1 {
		return writeRow{run[0].Channel, []byte(run[0].Value)}
	}
	return writeRow{"", packWrites(run)}
}

// packWrites writes several pending writes of a task as one JSON value,
// for one row of weft_checkpoint_writes whose channel is empty (a name no
// write has): [["channel", value], ["channel"], ...], where a write
// without a value has no second element. A row costs far more than the
// few bytes most writes hold (a node's routing triggers), and a task's
// writes are read together anyway. The values go in byte for byte: the
// Saver checked that each is JSON.
func packWrites(ws []checkpoint.PendingWrite) []byte {
	b := []byte{'['}
	for i, w := range ws {
		if i > 0 {
			b = append(b, ',')
		}
		name, _ := json.Marshal(w.Channel)
		b = append(b, '[')
		b = append(b, name...)
		if w.Value != nil {
			b = append(b, ',')
			b = append(b, w.Value...)
		}
		b = append(b, ']')
	}
	return append(b, ']')
}

// unpackWrites reads what packWrites wrote.
func unpackWrites(taskID string, v []byte) ([]checkpoint.PendingWrite, error) {
	var entries [][]json.RawMessage
	if err := json.Unmarshal(v, &entries); err != nil {
		return nil, err
	}
	out := make([]checkpoint.PendingWrite, 0, len(entries))
	for i, e := range entries {
		w := checkpoint.PendingWrite{TaskID: taskID}
		if len(e) < 1 || len(e) > 2 {
			return nil, fmt.Errorf("write %d has %d parts, want 1 or 2", i, len(e))
		}
		if err := json.Unmarshal(e[0], &w.Channel); err != nil || w.Channel == "" {
			return nil, fmt.Errorf("write %d has no channel name", i)
		}
		if len(e) == 2 {
			w.Value = e[1]
		}
		out = append(out, w)
	}
	return out, nil
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

// entry reads the value a checkpoint's entry names; ok is false when the
// channel has no value there.
func (r *reader) entry(ch string, rf ref) (json.RawMessage, bool, error) {
	switch rf.Kind {
	case refEmpty:
		return nil, false, nil
	case refValue:
		// Checked when the refs column was decoded.
		return rf.J, true, nil
	case refLog:
		val, err := r.log(ch, rf.L, rf.N, 0)
		if err != nil {
			return nil, false, err
		}
		if !json.Valid(val) {
			return nil, false, r.bad(ch, "value at version %d (log %d) is not valid JSON", rf.V, rf.L)
		}
		return val, true, nil
	}
	return r.value(ch, rf.V, rf.O, 0)
}

// value reads the blob row of channel ch at version ver; ok is false when
// the channel has no value there.
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
		// Written by schema versions 1 and 2, which kept log pointers in
		// blob rows.
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

// log reads the first n items of a log, on top of its base: the log's
// sealed chunks, then the slots of its open tail.
func (r *reader) log(ch string, logID, n int64, depth int) (json.RawMessage, error) {
	if depth > maxLogDepth+1 {
		return nil, r.bad(ch, "log bases nest deeper than %d", maxLogDepth)
	}
	var bv, bl, bn, length, sealed, tail int64
	var bo string
	var hasBase, hasBaseLog bool
	found, err := queryRow(r.ctx, r.tx, r.s.d.q(`SELECT base_version IS NOT NULL, COALESCE(base_version, 0), COALESCE(base_origin, ''),
base_log IS NOT NULL, COALESCE(base_log, 0), COALESCE(base_len, 0), length, sealed, tail FROM weft_checkpoint_logs
WHERE thread_id = $1 AND ns = $2 AND channel = $3 AND log_id = $4`),
		[]any{r.thread, r.ns, ch, logID}, &hasBase, &bv, &bo, &hasBaseLog, &bl, &bn, &length, &sealed, &tail)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, r.bad(ch, "log %d is missing", logID)
	}
	if n < 0 || n > length {
		return nil, r.bad(ch, "log %d has %d items, %d wanted", logID, length, n)
	}
	var base json.RawMessage
	switch {
	case hasBaseLog:
		if base, err = r.log(ch, bl, bn, depth+1); err != nil {
			return nil, err
		}
	case hasBase:
		v, ok, err := r.value(ch, bv, bo, depth+1)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, r.bad(ch, "log %d is based on version %d, which has no stored value", logID, bv)
		}
		base = v
	}
	// The tail's slots beyond the log's tail count are left over from an
	// earlier tail: only the first tail slots hold this log's items.
	rows, err := r.tx.Query(r.ctx, r.s.d.q(`SELECT start, count, fmt, items, sizes FROM weft_checkpoint_chunks
WHERE thread_id = $1 AND ns = $2 AND channel = $3 AND log_id = $4 AND start < $5
UNION ALL SELECT start, count, fmt, items, sizes FROM weft_checkpoint_tails
WHERE thread_id = $1 AND ns = $2 AND channel = $3 AND log_id = $4 AND slot < $6 AND start < $5 AND start >= $7
ORDER BY 1`),
		r.thread, r.ns, ch, logID, n, tail, sealed)
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
