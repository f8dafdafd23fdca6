package records

import (
	"database/sql"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// fakeRow is one stored row handed to a scan function.
type fakeRow struct{ vals []any }

func (r *fakeRow) Next() bool { return false }
func (r *fakeRow) Err() error { return nil }
func (r *fakeRow) Close()     {}
func (r *fakeRow) Scan(dest ...any) error {
	for i, d := range dest {
		v := reflect.ValueOf(d).Elem()
		switch x := r.vals[i].(type) {
		case string:
			if ns, ok := d.(*sql.NullString); ok {
				*ns = sql.NullString{String: x, Valid: true}
				continue
			}
			v.SetString(x)
		case int64:
			v.SetInt(x)
		}
	}
	return nil
}

// Rows whose JSON columns hold any bytes decode without a panic, and a
// column that is not JSON is ErrCorrupt naming the record.
func FuzzDecodeStored(f *testing.F) {
	f.Add(`{"a":1}`, `{}`, `[1,2]`)
	f.Add(`{`, `null`, ``)
	f.Add("\xff", `{"configurable":{"x":[`, `"s"`)
	f.Fuzz(func(t *testing.T, a, b, c string) {
		check := func(err error) {
			if err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
		}
		_, err := scanThread(&fakeRow{[]any{"t", "o", int64(1), int64(2), a, b, "idle", c, a}})
		check(err)
		_, err = scanRun(&fakeRow{[]any{"r", "t", "o", "as", a, b, "pending", "reject", int64(1), int64(2), int64(1), "w"}})
		check(err)
		_, err = scanAssistant(&fakeRow{[]any{"a", "o", "g", "n", c, a, b, c, int64(1), int64(1), int64(2)}})
		check(err)
		// Merging into a stored object that is not one is ErrCorrupt too.
		if json.Valid([]byte(b)) {
			_, err = mergeObjects(json.RawMessage(a), json.RawMessage(b))
			if err != nil && !errors.Is(err, ErrCorrupt) && json.Valid([]byte(a)) {
				var m map[string]any
				if json.Unmarshal([]byte(b), &m) == nil {
					t.Fatalf("merging %q into %q: %v", b, a, err)
				}
			}
			_, _ = mergeConfig(json.RawMessage(a), json.RawMessage(b))
		}
	})
}
