package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/weftlabs/weft/checkpoint"
)

// tables lists every table that holds thread data, with its columns.
var tables = []struct {
	name string
	cols []string
	ints []string // integer columns, for Stats
}{
	{"weft_checkpoints", []string{"ns", "checkpoint_id", "parent_id", "ts", "fmt", "metadata", "body", "refs"}, []string{"ts", "fmt"}},
	{"weft_checkpoint_blobs", []string{"ns", "channel", "version", "origin", "kind", "fmt", "value", "log_id", "log_len"}, []string{"version", "kind", "fmt", "log_id", "log_len"}},
	{"weft_checkpoint_logs", []string{"ns", "channel", "log_id", "base_version", "base_origin", "base_log", "base_len", "length", "appends", "depth", "sealed", "tail"},
		[]string{"log_id", "base_version", "base_log", "base_len", "length", "appends", "depth", "sealed", "tail"}},
	{"weft_checkpoint_chunks", []string{"ns", "channel", "log_id", "start", "count", "level", "fmt", "items", "sizes"}, []string{"log_id", "start", "count", "level", "fmt"}},
	{"weft_checkpoint_tails", []string{"ns", "channel", "log_id", "slot", "start", "count", "fmt", "items", "sizes"}, []string{"log_id", "slot", "start", "count", "fmt"}},
	{"weft_checkpoint_writes", []string{"ns", "checkpoint_id", "task_id", "idx", "channel", "fmt", "value"}, []string{"idx", "fmt"}},
}

// DeleteThread implements checkpoint.Driver.
func (s *Store) DeleteThread(ctx context.Context, threadID string) error {
	return s.write(ctx, []string{threadID}, func(tx Tx, bt *batch) error {
		bt.forget()
		if err := s.checkFence(ctx, tx, threadID); err != nil {
			return err
		}
		_, err := s.deleteAll(ctx, tx, threadID)
		return err
	})
}

// deleteAll deletes every row of a thread and returns how many
// checkpoints it had.
func (s *Store) deleteAll(ctx context.Context, tx Tx, threadID string) (int, error) {
	n := 0
	for _, t := range tables {
		k, err := tx.Exec(ctx, s.d.q(`DELETE FROM `+t.name+` WHERE thread_id = $1`), threadID)
		if err != nil {
			return 0, err
		}
		if t.name == "weft_checkpoints" {
			n = int(k)
		}
	}
	return n, nil
}

// CopyThread implements checkpoint.Driver.
func (s *Store) CopyThread(ctx context.Context, from, to string) error {
	keys := []string{from, to}
	if to < from {
		keys = []string{to, from}
	}
	return s.write(ctx, keys, func(tx Tx, bt *batch) error {
		bt.forget()
		if err := s.checkFence(ctx, tx, keys...); err != nil {
			return err
		}
		var one int64
		ok, err := queryRow(ctx, tx, s.d.q(`SELECT 1 FROM weft_checkpoints WHERE thread_id = $1 LIMIT 1`), []any{from}, &one)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: thread %q has no checkpoint to copy", checkpoint.ErrNotFound, from)
		}
		ok, err = queryRow(ctx, tx, s.d.q(`SELECT 1 FROM weft_checkpoints WHERE thread_id = $1 LIMIT 1`), []any{to}, &one)
		if err != nil {
			return err
		}
		if ok {
			return fmt.Errorf("%w: cannot copy thread %q to %q: the destination already has checkpoints", checkpoint.ErrInvalid, from, to)
		}
		for _, t := range tables {
			// Leftover rows of a destination without checkpoints (pending
			// writes alone) would collide with the copy.
			if _, err := tx.Exec(ctx, s.d.q(`DELETE FROM `+t.name+` WHERE thread_id = $1`), to); err != nil {
				return err
			}
			cols := strings.Join(t.cols, ", ")
			order := ""
			if t.name == "weft_checkpoint_writes" {
				order = " ORDER BY " + s.d.WritesOrder
			}
			if _, err := tx.Exec(ctx, s.d.q(`INSERT INTO `+t.name+` (thread_id, `+cols+`) SELECT $1, `+cols+` FROM `+t.name+` WHERE thread_id = $2`+order), to, from); err != nil {
				return err
			}
		}
		return nil
	})
}

// ListThreads implements checkpoint.Driver.
func (s *Store) ListThreads(ctx context.Context, filter checkpoint.ThreadFilter) iter.Seq2[checkpoint.ThreadInfo, error] {
	return func(yield func(checkpoint.ThreadInfo, error) bool) {
		const page = 128
		count := 0
		var afterID, afterThread string
		more := true
		for more {
			var out []checkpoint.ThreadInfo
			err := s.db.Read(ctx, func(tx Tx) error {
				query := `SELECT l.thread_id, l.id, c.ts, c.fmt, c.metadata FROM
(SELECT thread_id, MAX(checkpoint_id) AS id FROM weft_checkpoints WHERE ns = '' GROUP BY thread_id) l
JOIN weft_checkpoints c ON c.thread_id = l.thread_id AND c.ns = '' AND c.checkpoint_id = l.id`
				var args []any
				if afterID != "" {
					args = append(args, afterID, afterThread)
					query += ` WHERE l.id < $1 OR (l.id = $1 AND l.thread_id < $2)`
				}
				query += fmt.Sprintf(` ORDER BY l.id DESC, l.thread_id DESC LIMIT %d`, page)
				rows, err := tx.Query(ctx, s.d.q(query), args...)
				if err != nil {
					return err
				}
				defer rows.Close()
				n := 0
				for rows.Next() {
					n++
					var row cpRow
					var thread, meta string
					if err := rows.Scan(&thread, &row.id, &row.ts, &row.fmt, &meta); err != nil {
						return err
					}
					row.meta = []byte(meta)
					afterID, afterThread = row.id, thread
					md, err := decodeMeta(thread, row)
					if err != nil {
						return err
					}
					if !checkpoint.MatchMetadata(md, filter.Metadata) {
						continue
					}
					out = append(out, checkpoint.ThreadInfo{
						ThreadID:  thread,
						Latest:    checkpoint.Config{ThreadID: thread, CheckpointID: row.id},
						Metadata:  md,
						UpdatedAt: tsFromDB(row.ts),
					})
					if filter.Limit > 0 && count+len(out) >= filter.Limit {
						break
					}
				}
				more = n == page && !(filter.Limit > 0 && count+len(out) >= filter.Limit)
				return rows.Err()
			})
			if err != nil {
				yield(checkpoint.ThreadInfo{}, err)
				return
			}
			for _, ti := range out {
				if !yield(ti, nil) {
					return
				}
				count++
			}
		}
	}
}

type blobKey struct {
	ns, channel string
	version     int64
	origin      string
}

type logKey struct {
	ns, channel string
	id          int64
}

// Prune implements checkpoint.Driver. It deletes the checkpoints opts does
// not keep and their pending writes, then every blob, log and chunk no kept
// checkpoint can reach (see collect).
func (s *Store) Prune(ctx context.Context, threadID string, opts checkpoint.PruneOptions) (int, error) {
	return s.drop(ctx, threadID, func(ns string, ids []string, times []time.Time) []bool {
		return checkpoint.PruneKeeps(opts, ns, ids, times)
	})
}

// Rewind implements checkpoint.Driver.
func (s *Store) Rewind(ctx context.Context, threadID, checkpointID string) (int, error) {
	if checkpointID == "" {
		n := 0
		err := s.write(ctx, []string{threadID}, func(tx Tx, bt *batch) error {
			bt.forget()
			if err := s.checkFence(ctx, tx, threadID); err != nil {
				return err
			}
			var err error
			n, err = s.deleteAll(ctx, tx, threadID)
			return err
		})
		return n, err
	}
	return s.drop(ctx, threadID, func(ns string, ids []string, _ []time.Time) []bool {
		keep := make([]bool, len(ids))
		for i, id := range ids {
			keep[i] = id <= checkpointID
		}
		return keep
	}, func(tx Tx) error {
		var one int64
		found, err := queryRow(ctx, tx, s.d.q(`SELECT 1 FROM weft_checkpoints WHERE thread_id = $1 AND checkpoint_id = $2 LIMIT 1`), []any{threadID, checkpointID}, &one)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%w: rewind: thread %q has no checkpoint %q", checkpoint.ErrNotFound, threadID, checkpointID)
		}
		// Writes to checkpoints never stored go too.
		_, err = tx.Exec(ctx, s.d.q(`DELETE FROM weft_checkpoint_writes WHERE thread_id = $1 AND checkpoint_id > $2`), threadID, checkpointID)
		return err
	})
}

// drop deletes the checkpoints of each namespace that keep does not keep
// (ids and times oldest first), with their pending writes, then collects
// what no kept checkpoint needs. It returns how many checkpoints it
// deleted. check, if given, runs first in the same transaction.
func (s *Store) drop(ctx context.Context, threadID string, keep func(ns string, ids []string, times []time.Time) []bool, check ...func(Tx) error) (int, error) {
	deleted := 0
	err := s.write(ctx, []string{threadID}, func(tx Tx, bt *batch) error {
		bt.forget()
		if err := s.checkFence(ctx, tx, threadID); err != nil {
			return err
		}
		for _, c := range check {
			if err := c(tx); err != nil {
				return err
			}
		}
		q := s.d.q
		type cpInfo struct {
			id   string
			ts   time.Time
			body []byte
			refs []byte
		}
		byNS := map[string][]cpInfo{}
		var nsOrder []string
		rows, err := tx.Query(ctx, q(`SELECT ns, checkpoint_id, ts, body, refs FROM weft_checkpoints WHERE thread_id = $1 ORDER BY ns, checkpoint_id`), threadID)
		if err != nil {
			return err
		}
		for rows.Next() {
			var ns string
			var c cpInfo
			var ts int64
			if err := rows.Scan(&ns, &c.id, &ts, &c.body, &c.refs); err != nil {
				rows.Close()
				return err
			}
			c.ts = tsFromDB(ts)
			if _, ok := byNS[ns]; !ok {
				nsOrder = append(nsOrder, ns)
			}
			byNS[ns] = append(byNS[ns], c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		live := &reach{blobs: map[blobKey]bool{}, logs: map[logKey]int64{}}
		for _, ns := range nsOrder {
			list := byNS[ns]
			ids := make([]string, len(list))
			times := make([]time.Time, len(list))
			for i, c := range list {
				ids[i], times[i] = c.id, c.ts
			}
			kept := keep(ns, ids, times)
			var drop []string
			for i, c := range list {
				if !kept[i] {
					drop = append(drop, c.id)
					continue
				}
				var b body
				if err := json.Unmarshal(c.body, &b); err != nil {
					return corrupt(threadID, ns, c.id, "checkpoint body", err)
				}
				refs, err := decodeRefs(threadID, ns, c.id, c.refs)
				if err != nil {
					return err
				}
				for ch, v := range b.CV {
					r, ok := refs[ch]
					if !ok || r.V != v {
						r = ref{V: v, Kind: refBlob}
					}
					switch r.Kind {
					case refBlob:
						live.blobs[blobKey{ns, ch, v, r.O}] = true
					case refLog:
						live.log(logKey{ns, ch, r.L}, r.N)
					}
				}
			}
			for len(drop) > 0 {
				batch := drop[:min(len(drop), 200)]
				drop = drop[len(batch):]
				ph := make([]string, len(batch))
				args := []any{threadID, ns}
				for i, id := range batch {
					args = append(args, id)
					ph[i] = fmt.Sprintf("$%d", i+3)
				}
				in := strings.Join(ph, ", ")
				n, err := tx.Exec(ctx, q(`DELETE FROM weft_checkpoints WHERE thread_id = $1 AND ns = $2 AND checkpoint_id IN (`+in+`)`), args...)
				if err != nil {
					return err
				}
				deleted += int(n)
				if _, err := tx.Exec(ctx, q(`DELETE FROM weft_checkpoint_writes WHERE thread_id = $1 AND ns = $2 AND checkpoint_id IN (`+in+`)`), args...); err != nil {
					return err
				}
			}
		}
		return s.collect(ctx, tx, threadID, live)
	})
	return deleted, err
}

// reach is what kept checkpoints need: blob rows, and how many items of
// each log.
type reach struct {
	blobs map[blobKey]bool
	logs  map[logKey]int64
}

// log records that the first n items of a log are needed, and reports
// whether that is more than was known.
func (r *reach) log(k logKey, n int64) bool {
	if have, ok := r.logs[k]; ok && have >= n {
		return false
	}
	r.logs[k] = n
	return true
}

// collect deletes the blobs, logs and chunks of a thread that the kept
// checkpoints (live) do not reach, through log pointers and the bases of
// logs, and cuts each kept log after the last item anything needs, so
// that the thread goes on appending to it.
func (s *Store) collect(ctx context.Context, tx Tx, threadID string, live *reach) error {
	q := s.d.q
	type blobInfo struct {
		kind, log, n int64
	}
	blobs := map[blobKey]blobInfo{}
	rows, err := tx.Query(ctx, q(`SELECT ns, channel, version, origin, kind, COALESCE(log_id, 0), COALESCE(log_len, 0) FROM weft_checkpoint_blobs WHERE thread_id = $1`), threadID)
	if err != nil {
		return err
	}
	for rows.Next() {
		var k blobKey
		var b blobInfo
		if err := rows.Scan(&k.ns, &k.channel, &k.version, &k.origin, &b.kind, &b.log, &b.n); err != nil {
			rows.Close()
			return err
		}
		blobs[k] = b
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	type logInfo struct {
		hasBase, hasBaseLog bool
		base                blobKey
		baseLog, baseLen    int64
		length, sealed      int64
		tail                int64
	}
	logs := map[logKey]logInfo{}
	rows, err = tx.Query(ctx, q(`SELECT ns, channel, log_id, base_version IS NOT NULL, COALESCE(base_version, 0), COALESCE(base_origin, ''),
base_log IS NOT NULL, COALESCE(base_log, 0), COALESCE(base_len, 0), length, sealed, tail FROM weft_checkpoint_logs WHERE thread_id = $1`), threadID)
	if err != nil {
		return err
	}
	for rows.Next() {
		var k logKey
		var l logInfo
		if err := rows.Scan(&k.ns, &k.channel, &k.id, &l.hasBase, &l.base.version, &l.base.origin, &l.hasBaseLog, &l.baseLog, &l.baseLen, &l.length, &l.sealed, &l.tail); err != nil {
			rows.Close()
			return err
		}
		l.base.ns, l.base.channel = k.ns, k.channel
		logs[k] = l
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	// Mark: kept blobs and logs, the logs blobs point into, the bases of
	// logs, and so on.
	keepBlob := map[blobKey]bool{}
	var blobQueue []blobKey
	for k := range live.blobs {
		blobQueue = append(blobQueue, k)
	}
	var logQueue []logKey
	for k := range live.logs {
		logQueue = append(logQueue, k)
	}
	for len(blobQueue) > 0 || len(logQueue) > 0 {
		if n := len(blobQueue); n > 0 {
			k := blobQueue[n-1]
			blobQueue = blobQueue[:n-1]
			b, ok := blobs[k]
			if !ok || keepBlob[k] {
				continue
			}
			keepBlob[k] = true
			if b.kind == kindLog {
				lk := logKey{k.ns, k.channel, b.log}
				if live.log(lk, b.n) {
					logQueue = append(logQueue, lk)
				}
			}
			continue
		}
		lk := logQueue[len(logQueue)-1]
		logQueue = logQueue[:len(logQueue)-1]
		l, ok := logs[lk]
		if !ok {
			continue
		}
		if l.hasBase {
			blobQueue = append(blobQueue, l.base)
		}
		if l.hasBaseLog {
			bk := logKey{lk.ns, lk.channel, l.baseLog}
			if live.log(bk, l.baseLen) {
				logQueue = append(logQueue, bk)
			}
		}
	}
	// Sweep.
	for k := range blobs {
		if keepBlob[k] {
			continue
		}
		if _, err := tx.Exec(ctx, q(`DELETE FROM weft_checkpoint_blobs WHERE thread_id = $1 AND ns = $2 AND channel = $3 AND version = $4 AND origin = $5`),
			threadID, k.ns, k.channel, k.version, k.origin); err != nil {
			return err
		}
	}
	for k, l := range logs {
		need, kept := live.logs[k]
		if !kept {
			for _, t := range []string{"weft_checkpoint_logs", "weft_checkpoint_chunks", "weft_checkpoint_tails"} {
				if _, err := tx.Exec(ctx, q(`DELETE FROM `+t+` WHERE thread_id = $1 AND ns = $2 AND channel = $3 AND log_id = $4`),
					threadID, k.ns, k.channel, k.id); err != nil {
					return err
				}
			}
			continue
		}
		if need < l.length {
			if err := s.truncate(ctx, tx, threadID, k, need, l.sealed, l.tail); err != nil {
				return err
			}
		}
	}
	return nil
}

// truncate cuts a log to its first n items (n below its length): the
// items after them are what only deleted checkpoints read. A chunk that
// runs past n keeps its first items; the tail keeps its slots before n.
func (s *Store) truncate(ctx context.Context, tx Tx, threadID string, k logKey, n, sealed, tail int64) error {
	q := s.d.q
	r := &reader{s: s, tx: tx, ctx: ctx, thread: threadID, ns: k.ns}
	key := []any{threadID, k.ns, k.channel, k.id}
	// The slots and chunks that straddle n: at most one of each.
	type cut struct {
		table, where string
		c            chunk
	}
	var cuts []cut
	for _, t := range []struct {
		table, where string
		args         []any
	}{
		{"weft_checkpoint_chunks", ``, []any{threadID, k.ns, k.channel, k.id, n}},
		{"weft_checkpoint_tails", ` AND slot < $6`, []any{threadID, k.ns, k.channel, k.id, n, tail}},
	} {
		rows, err := tx.Query(ctx, q(`SELECT start, count, fmt, items, sizes FROM `+t.table+`
WHERE thread_id = $1 AND ns = $2 AND channel = $3 AND log_id = $4 AND start < $5 AND start + count > $5`+t.where), t.args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var c chunk
			if err := rows.Scan(&c.start, &c.count, &c.fmt, &c.items, &c.sizes); err != nil {
				rows.Close()
				return err
			}
			where := ""
			if t.where != "" {
				where = ` AND slot < $10`
			}
			cuts = append(cuts, cut{t.table, where, c})
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	for _, ct := range cuts {
		c := ct.c
		items, err := decode(c.items, c.fmt)
		if err != nil {
			return r.bad(k.channel, "log %d chunk at %d: %v", k.id, c.start, err)
		}
		c.items = items
		keep := n - c.start
		data, err := c.prefix(keep)
		if err != nil {
			return r.bad(k.channel, "log %d chunk at %d: %v", k.id, c.start, err)
		}
		sizes, err := c.sizesPrefix(keep)
		if err != nil {
			return r.bad(k.channel, "log %d chunk at %d: %v", k.id, c.start, err)
		}
		stored, f := encode(data)
		// Only the tail's current slots: a left-over one may have the
		// same start.
		args := []any{threadID, k.ns, k.channel, k.id, c.start, keep, f, stored, sizes}
		if ct.where != "" {
			args = append(args, tail)
		}
		if _, err := tx.Exec(ctx, q(`UPDATE `+ct.table+` SET count = $6, fmt = $7, items = $8, sizes = $9
WHERE thread_id = $1 AND ns = $2 AND channel = $3 AND log_id = $4 AND start = $5`+ct.where), args...); err != nil {
			return err
		}
	}
	if _, err := tx.Exec(ctx, q(`DELETE FROM weft_checkpoint_chunks WHERE thread_id = $1 AND ns = $2 AND channel = $3 AND log_id = $4 AND start >= $5`), append(key, n)...); err != nil {
		return err
	}
	// The tail's slots before n stay; the rest are left over.
	newTail := int64(0)
	if n > sealed {
		var cnt int64
		if _, err := queryRow(ctx, tx, q(`SELECT COUNT(*) FROM weft_checkpoint_tails
WHERE thread_id = $1 AND ns = $2 AND channel = $3 AND log_id = $4 AND slot < $5 AND start < $6`), append(key, tail, n), &cnt); err != nil {
			return err
		}
		newTail = cnt
	} else {
		sealed = n
	}
	if _, err := tx.Exec(ctx, q(`DELETE FROM weft_checkpoint_tails WHERE thread_id = $1 AND ns = $2 AND channel = $3 AND log_id = $4 AND slot >= $5`), append(key, newTail)...); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, q(`UPDATE weft_checkpoint_logs SET length = $5, sealed = $6, tail = $7 WHERE thread_id = $1 AND ns = $2 AND channel = $3 AND log_id = $4`),
		append(key, n, sealed, newTail)...)
	return err
}

// Stats describes what a thread's rows hold.
type Stats struct {
	Checkpoints int64 `json:"checkpoints"`
	Blobs       int64 `json:"blobs"`
	Logs        int64 `json:"logs"`
	Chunks      int64 `json:"chunks"`
	Tails       int64 `json:"tails"`
	Writes      int64 `json:"writes"`
	// Bytes is the sum of the stored sizes of every column of the thread's
	// rows (the thread id column excluded, as it is the same in each row),
	// as the database measures them: octet lengths and integer sizes in
	// SQLite, pg_column_size in PostgreSQL (after compression). Indexes and
	// page overhead are not counted.
	Bytes int64 `json:"bytes"`
	// ThreadIDBytes is what the thread id column adds.
	ThreadIDBytes int64 `json:"thread_id_bytes"`
	// TableBytes breaks Bytes down by table.
	TableBytes map[string]int64 `json:"table_bytes"`
}

// Stats reports row counts and stored bytes for a thread.
func (s *Store) Stats(ctx context.Context, threadID string) (Stats, error) {
	st := Stats{TableBytes: map[string]int64{}}
	err := s.db.Read(ctx, func(tx Tx) error {
		for _, t := range tables {
			var sizes []string
			for _, c := range t.cols {
				integer := false
				for _, ic := range t.ints {
					integer = integer || ic == c
				}
				sizes = append(sizes, s.d.Size(c, integer))
			}
			var n, b, tb int64
			if _, err := queryRow(ctx, tx, s.d.q(`SELECT COUNT(*), COALESCE(SUM(`+strings.Join(sizes, " + ")+`), 0), COALESCE(SUM(`+s.d.Size("thread_id", false)+`), 0) FROM `+t.name+` WHERE thread_id = $1`),
				[]any{threadID}, &n, &b, &tb); err != nil {
				return err
			}
			st.Bytes += b
			st.TableBytes[t.name] = b
			st.ThreadIDBytes += tb
			switch t.name {
			case "weft_checkpoints":
				st.Checkpoints = n
			case "weft_checkpoint_blobs":
				st.Blobs = n
			case "weft_checkpoint_logs":
				st.Logs = n
			case "weft_checkpoint_chunks":
				st.Chunks = n
			case "weft_checkpoint_tails":
				st.Tails = n
			case "weft_checkpoint_writes":
				st.Writes = n
			}
		}
		return nil
	})
	return st, err
}
