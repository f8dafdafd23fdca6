package tool

import (
	"encoding"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// fieldsDecoder fills a struct from arguments already decoded as a
// map[string]any (jsonx.DecodeCanonical), without decoding the JSON again.
// It covers structs of string, bool, integer and float64 fields named by
// plain json tags; New builds none for other types, and it declines (the
// caller then uses json.Unmarshal) for any key or value it is not sure to
// treat exactly as encoding/json does.
type fieldsDecoder struct {
	fields map[string]fieldPlan
	// required counts the fields jsonschema.For makes required: those
	// without omitempty or omitzero.
	required int
}

type fieldPlan struct {
	index    int
	kind     reflect.Kind
	required bool
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// newFieldsDecoder returns the decoder for t, or nil when t is not such a
// struct.
func newFieldsDecoder(t reflect.Type) *fieldsDecoder {
	if t.Kind() != reflect.Struct || reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return nil
	}
	d := &fieldsDecoder{fields: map[string]fieldPlan{}}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return nil
		}
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if strings.Contains(opts, "string") || !plainName(name) {
			return nil
		}
		if name == "" {
			name = f.Name
		}
		ft := f.Type
		if ft.PkgPath() != "" && ft.NumMethod() > 0 || reflect.PointerTo(ft).Implements(jsonUnmarshaler) || reflect.PointerTo(ft).Implements(textUnmarshaler) {
			return nil
		}
		switch ft.Kind() {
		case reflect.String, reflect.Bool, reflect.Float64, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		default:
			return nil
		}
		if _, dup := d.fields[name]; dup {
			return nil
		}
		required := true
		for _, o := range strings.Split(opts, ",") {
			if o == "omitempty" || o == "omitzero" {
				required = false
			}
		}
		if required {
			d.required++
		}
		d.fields[name] = fieldPlan{i, ft.Kind(), required}
	}
	return d
}

// plainName reports whether a json tag's name is one encoding/json takes
// as it is: letters, digits and '_' or '-'.
func plainName(s string) bool {
	for _, c := range s {
		if !(c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// accepts reports whether the decoded JSON value val surely suits the
// field: a string, bool or float64 of the field's kind, or a whole number
// in range for an integer field. null is not accepted.
func (p fieldPlan) accepts(val any) bool {
	switch p.kind {
	case reflect.String:
		_, ok := val.(string)
		return ok
	case reflect.Bool:
		_, ok := val.(bool)
		return ok
	case reflect.Float64:
		_, ok := val.(float64)
		return ok
	}
	x, ok := val.(float64)
	return ok && x == math.Trunc(x) && intFits(x, p.kind)
}

// decode fills the struct dst points to from v and reports whether it
// could; when not, dst may be partly filled.
func (d *fieldsDecoder) decode(v any, dst reflect.Value) bool {
	obj, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for k, val := range obj {
		p, ok := d.fields[k]
		if !ok {
			// Unknown, or matched by case folding: encoding/json decides.
			return false
		}
		if val == nil {
			continue // null leaves a field as it is
		}
		if !p.accepts(val) {
			return false
		}
		f := dst.Field(p.index)
		switch p.kind {
		case reflect.String:
			f.SetString(val.(string))
		case reflect.Bool:
			f.SetBool(val.(bool))
		case reflect.Float64:
			f.SetFloat(val.(float64))
		default:
			f.SetInt(int64(val.(float64)))
		}
	}
	return true
}

// valid reports whether v, decoded JSON, surely satisfies the schema
// jsonschema.For derives for the struct (properties of these types, no
// others, the required ones present, no nulls, integers whole and in
// range), so validating it against that schema can be skipped, and decode
// will fill the struct. False means not sure: validate.
func (d *fieldsDecoder) valid(v any) bool {
	obj, ok := v.(map[string]any)
	if !ok {
		return false
	}
	required := 0
	for k, val := range obj {
		p, ok := d.fields[k]
		if !ok || !p.accepts(val) {
			return false
		}
		if p.required {
			required++
		}
	}
	return required == d.required
}

// intFits reports whether the whole number x fits an integer of kind k.
func intFits(x float64, k reflect.Kind) bool {
	bits := 64
	switch k {
	case reflect.Int8:
		bits = 8
	case reflect.Int16:
		bits = 16
	case reflect.Int32:
		bits = 32
	case reflect.Int:
		bits = strconv.IntSize
	}
	limit := math.Ldexp(1, bits-1)
	return x >= -limit && x < limit
}
