// Package yamlstrict decodes YAML configuration into Go structs strictly:
// a key the struct does not have and a value of the wrong type are errors
// that name the key by its path ("approvals.step", "tools.draft_report.cost"),
// all of them at once, rather than yaml.v3's "line 7: field stpe not found
// in type config.Approvals".
//
// Keys are the fields' yaml tags (or their lower-cased names). Keys absent
// from the document leave the fields as they were, so a caller fills the
// defaults first and decodes over them; a list or a map given replaces the
// default whole. An empty value ("step:") keeps the field's default.
package yamlstrict

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// ErrInvalid is matched by every error Decode returns for bad input.
var ErrInvalid = errors.New("invalid configuration")

// KeyError is one problem with one key.
type KeyError struct {
	// Key is the key's path, dot-separated ("approvals.step"), with
	// list indexes in brackets ("intents.ANALYSIS[2]").
	Key string
	// Line is the key's line in the document, from 1.
	Line int
	// Problem says what is wrong and what was expected.
	Problem string
}

func (e *KeyError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("line %d: %s", e.Line, e.Problem)
	}
	return fmt.Sprintf("%s (line %d): %s", e.Key, e.Line, e.Problem)
}

// Is matches ErrInvalid.
func (e *KeyError) Is(target error) bool { return target == ErrInvalid }

// Errors is every problem Decode found; errors.As finds each *KeyError
// through it, and errors.Is matches ErrInvalid.
type Errors []*KeyError

func (e Errors) Error() string {
	parts := make([]string, len(e))
	for i, k := range e {
		parts[i] = k.Error()
	}
	return strings.Join(parts, "; ")
}

// Unwrap returns the problems.
func (e Errors) Unwrap() []error {
	out := make([]error, len(e))
	for i, k := range e {
		out[i] = k
	}
	return out
}

// Decode decodes the YAML document data into v, a pointer to a struct.
// Every unknown key and every value that does not fit its field is
// reported, as Errors. An empty document changes nothing.
func Decode(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("yamlstrict: Decode needs a non-nil pointer, got %T", v)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if len(doc.Content) == 0 {
		return nil
	}
	d := &decoder{}
	d.value(doc.Content[0], rv.Elem(), "")
	if len(d.errs) > 0 {
		return d.errs
	}
	return nil
}

type decoder struct{ errs Errors }

func (d *decoder) fail(n *yaml.Node, path, format string, args ...any) {
	d.errs = append(d.errs, &KeyError{Key: path, Line: n.Line, Problem: fmt.Sprintf(format, args...)})
}

var durationType = reflect.TypeFor[time.Duration]()

func (d *decoder) value(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // an empty value keeps the default
	}
	switch {
	case v.Type() == durationType:
		d.scalar(n, v, path, "a duration such as 30s or 2m")
	case v.Kind() == reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.value(n, v.Elem(), path)
	case v.Kind() == reflect.Struct:
		d.structure(n, v, path)
	case v.Kind() == reflect.Map:
		d.mapping(n, v, path)
	case v.Kind() == reflect.Slice:
		d.sequence(n, v, path)
	default:
		d.scalar(n, v, path, describe(v.Type()))
	}
}

func (d *decoder) scalar(n *yaml.Node, v reflect.Value, path, want string) {
	if n.Kind != yaml.ScalarNode {
		d.fail(n, path, "want %s, got a %s", want, kind(n))
		return
	}
	// yaml.v3 would truncate 1.5 into an int and read "yes" as true:
	// numbers and booleans must be written as such.
	tag := n.ShortTag()
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if v.Type() != durationType && tag != "!!int" {
			d.fail(n, path, "%q is not %s", n.Value, want)
			return
		}
	case reflect.Float32, reflect.Float64:
		if tag != "!!int" && tag != "!!float" {
			d.fail(n, path, "%q is not %s", n.Value, want)
			return
		}
	case reflect.Bool:
		if tag != "!!bool" {
			d.fail(n, path, "%q is not %s", n.Value, want)
			return
		}
	}
	p := reflect.New(v.Type())
	if err := n.Decode(p.Interface()); err != nil {
		d.fail(n, path, "%q is not %s", n.Value, want)
		return
	}
	v.Set(p.Elem())
}

func (d *decoder) structure(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "want a mapping of keys, got a %s", kind(n))
		return
	}
	fields := map[string]int{}
	var names []string
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		fields[name] = i
		names = append(names, name)
	}
	slices.Sort(names)
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		key := join(path, k.Value)
		idx, ok := fields[k.Value]
		switch {
		case !ok:
			d.fail(k, key, "unknown key (known: %s)", strings.Join(names, ", "))
			continue
		case seen[k.Value]:
			d.fail(k, key, "given twice")
			continue
		}
		seen[k.Value] = true
		d.value(val, v.Field(idx), key)
	}
}

func (d *decoder) mapping(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "want a mapping, got a %s", kind(n))
		return
	}
	// A map given replaces the default, as a list does.
	v.Set(reflect.MakeMap(v.Type()))
	kt, et := v.Type().Key(), v.Type().Elem()
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		key := join(path, k.Value)
		kv := reflect.New(kt).Elem()
		if err := k.Decode(kv.Addr().Interface()); err != nil {
			d.fail(k, key, "the key %q is not %s", k.Value, describe(kt))
			continue
		}
		if v.MapIndex(kv).IsValid() {
			d.fail(k, key, "given twice")
			continue
		}
		ev := reflect.New(et).Elem()
		d.value(val, ev, key)
		v.SetMapIndex(kv, ev)
	}
}

func (d *decoder) sequence(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.SequenceNode {
		d.fail(n, path, "want a list, got a %s", kind(n))
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, item := range n.Content {
		d.value(item, s.Index(i), fmt.Sprintf("%s[%d]", path, i))
	}
	v.Set(s)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func kind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return fmt.Sprintf("value (%q)", n.Value)
	}
	return "node"
}

func describe(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	}
	return "a " + t.String()
}
