package sqldb

import (
	"bytes"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"time"
)

// errNilPtr is the error for a nil pointer given to Scan.
var errNilPtr = errors.New("destination pointer is nil")

// convertAssign stores src, a value a driver returned, in dest, a pointer
// given to Scan, as database/sql's Rows.Scan does for the destinations
// weft's stores use: *string, *[]byte, *any, *bool, the integer and float
// kinds (named types too), *time.Time, pointers to pointers (nil for
// NULL), and sql.Scanner (sql.NullString and the other sql.Null types).
// A []byte is copied wherever dest keeps it: a driver may reuse its
// buffers for the next row. Anything else is an error, as is NULL into a
// destination that cannot hold it.
func convertAssign(dest any, src driver.Value) error {
	// The common pairs first, without reflection.
	switch d := dest.(type) {
	case *string:
		if d == nil {
			return errNilPtr
		}
		if t, ok := textOf(src); ok {
			*d = t
			return nil
		}
	case *[]byte:
		if d == nil {
			return errNilPtr
		}
		switch s := src.(type) {
		case nil:
			*d = nil
			return nil
		case []byte:
			*d = bytes.Clone(s)
			return nil
		}
		if t, ok := textOf(src); ok {
			*d = []byte(t)
			return nil
		}
	case *any:
		if d == nil {
			return errNilPtr
		}
		if b, ok := src.([]byte); ok {
			*d = bytes.Clone(b)
		} else {
			*d = src
		}
		return nil
	case *int64:
		if d == nil {
			return errNilPtr
		}
		if s, ok := src.(int64); ok {
			*d = s
			return nil
		}
	case *int:
		if d == nil {
			return errNilPtr
		}
		if s, ok := src.(int64); ok && int64(int(s)) == s {
			*d = int(s)
			return nil
		}
	case *float64:
		if d == nil {
			return errNilPtr
		}
		switch s := src.(type) {
		case float64:
			*d = s
			return nil
		case int64:
			*d = float64(s)
			return nil
		}
	case *bool:
		if d == nil {
			return errNilPtr
		}
		if src == nil {
			return errors.New("converting NULL to bool is unsupported")
		}
		b, err := driver.Bool.ConvertValue(src)
		if err != nil {
			return err
		}
		*d = b.(bool)
		return nil
	case *time.Time:
		if d == nil {
			return errNilPtr
		}
		if s, ok := src.(time.Time); ok {
			*d = s
			return nil
		}
	case sql.Scanner:
		// database/sql hands a Scanner the driver's value as it is; it
		// must not keep a []byte (Scanner's contract), and the sql.Null
		// types copy it.
		return d.Scan(src)
	case nil:
		return errors.New("destination is nil")
	}
	return convertReflect(dest, src)
}

// convertReflect is convertAssign for destinations of a named type (type
// Status string), pointers to pointers, and the conversions between
// kinds that database/sql makes (a number read from text, an int64 into
// an int32), with its rules: a value of the destination's kind converts
// as it is, a number is parsed from the value's text, a named string
// type takes text only.
func convertReflect(dest any, src driver.Value) error {
	dpv := reflect.ValueOf(dest)
	if dpv.Kind() != reflect.Pointer {
		return fmt.Errorf("destination not a pointer: %T", dest)
	}
	if dpv.IsNil() {
		return errNilPtr
	}
	dv := dpv.Elem()
	if dv.Kind() == reflect.Pointer {
		if src == nil {
			dv.SetZero()
			return nil
		}
		v := reflect.New(dv.Type().Elem())
		if err := convertAssign(v.Interface(), src); err != nil {
			return err
		}
		dv.Set(v)
		return nil
	}
	if src == nil {
		return fmt.Errorf("converting NULL to %s is unsupported", dv.Type())
	}
	switch src.(type) {
	case int64, float64, bool, string, []byte, time.Time:
	default:
		return fmt.Errorf("unsupported driver value type %T", src)
	}
	// A value of the destination's kind converts as it is (a []byte is
	// copied).
	if sv := reflect.ValueOf(src); sv.Kind() == dv.Kind() && sv.Type().ConvertibleTo(dv.Type()) {
		if b, ok := src.([]byte); ok {
			dv.SetBytes(bytes.Clone(b))
		} else {
			dv.Set(sv.Convert(dv.Type()))
		}
		return nil
	}
	switch dv.Kind() {
	case reflect.String:
		// Text only, as database/sql: a number does not become a named
		// string type.
		if b, ok := src.([]byte); ok {
			dv.SetString(string(b))
			return nil
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		s, err := numberText(src)
		if err != nil {
			return fmt.Errorf("converting %T to %s: %w", src, dv.Type(), err)
		}
		bits := dv.Type().Bits()
		switch {
		case dv.CanInt():
			var n int64
			if n, err = strconv.ParseInt(s, 10, bits); err == nil {
				dv.SetInt(n)
			}
		case dv.CanUint():
			var n uint64
			if n, err = strconv.ParseUint(s, 10, bits); err == nil {
				dv.SetUint(n)
			}
		default:
			var f float64
			if f, err = strconv.ParseFloat(s, bits); err == nil {
				dv.SetFloat(f)
			}
		}
		if err != nil {
			return fmt.Errorf("converting %T (%q) to %s: %w", src, s, dv.Type(), err)
		}
		return nil
	}
	return fmt.Errorf("unsupported Scan, storing driver value type %T into type %T", src, dest)
}

// textOf is a driver value as text, as database/sql converts it into a
// string or []byte destination: text as it is, numbers and booleans as
// strconv writes them, a time in RFC 3339 with nanoseconds. NULL and
// other types have none.
func textOf(src driver.Value) (string, bool) {
	switch s := src.(type) {
	case string:
		return s, true
	case []byte:
		return string(s), true
	case int64:
		return strconv.FormatInt(s, 10), true
	case float64:
		return strconv.FormatFloat(s, 'g', -1, 64), true
	case bool:
		return strconv.FormatBool(s), true
	case time.Time:
		return s.Format(time.RFC3339Nano), true
	}
	return "", false
}

// numberText is the text a number is parsed from, as database/sql
// converts a value into an integer or float destination: an integer or
// float as strconv writes it, text as it is, and nothing else.
func numberText(src driver.Value) (string, error) {
	switch src.(type) {
	case int64, float64, string, []byte:
		t, _ := textOf(src)
		return t, nil
	}
	return "", fmt.Errorf("not a number: %T", src)
}
