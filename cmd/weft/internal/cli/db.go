package cli

import (
	"context"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/weftlabs/weft/checkpoint/dburl"
)

// addDBFlag gives cmd the --db flag, defaulting to $WEFT_DATABASE_URL;
// what says what the database holds, for the help text.
func addDBFlag(cmd *cobra.Command, dsn *string, what string) {
	cmd.Flags().StringVar(dsn, "db", os.Getenv(dburl.EnvVar), what+": an SQLite file, sqlite:PATH or postgres://USER@HOST:PORT/DBNAME (default $"+dburl.EnvVar+", else "+dburl.DefaultPath+")")
}

// dbSource names where the --db value came from, for errors: the flag
// when it was given, else the variable when it is set, else the default
// file.
func dbSource(cmd *cobra.Command) string {
	if cmd.Flags().Changed("db") {
		return "--db"
	}
	if os.Getenv(dburl.EnvVar) != "" {
		return "$" + dburl.EnvVar
	}
	return "database " + dburl.DefaultPath
}

// openDB opens the database --db names, its errors naming the flag or
// the variable the connection string came from.
func openDB(ctx context.Context, cmd *cobra.Command, dsn string) (*dburl.DB, error) {
	return dburl.Open(ctx, dsn, dburl.Options{Source: dbSource(cmd)})
}

// dbArg is the --db argument that names the same database again in a
// command printed for the user to run: empty unless --db was given.
func dbArg(cmd *cobra.Command, dsn string) string {
	if !cmd.Flags().Changed("db") {
		return ""
	}
	return " --db " + shellQuote(dsn)
}

// shellQuote quotes s for a POSIX shell unless every character of it is
// one that needs no quoting.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@,+=%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
