// Package sqlitetest holds what the tests of weft's SQLite stores share.
package sqlitetest

import (
	"database/sql"
	"fmt"
	"testing"
)

// Column is a stored column FuzzColumns overwrites. It keeps the type its
// schema gives it (as PostgreSQL enforces): integers stay integers, bytes
// stay bytes and text stays text, whatever their contents.
type Column struct {
	Table, Col string
	// Kind is 'i' (integer), 'b' (bytes) or 't' (text).
	Kind byte
}

// Seed is an input of FuzzColumns: the column (an index into its
// columns), the row (an index into the table's rows), and the contents:
// n for integers, data otherwise.
type Seed struct {
	Col, Row uint8
	N        int64
	Data     []byte
}

// FuzzColumns overwrites one column of one row of a real database with
// arbitrary contents of the column's type, calls read, which reads the
// database back every way its store can and reports through t what went
// wrong, then restores the row. what names the change for read's
// messages. Every column is seeded with a huge integer or an overlong
// varint, with -1 or JSON of a shape the store does not expect, and with
// 0 or broken JSON, besides seeds.
func FuzzColumns(f *testing.F, db *sql.DB, cols []Column, seeds []Seed, read func(t *testing.T, what string)) {
	f.Helper()
	// The rowids of each table, to address a row by a small number.
	rowids := map[string][]int64{}
	for _, c := range cols {
		if rowids[c.Table] != nil {
			continue
		}
		rs, err := db.Query(`SELECT rowid FROM ` + c.Table + ` ORDER BY rowid`)
		if err != nil {
			f.Fatal(err)
		}
		for rs.Next() {
			var id int64
			if err := rs.Scan(&id); err != nil {
				f.Fatal(err)
			}
			rowids[c.Table] = append(rowids[c.Table], id)
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			f.Fatal(err)
		}
		if len(rowids[c.Table]) == 0 {
			f.Fatalf("table %s has no row to change", c.Table)
		}
	}
	for i := range cols {
		f.Add(uint8(i), uint8(0), int64(1<<62), []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01})
		f.Add(uint8(i), uint8(1), int64(-1), []byte(`{"cv":{"msgs":3}}`))
		f.Add(uint8(i), uint8(0), int64(0), []byte(`{"text":`))
	}
	for _, s := range seeds {
		f.Add(s.Col, s.Row, s.N, s.Data)
	}
	f.Fuzz(func(t *testing.T, col, row uint8, n int64, data []byte) {
		c := cols[int(col)%len(cols)]
		ids := rowids[c.Table]
		id := ids[int(row)%len(ids)]
		var old any
		if err := db.QueryRow(`SELECT `+c.Col+` FROM `+c.Table+` WHERE rowid = ?`, id).Scan(&old); err != nil {
			t.Fatal(err)
		}
		var v any = data
		switch c.Kind {
		case 'i':
			v = n
		case 't':
			v = string(data)
		}
		if _, err := db.Exec(`UPDATE `+c.Table+` SET `+c.Col+` = ? WHERE rowid = ?`, v, id); err != nil {
			return // a key the table already has
		}
		defer func() {
			if _, err := db.Exec(`UPDATE `+c.Table+` SET `+c.Col+` = ? WHERE rowid = ?`, old, id); err != nil {
				t.Fatal(err)
			}
		}()
		read(t, fmt.Sprintf("%s.%s = %v", c.Table, c.Col, v))
	})
}
