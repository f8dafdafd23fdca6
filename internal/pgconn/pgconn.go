// Package pgconn holds what weft's PostgreSQL packages share about
// connecting.
package pgconn

import (
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PoolConfig parses a connection string for a pool that sends statements
// with the extended protocol's unnamed statement (QueryExecModeExec), never
// as named prepared statements, so it works behind PgBouncer in transaction
// mode; a string that names default_query_exec_mode keeps its own choice.
// The error is pgxpool's, for callers to wrap.
func PoolConfig(url string) (*pgxpool.Config, error) {
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	if !strings.Contains(url, "default_query_exec_mode") {
		pc.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
	}
	return pc, nil
}
