package graph

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/weftlabs/weft/internal/jsonx"
)

// InputError is a run's JSON input (or a state update given as JSON) that
// does not fit the graph: a key that names no channel, or a value that does
// not decode into its channel's type. errors.Is(err, ErrInvalidInput) is
// true for it.
type InputError struct {
	// Key is the state key at fault; empty when the input as a whole is
	// wrong (not a JSON object).
	Key string
	Err error
}

func (e *InputError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("graph: invalid input: %v", e.Err)
	}
	return fmt.Sprintf("graph: invalid input for key %q: %v", e.Key, e.Err)
}

// Unwrap returns the cause.
func (e *InputError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrInvalidInput) true.
func (e *InputError) Is(target error) bool { return target == ErrInvalidInput }

// inputDecoder is implemented by every channel type: it turns a JSON value
// into a write of the channel, decoded into the channel's type, as a client
// that knows nothing of Go sends it.
type inputDecoder interface {
	decodeInput(data json.RawMessage) (Update, error)
}

// DecodeInput turns a run's input as JSON (an object of state key to
// value, the LangGraph Server API's "input") into the Update to run the
// graph with. Each value is decoded into its channel's type; a messages
// channel takes a list of messages, a single message or a string (a human
// message), in LangChain's forms ({"type": "human", ...} or {"role":
// "user", ...}). Only the graph's input keys (Builder.Input) are accepted:
// any other key is an *InputError naming it. JSON null (or no input at
// all) is the zero Update, which continues from the thread's checkpoint;
// an empty object starts a new run that writes nothing.
func (g *Graph) DecodeInput(data []byte) (Update, error) {
	return g.decodeObject(data, g.inputKeys)
}

// DecodeUpdate is DecodeInput for a state update (UpdateState's values, a
// command's "update"): every state key may be written, not only the input
// keys. JSON null is an update that writes nothing.
func (g *Graph) DecodeUpdate(data []byte) (Update, error) {
	u, err := g.decodeObject(data, g.stateKeys)
	if err != nil {
		return Update{}, err
	}
	if u.IsZero() {
		return Input(), nil
	}
	return u, nil
}

func (g *Graph) decodeObject(data []byte, allowed []string) (Update, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || bytes.Equal(data, []byte("null")) {
		return Update{}, nil
	}
	if data[0] != '{' {
		return Update{}, &InputError{Err: fmt.Errorf("want a JSON object of state keys (%s), got %s", strings.Join(allowed, ", "), jsonKind(data))}
	}
	if json.Valid(data) {
		if u, ok, err := g.decodeValidObject(data, allowed); ok {
			return u, err
		}
	}
	return g.decodeObjectTokens(data, allowed)
}

// decodeObjectTokens is decodeObject for any data starting with '{', read
// token by token.
func (g *Graph) decodeObjectTokens(data []byte, allowed []string) (Update, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil {
		return Update{}, &InputError{Err: err}
	}
	u := Input()
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return Update{}, &InputError{Err: err}
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return Update{}, &InputError{Key: key, Err: err}
		}
		if !slices.Contains(allowed, key) {
			return Update{}, &InputError{Key: key, Err: fmt.Errorf("the graph has no such key; it takes %s", strings.Join(allowed, ", "))}
		}
		d, ok := g.decls[key].(inputDecoder)
		if !ok {
			return Update{}, &InputError{Key: key, Err: errors.New("the channel cannot be written from JSON")}
		}
		w, err := d.decodeInput(raw)
		if err != nil {
			return Update{}, &InputError{Key: key, Err: err}
		}
		u = u.And(w)
	}
	if _, err := dec.Token(); err != nil {
		return Update{}, &InputError{Err: err}
	}
	return u, nil
}

// decodeValidObject is decodeObject for data that holds one valid JSON
// object (json.Valid), read without a json.Decoder's tokens and copies of
// each value. ok is false when a key has escapes: then decodeObject reads
// the object, as it does invalid JSON, with the errors it gives.
func (g *Graph) decodeValidObject(data []byte, allowed []string) (u Update, ok bool, err error) {
	u = Input()
	i := jsonx.SkipSpace(data, 1)
	for data[i] != '}' {
		end := jsonx.ValueEnd(data, i)
		kb := data[i+1 : end-1]
		if bytes.IndexByte(kb, '\\') >= 0 || !utf8.Valid(kb) {
			// A json.Decoder unescapes the key, and replaces bytes
			// that are not UTF-8.
			return Update{}, false, nil
		}
		i = jsonx.SkipSpace(data, jsonx.SkipSpace(data, end)+1) // past the colon
		end = jsonx.ValueEnd(data, i)
		raw := json.RawMessage(data[i:end:end])
		i = jsonx.SkipSpace(data, end)
		if data[i] == ',' {
			i = jsonx.SkipSpace(data, i+1)
		}
		key := ""
		for _, a := range allowed {
			if string(kb) == a {
				key = a
				break
			}
		}
		if key == "" {
			return Update{}, true, &InputError{Key: string(kb), Err: fmt.Errorf("the graph has no such key; it takes %s", strings.Join(allowed, ", "))}
		}
		d, isDecoder := g.decls[key].(inputDecoder)
		if !isDecoder {
			return Update{}, true, &InputError{Key: key, Err: errors.New("the channel cannot be written from JSON")}
		}
		w, err := d.decodeInput(raw)
		if err != nil {
			return Update{}, true, &InputError{Key: key, Err: err}
		}
		u = u.And(w)
	}
	return u, true, nil
}

// jsonKind names the JSON type of a value, for errors.
func jsonKind(data []byte) string {
	if len(data) == 0 {
		return "nothing"
	}
	switch data[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// decodeValue decodes data into a T, saying what it got when it does not
// fit.
func decodeValue[T any](data json.RawMessage) (T, error) {
	v, err := decodeAs[T](data)
	if err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			where := ""
			if te.Field != "" {
				where = " at " + te.Field
			}
			return v, fmt.Errorf("expected %s%s, received %s", typeName[T](), where, te.Value)
		}
		return v, err
	}
	return v, nil
}

func (c *ValueChannel[T]) decodeInput(data json.RawMessage) (Update, error) {
	v, err := decodeValue[T](data)
	if err != nil {
		return Update{}, err
	}
	return c.Write(v), nil
}

func (c *ReduceChannel[T]) decodeInput(data json.RawMessage) (Update, error) {
	v, err := decodeValue[T](data)
	if err != nil {
		return Update{}, err
	}
	return c.Write(v), nil
}

func (c *EphemeralChannel[T]) decodeInput(data json.RawMessage) (Update, error) {
	v, err := decodeValue[T](data)
	if err != nil {
		return Update{}, err
	}
	return c.Write(v), nil
}

// decodeInput takes a list of values (each published) or one value.
func (c *TopicChannel[T]) decodeInput(data json.RawMessage) (Update, error) {
	if len(data) > 0 && data[0] == '[' {
		if vs, err := decodeAs[[]T](data); err == nil {
			return c.Write(vs...), nil
		}
	}
	v, err := decodeValue[T](data)
	if err != nil {
		return Update{}, err
	}
	return c.Write(v), nil
}

// decodeInput takes a list of messages, one message, or a string (a human
// message), as LangGraph's add_messages coerces them.
func (c *MessagesChannel[M]) decodeInput(data json.RawMessage) (Update, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return Update{}, errors.New("expected a list of messages, received nothing")
	}
	var raws []json.RawMessage
	switch data[0] {
	case '[':
		if json.Valid(data) {
			// Split without copying the messages, as Unmarshal below
			// would: they are decoded at once.
			raws = splitValidArray(data)
		} else if err := json.Unmarshal(data, &raws); err != nil {
			return Update{}, err
		}
	case '{', '"':
		raws = []json.RawMessage{data}
	default:
		return Update{}, fmt.Errorf("expected a list of messages, received %s", jsonKind(data))
	}
	msgs := make([]M, 0, len(raws))
	for i, raw := range raws {
		raw = bytes.TrimSpace(raw)
		if len(raw) > 0 && raw[0] == '"' {
			// A bare string is a human message, as in LangChain.
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return Update{}, fmt.Errorf("message %d: %w", i, err)
			}
			raw, _ = json.Marshal(map[string]string{"type": "human", "content": s})
		}
		m, err := decodeValue[M](raw)
		if err != nil {
			return Update{}, fmt.Errorf("message %d: %w", i, err)
		}
		msgs = append(msgs, m)
	}
	return c.Write(msgs...), nil
}

// splitValidArray returns the items of data, one valid JSON array, as
// slices of it.
func splitValidArray(data []byte) []json.RawMessage {
	n := 0
	for i := jsonx.SkipSpace(data, 1); data[i] != ']'; n++ {
		i = jsonx.SkipSpace(data, jsonx.ValueEnd(data, i))
		if data[i] == ',' {
			i = jsonx.SkipSpace(data, i+1)
		}
	}
	items := make([]json.RawMessage, 0, n)
	for i := jsonx.SkipSpace(data, 1); data[i] != ']'; {
		end := jsonx.ValueEnd(data, i)
		items = append(items, data[i:end:end])
		i = jsonx.SkipSpace(data, end)
		if data[i] == ',' {
			i = jsonx.SkipSpace(data, i+1)
		}
	}
	return items
}
