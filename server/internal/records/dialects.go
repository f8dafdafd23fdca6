package records

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// SQLite is the SQLite flavour of the records schema.
var SQLite = &Dialect{
	Name:       "sqlite",
	Migrations: [][]string{schemaSQL(schemaV1, "TEXT", "INTEGER", "TEXT"), schemaV2, schemaSQL(schemaV3, "TEXT", "INTEGER", "TEXT"), schemaSQL(schemaV4, "TEXT", "INTEGER", "TEXT"), schemaSQL(schemaV5, "TEXT", "INTEGER", "TEXT")},
	Numbered:   true,
	Contains:   sqliteContains,
}

// Postgres is the PostgreSQL flavour of the records schema.
var Postgres = &Dialect{
	Name:        "postgres",
	Migrations:  [][]string{schemaSQL(schemaV1, "text", "bigint", "jsonb"), postgresV2, schemaSQL(schemaV3, "text", "bigint", "jsonb"), schemaSQL(schemaV4, "text", "bigint", "jsonb"), schemaSQL(schemaV5, "text", "bigint", "jsonb")},
	ForUpdate:   " FOR UPDATE",
	SkipLocked:  " FOR UPDATE SKIP LOCKED",
	LeaseNow:    "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000000 AS bigint)",
	WritableCTE: true,
	Contains: func(col string, filter map[string]any, arg func(any) string) (string, error) {
		b, err := json.Marshal(filter)
		if err != nil {
			return "", err
		}
		return col + " @> " + arg(string(b)) + "::jsonb", nil
	},
}

// postgresV2 is schemaV2 and, since a thread's row is updated when a run
// is created and when it ends, room left on the pages of threads: those
// updates become HOT updates, which write no index entry.
var postgresV2 = append(slices.Clip(schemaV2), `ALTER TABLE weft_server_threads SET (fillfactor = 50)`)

// sqliteContains matches each leaf of filter with json_extract: scalars
// by type and value, objects key by key, arrays as a whole (their JSON
// text, normalised).
func sqliteContains(col string, filter map[string]any, arg func(any) string) (string, error) {
	var conds []string
	var walk func(path string, m map[string]any) error
	walk = func(path string, m map[string]any) error {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if strings.ContainsAny(k, `"\`) {
				return fmt.Errorf("filter key %q: a key may not contain '\"' or '\\'", k)
			}
			p := path + `."` + k + `"`
			switch v := m[k].(type) {
			case map[string]any:
				conds = append(conds, "json_type("+col+", "+arg(p)+") = 'object'")
				if err := walk(p, v); err != nil {
					return err
				}
			case []any:
				b, err := json.Marshal(v)
				if err != nil {
					return err
				}
				conds = append(conds, "json_type("+col+", "+arg(p)+") = 'array' AND json(json_extract("+col+", "+arg(p)+")) = json("+arg(string(b))+")")
			case string:
				conds = append(conds, "json_type("+col+", "+arg(p)+") = 'text' AND json_extract("+col+", "+arg(p)+") = "+arg(v))
			case bool:
				t := "false"
				if v {
					t = "true"
				}
				conds = append(conds, "json_type("+col+", "+arg(p)+") = '"+t+"'")
			case nil:
				conds = append(conds, "json_type("+col+", "+arg(p)+") = 'null'")
			case float64:
				conds = append(conds, "json_type("+col+", "+arg(p)+") IN ('integer', 'real') AND json_extract("+col+", "+arg(p)+") = "+arg(v))
			case json.Number:
				f, err := v.Float64()
				if err != nil {
					return err
				}
				conds = append(conds, "json_type("+col+", "+arg(p)+") IN ('integer', 'real') AND json_extract("+col+", "+arg(p)+") = "+arg(f))
			default:
				return fmt.Errorf("filter key %q: unsupported value of type %T", k, v)
			}
		}
		return nil
	}
	if err := walk("$", filter); err != nil {
		return "", err
	}
	if len(conds) == 0 {
		return "1 = 1", nil
	}
	return "(" + strings.Join(conds, " AND ") + ")", nil
}
