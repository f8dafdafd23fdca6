package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Dialect is what differs between the SQL databases.
type Dialect struct {
	// Migrations are the schema versions, in order: Migrations[i] takes the
	// schema from version i to i+1.
	Migrations [][]string
	// Numbered rewrites $N placeholders as ?N (SQLite).
	Numbered bool
	// WritesOrder is the column that orders pending writes as written.
	WritesOrder string
	// Size returns an SQL expression for the bytes a column's value takes.
	Size func(col string, integer bool) string
	// Now is an SQL expression for the current time in Unix nanoseconds,
	// used for lease expiry; empty means the local clock, passed as an
	// argument.
	Now string
	// LockRow is appended to the lease check of a fenced write to lock the
	// lease row until the write commits (" FOR SHARE"); empty where write
	// transactions already exclude each other (SQLite).
	LockRow string
}

// q rewrites a query for the dialect.
func (d *Dialect) q(query string) string {
	if d.Numbered {
		return strings.ReplaceAll(query, "$", "?")
	}
	return query
}

// migrationComponent names this package's rows in weft_schema_migrations,
// which other weft stores share.
const migrationComponent = "checkpoint"

// migrationsTable is created before any migration, in the same transaction.
const migrationsTable = `CREATE TABLE IF NOT EXISTS weft_schema_migrations (
	component TEXT NOT NULL,
	version INTEGER NOT NULL,
	applied_at TEXT NOT NULL,
	PRIMARY KEY (component, version)
)`

// Migrate brings the schema up to date. It is safe to run from several
// processes at once: the migration runs under the database's write lock,
// and a process that finds the schema current does nothing.
func (s *Store) Migrate(ctx context.Context) error {
	return MigrateTo(ctx, s, len(s.d.Migrations))
}

// MigrateTo brings the schema up to version, at most: an upgrade test
// starts from an older version.
func MigrateTo(ctx context.Context, s *Store, version int) error {
	return s.db.Write(ctx, []string{"weft.checkpoint.migrate"}, func(tx Tx) error {
		if _, err := tx.Exec(ctx, migrationsTable); err != nil {
			return fmt.Errorf("checkpoint: creating weft_schema_migrations: %w", err)
		}
		var cur int64
		if _, err := queryRow(ctx, tx, s.d.q(`SELECT COALESCE(MAX(version), 0) FROM weft_schema_migrations WHERE component = $1`),
			[]any{migrationComponent}, &cur); err != nil {
			return fmt.Errorf("checkpoint: reading the schema version: %w", err)
		}
		if int(cur) > len(s.d.Migrations) {
			return fmt.Errorf("checkpoint: the database's checkpoint schema is at version %d, newer than this build knows (%d): upgrade weft", cur, len(s.d.Migrations))
		}
		for v := int(cur); v < min(version, len(s.d.Migrations)); v++ {
			for _, stmt := range s.d.Migrations[v] {
				if _, err := tx.Exec(ctx, stmt); err != nil {
					return fmt.Errorf("checkpoint: schema migration %d: %w\n%s", v+1, err, stmt)
				}
			}
			if _, err := tx.Exec(ctx, s.d.q(`INSERT INTO weft_schema_migrations (component, version, applied_at) VALUES ($1, $2, $3)`),
				migrationComponent, int64(v+1), time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
				return fmt.Errorf("checkpoint: recording schema migration %d: %w", v+1, err)
			}
		}
		return nil
	})
}

// SchemaSQL returns the first migration with the column types of one
// database filled in: text, 64-bit and small integers, bytes, a JSON
// document, and the column (with its trailing comma) that orders pending
// writes, if the table needs one.
func SchemaSQL(text, integer, small, blob, json, writesSeq string) []string {
	r := strings.NewReplacer("TEXT", text, "INT8", integer, "INT2", small, "BYTES", blob, "JSONDOC", json, "WRITESEQ", writesSeq)
	out := make([]string, len(schemaV1))
	for i, s := range schemaV1 {
		out[i] = r.Replace(s)
	}
	return out
}

// SchemaV3SQL returns the migration to schema version 3, with the column
// types of one database (as SchemaSQL) and extra statements that tune
// storage for that database. Version 3 keeps a message log's newest items
// in an open tail of slot rows that are overwritten in place
// (weft_checkpoint_tails), seals the tail into a chunk every N appends
// instead of merging chunks level by level, and lets a log be based on a
// prefix of another log (base_log, base_len) as well as on a blob row.
// Existing chunks all count as sealed.
func SchemaV3SQL(text, integer, small, blob string, tune ...string) []string {
	r := strings.NewReplacer("TEXT", text, "INT8", integer, "INT2", small, "BYTES", blob)
	out := []string{
		`ALTER TABLE weft_checkpoint_logs ADD COLUMN base_log INT8`,
		`ALTER TABLE weft_checkpoint_logs ADD COLUMN base_len INT8`,
		`ALTER TABLE weft_checkpoint_logs ADD COLUMN sealed INT8 NOT NULL DEFAULT 0`,
		`ALTER TABLE weft_checkpoint_logs ADD COLUMN tail INT8 NOT NULL DEFAULT 0`,
		`UPDATE weft_checkpoint_logs SET sealed = length`,
		`CREATE TABLE weft_checkpoint_tails (
	thread_id TEXT NOT NULL,
	ns TEXT NOT NULL,
	channel TEXT NOT NULL,
	log_id INT8 NOT NULL,
	slot INT8 NOT NULL,
	start INT8 NOT NULL,
	count INT8 NOT NULL,
	fmt INT2 NOT NULL,
	items BYTES NOT NULL,
	sizes BYTES NOT NULL,
	PRIMARY KEY (thread_id, ns, channel, log_id, slot)
)`,
	}
	for i := range out {
		out[i] = r.Replace(out[i])
	}
	return append(out, tune...)
}

var schemaV1 = []string{
	`CREATE TABLE weft_checkpoints (
	thread_id TEXT NOT NULL,
	ns TEXT NOT NULL,
	checkpoint_id TEXT NOT NULL,
	parent_id TEXT,
	ts INT8 NOT NULL,
	fmt INT2 NOT NULL,
	metadata JSONDOC NOT NULL,
	body BYTES NOT NULL,
	refs BYTES,
	PRIMARY KEY (thread_id, ns, checkpoint_id)
)`,
	`CREATE TABLE weft_checkpoint_blobs (
	thread_id TEXT NOT NULL,
	ns TEXT NOT NULL,
	channel TEXT NOT NULL,
	version INT8 NOT NULL,
	origin TEXT NOT NULL,
	kind INT2 NOT NULL,
	fmt INT2 NOT NULL,
	value BYTES,
	log_id INT8,
	log_len INT8,
	PRIMARY KEY (thread_id, ns, channel, version, origin)
)`,
	`CREATE TABLE weft_checkpoint_logs (
	thread_id TEXT NOT NULL,
	ns TEXT NOT NULL,
	channel TEXT NOT NULL,
	log_id INT8 NOT NULL,
	base_version INT8,
	base_origin TEXT,
	length INT8 NOT NULL,
	appends INT8 NOT NULL,
	depth INT8 NOT NULL,
	PRIMARY KEY (thread_id, ns, channel, log_id)
)`,
	`CREATE TABLE weft_checkpoint_chunks (
	thread_id TEXT NOT NULL,
	ns TEXT NOT NULL,
	channel TEXT NOT NULL,
	log_id INT8 NOT NULL,
	start INT8 NOT NULL,
	count INT8 NOT NULL,
	level INT2 NOT NULL,
	fmt INT2 NOT NULL,
	items BYTES NOT NULL,
	sizes BYTES NOT NULL,
	PRIMARY KEY (thread_id, ns, channel, log_id, start)
)`,
	`CREATE TABLE weft_checkpoint_writes (
	thread_id TEXT NOT NULL,
	ns TEXT NOT NULL,
	checkpoint_id TEXT NOT NULL,
	task_id TEXT NOT NULL,
	idx INT8 NOT NULL,
	channel TEXT NOT NULL,
	fmt INT2 NOT NULL,
	value BYTES,
	WRITESEQ
	PRIMARY KEY (thread_id, ns, checkpoint_id, task_id, idx)
)`,
}
