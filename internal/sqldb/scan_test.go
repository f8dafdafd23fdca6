package sqldb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// echoDriver is a database/sql driver whose every query returns one row
// of one column: its first argument. convertAssign is compared with what
// database/sql's Rows.Scan makes of the same driver value.
type echoDriver struct{}

type echoConn struct{}

type echoStmt struct{}

type echoRows struct {
	v    driver.Value
	done bool
}

func (echoDriver) Open(string) (driver.Conn, error)          { return echoConn{}, nil }
func (echoConn) Prepare(string) (driver.Stmt, error)         { return echoStmt{}, nil }
func (echoConn) Close() error                                { return nil }
func (echoConn) Begin() (driver.Tx, error)                   { return nil, fmt.Errorf("echo: no transactions") }
func (echoConn) CheckNamedValue(*driver.NamedValue) error    { return nil }
func (echoStmt) Close() error                                { return nil }
func (echoStmt) NumInput() int                               { return 1 }
func (echoStmt) Exec([]driver.Value) (driver.Result, error)  { return nil, fmt.Errorf("echo: no exec") }
func (echoStmt) Query(a []driver.Value) (driver.Rows, error) { return &echoRows{v: a[0]}, nil }
func (*echoRows) Columns() []string                          { return []string{"v"} }
func (*echoRows) Close() error                               { return nil }
func (r *echoRows) Next(dest []driver.Value) error {
	if r.done {
		return io.EOF
	}
	r.done = true
	dest[0] = r.v
	return nil
}

var (
	echoOnce sync.Once
	echoDB   *sql.DB
)

// stdScan scans src through database/sql into dest.
func stdScan(t testing.TB, src driver.Value, dest any) error {
	echoOnce.Do(func() {
		sql.Register("sqldb-echo", echoDriver{})
		echoDB, _ = sql.Open("sqldb-echo", "")
	})
	rows, err := echoDB.QueryContext(context.Background(), "echo", src)
	if err != nil {
		t.Fatalf("echo query of %T: %v", src, err)
	}
	defer rows.Close()
	if !rows.Next() {
		t.Fatalf("echo query of %T: no row: %v", src, rows.Err())
	}
	return rows.Scan(dest)
}

type (
	namedString string
	namedInt    int64
	namedBool   bool
	namedFloat  float32
)

// scanDests makes one fresh destination of each type the comparison
// covers: those weft's stores scan into, and their neighbours.
var scanDests = []func() any{
	func() any { return new(string) },
	func() any { return new([]byte) },
	func() any { return new(any) },
	func() any { return new(int64) },
	func() any { return new(int) },
	func() any { return new(int32) },
	func() any { return new(uint8) },
	func() any { return new(uint64) },
	func() any { return new(float64) },
	func() any { return new(float32) },
	func() any { return new(bool) },
	func() any { return new(time.Time) },
	func() any { return new(*string) },
	func() any { return new(*int64) },
	func() any { return new(*[]byte) },
	func() any { return new(sql.NullString) },
	func() any { return new(sql.NullInt64) },
	func() any { return new(sql.NullInt32) },
	func() any { return new(sql.NullFloat64) },
	func() any { return new(sql.NullBool) },
	func() any { return new(sql.NullTime) },
	func() any { return new(sql.Null[string]) },
	func() any { return new(namedString) },
	func() any { return new(namedInt) },
	func() any { return new(namedBool) },
	func() any { return new(namedFloat) },
	func() any { return new(json.RawMessage) },
	func() any { return new(struct{ X int }) },
}

// compareScan checks that convertAssign and database/sql agree on src
// into every destination type: both fail, or both store equal values.
func compareScan(t *testing.T, src driver.Value) {
	t.Helper()
	for _, mk := range scanDests {
		want, got := mk(), mk()
		werr := stdScan(t, src, want)
		gerr := convertAssign(got, src)
		if (werr == nil) != (gerr == nil) {
			t.Errorf("%T (%#v) into %T: convertAssign's error %v, database/sql's %v", src, src, got, gerr, werr)
			continue
		}
		if werr != nil {
			continue
		}
		if !sameValue(reflect.ValueOf(got).Elem().Interface(), reflect.ValueOf(want).Elem().Interface()) {
			t.Errorf("%T (%#v) into %T: convertAssign stored %#v, database/sql %#v", src, src, got, reflect.ValueOf(got).Elem().Interface(), reflect.ValueOf(want).Elem().Interface())
		}
	}
}

// sameValue compares two stored values by type and by what they hold,
// through pointers, with NaN equal to itself.
func sameValue(a, b any) bool {
	return reflect.TypeOf(a) == reflect.TypeOf(b) && show(a) == show(b)
}

func show(v any) string {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && !rv.IsNil() {
		return "&" + show(rv.Elem().Interface())
	}
	return fmt.Sprintf("%#v", v)
}

func TestConvertAssignMatchesDatabaseSQL(t *testing.T) {
	srcs := []driver.Value{
		nil,
		int64(0), int64(1), int64(-1), int64(42), int64(255), int64(256), int64(-129),
		int64(math.MaxInt32), int64(math.MaxInt32 + 1), int64(math.MaxInt64), int64(math.MinInt64),
		0.0, 1.0, 1.5, -2.25, 1e300, math.Inf(1), math.NaN(), 3e10,
		true, false,
		"", "x", "hello", "42", "-7", "1.5", "true", "0", "1", "f", " 1", "1e3", "9223372036854775808",
		[]byte(nil), []byte{}, []byte("blob"), []byte("12"), []byte("true"), []byte{0, 255},
		time.Date(2026, 11, 27, 1, 2, 3, 456, time.UTC),
		time.Time{},
	}
	for _, src := range srcs {
		compareScan(t, src)
	}
}

// The values convertAssign stores, and the errors it gives, spelled out
// for the destinations weft's stores scan into.
func TestConvertAssign(t *testing.T) {
	ts := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	s := "prev"
	tests := []struct {
		name    string
		src     driver.Value
		dest    any
		want    any
		wantErr string
	}{
		{"text into string", "abc", new(string), "abc", ""},
		{"blob into string", []byte("abc"), new(string), "abc", ""},
		{"integer into string", int64(-12), new(string), "-12", ""},
		{"float into string", 0.5, new(string), "0.5", ""},
		{"time into string", ts, new(string), "2026-01-02T03:04:05.000000006Z", ""},
		{"NULL into string", nil, new(string), nil, "converting NULL to string is unsupported"},
		{"blob into bytes", []byte{1, 2}, new([]byte), []byte{1, 2}, ""},
		{"text into bytes", "ab", new([]byte), []byte("ab"), ""},
		{"NULL into bytes", nil, new([]byte), []byte(nil), ""},
		{"integer into int64", int64(7), new(int64), int64(7), ""},
		{"text into int64", "7", new(int64), int64(7), ""},
		{"float into int64", 2.0, new(int64), int64(2), ""},
		{"fraction into int64", 2.5, new(int64), nil, `converting float64 ("2.5") to int64`},
		{"NULL into int64", nil, new(int64), nil, "converting NULL to int64 is unsupported"},
		{"integer into int", int64(7), new(int), 7, ""},
		{"too big for int32", int64(math.MaxInt32 + 1), new(int32), nil, "value out of range"},
		{"integer into float64", int64(3), new(float64), 3.0, ""},
		{"NULL into float64", nil, new(float64), nil, "converting NULL to float64 is unsupported"},
		{"1 into bool", int64(1), new(bool), true, ""},
		{"0 into bool", int64(0), new(bool), false, ""},
		{"2 into bool", int64(2), new(bool), nil, "couldn't convert 2 into type bool"},
		{"NULL into bool", nil, new(bool), nil, "converting NULL to bool is unsupported"},
		{"blob into any", []byte("x"), new(any), []byte("x"), ""},
		{"NULL into any", nil, new(any), nil, ""},
		{"NULL into *string", nil, &[]*string{&s}[0], (*string)(nil), ""},
		{"text into *string", "v", new(*string), &[]string{"v"}[0], ""},
		{"NULL into NullString", nil, new(sql.NullString), sql.NullString{}, ""},
		{"text into NullString", "v", new(sql.NullString), sql.NullString{String: "v", Valid: true}, ""},
		{"integer into NullInt64", int64(5), new(sql.NullInt64), sql.NullInt64{Int64: 5, Valid: true}, ""},
		{"time into Time", ts, new(time.Time), ts, ""},
		{"text into Time", "2026-01-02", new(time.Time), nil, "unsupported Scan, storing driver value type string into type *time.Time"},
		{"integer into named string", int64(1), new(namedString), nil, "unsupported Scan"},
		{"text into named string", "run", new(namedString), namedString("run"), ""},
		{"struct", int64(1), new(struct{ X int }), nil, "unsupported Scan"},
		{"not a pointer", int64(1), 1, nil, "destination not a pointer: int"},
		{"nil pointer", int64(1), (*int64)(nil), nil, "destination pointer is nil"},
		{"nil", int64(1), nil, nil, "destination is nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := convertAssign(tt.dest, tt.src)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := reflect.ValueOf(tt.dest).Elem().Interface(); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("stored %#v, want %#v", got, tt.want)
			}
		})
	}
}

// A []byte stored in a destination is a copy: the driver may reuse its
// buffer for the next row.
func TestConvertAssignCopiesBytes(t *testing.T) {
	buf := []byte("abc")
	var b []byte
	var a any
	var r json.RawMessage
	for _, dest := range []any{&b, &a, &r} {
		if err := convertAssign(dest, buf); err != nil {
			t.Fatal(err)
		}
	}
	buf[0] = 'X'
	if string(b) != "abc" || string(a.([]byte)) != "abc" || string(r) != "abc" {
		t.Fatalf("after the driver's buffer changed: %q, %q, %q, want abc each", b, a, r)
	}
}

// convertAssign agrees with database/sql's Rows.Scan on every driver
// value into every destination type of scanDests.
func FuzzConvertAssign(f *testing.F) {
	f.Add(uint8(0), int64(1), 1.5, "x", []byte("y"))
	f.Add(uint8(1), int64(-1), math.Inf(-1), "12", []byte("12"))
	f.Add(uint8(2), int64(math.MaxInt64), 0.0, "true", []byte(nil))
	f.Add(uint8(3), int64(0), math.Copysign(0, -1), "", []byte{})
	f.Add(uint8(4), int64(1e12), 1e-300, "1e3", []byte("1.5"))
	f.Add(uint8(5), int64(0), 0.0, "", []byte(nil))
	f.Add(uint8(6), int64(1700000000), 0.0, "", []byte(nil))
	f.Fuzz(func(t *testing.T, kind uint8, i int64, fl float64, s string, b []byte) {
		var src driver.Value
		switch kind % 7 {
		case 0:
			src = i
		case 1:
			src = fl
		case 2:
			src = s
		case 3:
			src = b
		case 4:
			src = i%2 == 0
		case 5:
			src = nil
		case 6:
			src = time.Unix(i%(1<<40), int64(fl)%1e9).UTC()
		}
		compareScan(t, src)
	})
}
