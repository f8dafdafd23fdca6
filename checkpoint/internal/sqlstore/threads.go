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
	{"weft_checkpoint_logs", []string{"ns", "channel", "log_id", "base_version", "base_origin", "length", "appends", "depth"}, []string{"log_id", "base_version", "length", "appends", "depth"}},
	{"weft_checkpoint_chunks", []string{"ns", "channel", "log_id", "start", "count", "level", "fmt", "items", "sizes"}, []string{"log_id", "start", "count", "level", "fmt"}},
	{"weft_checkpoint_writes", []string{"ns", "checkpoint_id", "task_id", "idx", "channel", "fmt", "value"}, []string{"idx", "fmt"}},
}

// DeleteThread implements checkpoint.Driver.
func (s *Store) DeleteThread(ctx context.Context, threadID string) error {
	return s.db.Write(ctx, []string{threadID}, func(tx Tx) error {
		for _, t := range tables {
			if _, err := tx.Exec(ctx, s.d.q(`DELETE FROM `+t.name+` WHERE thread_id = $1`), threadID); err != nil {
				return err
			}
		}
		return nil
	})
}

// CopyThread implements checkpoint.Driver.
func (s *Store) CopyThread(ctx context.Context, from, to string) error {
	keys := []string{from, to}
	if to < from {
		keys = []string{to, from}
	}
	return s.db.Write(ctx, keys, func(tx Tx) error {
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
// checkpoint can reach. A log that a kept value builds on is kept whole, so
// a kept checkpoint never loses the base of its deltas.
func (s *Store) Prune(ctx context.Context, threadID string, opts checkpoint.PruneOptions) (int, error) {
	deleted := 0
	err := s.db.Write(ctx, []string{threadID}, func(tx Tx) error {
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
		used := map[blobKey]bool{}
		for _, ns := range nsOrder {
			list := byNS[ns]
			ids := make([]string, len(list))
			times := make([]time.Time, len(list))
			for i, c := range list {
				ids[i], times[i] = c.id, c.ts
			}
			keep := checkpoint.PruneKeeps(opts, ids, times)
			var drop []string
			for i, c := range list {
				if !keep[i] {
					drop = append(drop, c.id)
					continue
				}
				var b body
				if err := json.Unmarshal(c.body, &b); err != nil {
					return corrupt(threadID, ns, c.id, "checkpoint body", err)
				}
				refs := map[string]ref{}
				if len(c.refs) > 0 {
					if err := json.Unmarshal(c.refs, &refs); err != nil {
						return corrupt(threadID, ns, c.id, "blob references", err)
					}
				}
				for ch, v := range b.CV {
					k := blobKey{ns, ch, v, ""}
					if r, ok := refs[ch]; ok && r.V == v {
						k.origin = r.O
					}
					used[k] = true
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
		return s.collect(ctx, tx, threadID, used)
	})
	return deleted, err
}

// collect deletes the blobs, logs and chunks of a thread that used (the
// blobs kept checkpoints name) does not reach.
func (s *Store) collect(ctx context.Context, tx Tx, threadID string, used map[blobKey]bool) error {
	q := s.d.q
	type blobInfo struct {
		kind int64
		log  int64
	}
	blobs := map[blobKey]blobInfo{}
	rows, err := tx.Query(ctx, q(`SELECT ns, channel, version, origin, kind, COALESCE(log_id, 0) FROM weft_checkpoint_blobs WHERE thread_id = $1`), threadID)
	if err != nil {
		return err
	}
	for rows.Next() {
		var k blobKey
		var b blobInfo
		if err := rows.Scan(&k.ns, &k.channel, &k.version, &k.origin, &b.kind, &b.log); err != nil {
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
		hasBase bool
		base    blobKey
	}
	logs := map[logKey]logInfo{}
	rows, err = tx.Query(ctx, q(`SELECT ns, channel, log_id, base_version IS NOT NULL, COALESCE(base_version, 0), COALESCE(base_origin, '') FROM weft_checkpoint_logs WHERE thread_id = $1`), threadID)
	if err != nil {
		return err
	}
	for rows.Next() {
		var k logKey
		var l logInfo
		if err := rows.Scan(&k.ns, &k.channel, &k.id, &l.hasBase, &l.base.version, &l.base.origin); err != nil {
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
	// Mark: kept blobs, the logs they point into, those logs' bases, and so on.
	keepBlob := map[blobKey]bool{}
	keepLog := map[logKey]bool{}
	var queue []blobKey
	for k := range used {
		queue = append(queue, k)
	}
	for len(queue) > 0 {
		k := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if keepBlob[k] {
			continue
		}
		b, ok := blobs[k]
		if !ok {
			continue
		}
		keepBlob[k] = true
		if b.kind != kindLog {
			continue
		}
		lk := logKey{k.ns, k.channel, b.log}
		if keepLog[lk] {
			continue
		}
		keepLog[lk] = true
		if l, ok := logs[lk]; ok && l.hasBase {
			queue = append(queue, l.base)
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
	for k := range logs {
		if keepLog[k] {
			continue
		}
		for _, t := range []string{"weft_checkpoint_logs", "weft_checkpoint_chunks"} {
			if _, err := tx.Exec(ctx, q(`DELETE FROM `+t+` WHERE thread_id = $1 AND ns = $2 AND channel = $3 AND log_id = $4`),
				threadID, k.ns, k.channel, k.id); err != nil {
				return err
			}
		}
	}
	return nil
}

// Stats describes what a thread's rows hold.
type Stats struct {
	Checkpoints int64 `json:"checkpoints"`
	Blobs       int64 `json:"blobs"`
	Logs        int64 `json:"logs"`
	Chunks      int64 `json:"chunks"`
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
			case "weft_checkpoint_writes":
				st.Writes = n
			}
		}
		return nil
	})
	return st, err
}
