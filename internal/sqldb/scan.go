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
		switch s := src.(type) {
		case string:
			*d = s
			return nil
		case []byte:
			*d = string(s)
			return nil
		case int64:
			*d = strconv.FormatInt(s, 10)
			return nil
		case float64:
			*d = strconv.FormatFloat(s, 'g', -1, 64)
			return nil
		case bool:
			*d = strconv.FormatBool(s)
			return nil
		case time.Time:
			*d = s.Format(time.RFC3339Nano)
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
		case string:
			*d = []byte(s)
			return nil
		case int64:
			*d = strconv.AppendInt(nil, s, 10)
			return nil
		case float64:
			*d = strconv.AppendFloat(nil, s, 'g', -1, 64)
			return nil
		case bool:
			*d = strconv.AppendBool(nil, s)
			return nil
		case time.Time:
			*d = s.AppendFormat(nil, time.RFC3339Nano)
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
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		s, err := numberText(src)
		if err != nil {
			return fmt.Errorf("converting %T to %s: %w", src, dv.Type(), err)
		}
		n, err := strconv.ParseInt(s, 10, dv.Type().Bits())
		if err != nil {
			return fmt.Errorf("converting %T (%q) to %s: %w", src, s, dv.Type(), err)
		}
		dv.SetInt(n)
		return nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		s, err := numberText(src)
		if err != nil {
			return fmt.Errorf("converting %T to %s: %w", src, dv.Type(), err)
		}
		n, err := strconv.ParseUint(s, 10, dv.Type().Bits())
		if err != nil {
			return fmt.Errorf("converting %T (%q) to %s: %w", src, s, dv.Type(), err)
		}
		dv.SetUint(n)
		return nil
	case reflect.Float32, reflect.Float64:
		s, err := numberText(src)
		if err != nil {
			return fmt.Errorf("converting %T to %s: %w", src, dv.Type(), err)
		}
		f, err := strconv.ParseFloat(s, dv.Type().Bits())
		if err != nil {
			return fmt.Errorf("converting %T (%q) to %s: %w", src, s, dv.Type(), err)
		}
		dv.SetFloat(f)
		return nil
	}
	return fmt.Errorf("unsupported Scan, storing driver value type %T into type %T", src, dest)
}

// numberText is the text a number is parsed from, as database/sql
// converts a value into an integer or float destination: an integer or
// float as strconv writes it, text as it is, and nothing else.
func numberText(src driver.Value) (string, error) {
	switch s := src.(type) {
	case int64:
		return strconv.FormatInt(s, 10), nil
	case float64:
		return strconv.FormatFloat(s, 'g', -1, 64), nil
	case string:
		return s, nil
	case []byte:
		return string(s), nil
	}
	return "", fmt.Errorf("not a number: %T", src)
}
