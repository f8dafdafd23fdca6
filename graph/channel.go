package graph

import (
	"encoding/json"
	"fmt"
	"reflect"
)

// Channel is one key of a graph's state: a name (its JSON key), a value type
// and an update rule. Channels are declared with Value, Reduce, Topic,
// Ephemeral and Messages, usually as package variables, and passed to New.
type Channel interface {
	// Name is the channel's key in the state and in its JSON form.
	Name() string
	newSlot() slot
}

// slot is a channel's value inside one run: it receives writes and knows how
// to save and restore itself.
type slot interface {
	// get returns the value and whether there is one.
	get() (any, bool)
	// hasValue reports whether get would find a value, without boxing the
	// value in an interface (an allocation for a slice or a struct), for
	// the loop's checks of which channels are available.
	hasValue() bool
	// update applies the writes of one superstep, in task order; it reports
	// whether the value changed.
	update(key string, writes []any) (bool, error)
	// consume is called when a node that this channel triggered has run.
	consume() bool
	// finish is called when no task is left to run.
	finish() bool
	// clone returns an independent copy (values are shared, not deep-copied).
	clone() slot
	// marshal encodes the value; ok is false when there is no value.
	marshal(e *valueEncoder) (data json.RawMessage, ok bool, err error)
	// unmarshal restores a value saved by marshal.
	unmarshal(data json.RawMessage) error
	// decodeWrite turns a saved pending write back into a write value.
	decodeWrite(data json.RawMessage) (any, error)
}

// appender is implemented by slots whose values only grow, so a checkpoint
// can store what one step appended instead of the whole value.
type appender interface {
	// delta reports the items appended since markSaved was last called, or
	// ok=false if the value changed in any other way.
	delta() (items []json.RawMessage, ok bool, err error)
	markSaved()
}

// overwrite marks a write that replaces a reducer channel's value.
type overwrite struct{ v any }

func typeName[T any]() string {
	return reflect.TypeFor[T]().String()
}

func wrongType[T any](key string, v any) error {
	return fmt.Errorf("%w: channel %q takes values of type %s, got %T", ErrInvalidUpdate, key, typeName[T](), v)
}

func decodeAs[T any](data json.RawMessage) (T, error) {
	var v T
	err := json.Unmarshal(data, &v)
	return v, err
}

// ---------------------------------------------------------------- last value

// ValueChannel holds the last value written. It takes one write per
// superstep: two writes in one step fail, naming the key.
type ValueChannel[T any] struct{ name string }

// Value declares a channel that keeps the last value written to it.
func Value[T any](name string) *ValueChannel[T] { return &ValueChannel[T]{name: name} }

// Name implements Channel.
func (c *ValueChannel[T]) Name() string { return c.name }

// Get returns the channel's value in s, or the zero value if it has none.
func (c *ValueChannel[T]) Get(s State) T { v, _ := c.Lookup(s); return v }

// Lookup returns the channel's value in s and whether it has one.
func (c *ValueChannel[T]) Lookup(s State) (T, bool) { return lookup[T](s, c.name) }

// Write returns an update that sets the channel to v. A zero v is a write.
func (c *ValueChannel[T]) Write(v T) Update { return writeOf(c.name, v) }

func (c *ValueChannel[T]) newSlot() slot { return &lastValue[T]{} }

type lastValue[T any] struct {
	v   T
	set bool
}

func (s *lastValue[T]) hasValue() bool { return s.set }

func (s *lastValue[T]) get() (any, bool) {
	if !s.set {
		return nil, false
	}
	return s.v, true
}

func (s *lastValue[T]) update(key string, ws []any) (bool, error) {
	if len(ws) == 0 {
		return false, nil
	}
	if len(ws) > 1 {
		return false, fmt.Errorf("%w: channel %q received %d writes in one step, but a Value channel takes one write per step; declare it with graph.Reduce to combine concurrent writes", ErrInvalidUpdate, key, len(ws))
	}
	w := ws[0]
	if o, ok := w.(overwrite); ok {
		w = o.v
	}
	v, ok := w.(T)
	if !ok {
		return false, wrongType[T](key, w)
	}
	s.v, s.set = v, true
	return true, nil
}

func (s *lastValue[T]) consume() bool { return false }
func (s *lastValue[T]) finish() bool  { return false }
func (s *lastValue[T]) clone() slot   { c := *s; return &c }

func (s *lastValue[T]) marshal(e *valueEncoder) (json.RawMessage, bool, error) {
	if !s.set {
		return nil, false, nil
	}
	b, err := e.encode(s.v)
	return b, true, err
}

func (s *lastValue[T]) unmarshal(data json.RawMessage) error {
	v, err := decodeAs[T](data)
	if err != nil {
		return err
	}
	s.v, s.set = v, true
	return nil
}

func (s *lastValue[T]) decodeWrite(data json.RawMessage) (any, error) { return decodeAs[T](data) }

// ---------------------------------------------------------------- reducer

// ReduceChannel folds every write into its value with a binary operator, in
// task order. Overwrite bypasses the operator.
type ReduceChannel[T any] struct {
	name string
	fn   func(current, update T) T
}

// Reduce declares a channel whose writes are folded into its value with fn.
// The value starts as T's zero value.
func Reduce[T any](name string, fn func(current, update T) T) *ReduceChannel[T] {
	return &ReduceChannel[T]{name: name, fn: fn}
}

// Name implements Channel.
func (c *ReduceChannel[T]) Name() string { return c.name }

// Get returns the channel's value in s.
func (c *ReduceChannel[T]) Get(s State) T { v, _ := lookup[T](s, c.name); return v }

// Write returns an update that folds v into the channel.
func (c *ReduceChannel[T]) Write(v T) Update { return writeOf(c.name, v) }

// Overwrite returns an update that replaces the channel's value with v,
// bypassing the reducer. Two overwrites of one channel in a step fail.
func (c *ReduceChannel[T]) Overwrite(v T) Update { return writeOf(c.name, overwrite{v}) }

func (c *ReduceChannel[T]) newSlot() slot { return &reducer[T]{fn: c.fn} }

type reducer[T any] struct {
	fn  func(T, T) T
	v   T
	set bool
}

func (s *reducer[T]) get() (any, bool) { return s.v, true }

func (s *reducer[T]) hasValue() bool { return true }

func (s *reducer[T]) update(key string, ws []any) (bool, error) {
	if len(ws) == 0 {
		return false, nil
	}
	seenOverwrite := false
	for _, w := range ws {
		if o, ok := w.(overwrite); ok {
			if seenOverwrite {
				return false, fmt.Errorf("%w: channel %q received more than one Overwrite in one step; at most one is allowed", ErrInvalidUpdate, key)
			}
			seenOverwrite = true
			v, ok := o.v.(T)
			if !ok {
				return false, wrongType[T](key, o.v)
			}
			s.v = v
			continue
		}
		if seenOverwrite {
			// Writes after an overwrite in the same step are ignored, so
			// the overwrite's value is the step's result.
			continue
		}
		v, ok := w.(T)
		if !ok {
			return false, wrongType[T](key, w)
		}
		s.v = s.fn(s.v, v)
	}
	s.set = true
	return true, nil
}

func (s *reducer[T]) consume() bool { return false }
func (s *reducer[T]) finish() bool  { return false }
func (s *reducer[T]) clone() slot   { c := *s; return &c }

func (s *reducer[T]) marshal(e *valueEncoder) (json.RawMessage, bool, error) {
	if !s.set {
		return nil, false, nil
	}
	b, err := e.encode(s.v)
	return b, true, err
}

func (s *reducer[T]) unmarshal(data json.RawMessage) error {
	v, err := decodeAs[T](data)
	if err != nil {
		return err
	}
	s.v, s.set = v, true
	return nil
}

func (s *reducer[T]) decodeWrite(data json.RawMessage) (any, error) {
	var w struct {
		Overwrite *json.RawMessage `json:"__overwrite__"`
	}
	if json.Unmarshal(data, &w) == nil && w.Overwrite != nil {
		v, err := decodeAs[T](*w.Overwrite)
		return overwrite{v}, err
	}
	return decodeAs[T](data)
}

// MarshalJSON lets an Overwrite survive a trip through pending writes.
func (o overwrite) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{"__overwrite__": o.v})
}

// ---------------------------------------------------------------- topic

// TopicChannel collects the values written to it. Without accumulation it
// holds only the values of the last step that wrote to it.
type TopicChannel[T any] struct {
	name       string
	accumulate bool
}

// TopicOptions configures Topic.
type TopicOptions struct {
	// Accumulate keeps values across steps instead of clearing them at the
	// start of each step.
	Accumulate bool
}

// Topic declares a channel of values published by nodes; opts may be nil
// for the defaults.
func Topic[T any](name string, opts *TopicOptions) *TopicChannel[T] {
	return &TopicChannel[T]{name: name, accumulate: deref(opts).Accumulate}
}

// Name implements Channel.
func (c *TopicChannel[T]) Name() string { return c.name }

// Get returns the values in the channel.
func (c *TopicChannel[T]) Get(s State) []T { v, _ := lookup[[]T](s, c.name); return v }

// Write returns an update that publishes vs.
func (c *TopicChannel[T]) Write(vs ...T) Update {
	var u Update
	for _, v := range vs {
		u.writes = append(u.writes, write{c.name, v})
	}
	u.input = true
	return u
}

func (c *TopicChannel[T]) newSlot() slot { return &topic[T]{accumulate: c.accumulate} }

type topic[T any] struct {
	accumulate bool
	vs         []T
}

func (s *topic[T]) hasValue() bool { return len(s.vs) > 0 }

func (s *topic[T]) get() (any, bool) {
	if len(s.vs) == 0 {
		return nil, false
	}
	return s.vs, true
}

func (s *topic[T]) update(key string, ws []any) (bool, error) {
	changed := false
	if !s.accumulate && len(s.vs) > 0 {
		s.vs = nil
		changed = true
	}
	if len(ws) > 0 {
		// A fresh slice, so earlier snapshots keep their values.
		vs := make([]T, len(s.vs), len(s.vs)+len(ws))
		copy(vs, s.vs)
		for _, w := range ws {
			v, ok := w.(T)
			if !ok {
				return false, wrongType[T](key, w)
			}
			vs = append(vs, v)
		}
		s.vs = vs
		changed = true
	}
	return changed, nil
}

func (s *topic[T]) consume() bool { return false }
func (s *topic[T]) finish() bool  { return false }
func (s *topic[T]) clone() slot   { c := *s; return &c }

func (s *topic[T]) marshal(e *valueEncoder) (json.RawMessage, bool, error) {
	if len(s.vs) == 0 {
		return nil, false, nil
	}
	b, err := e.encode(s.vs)
	return b, true, err
}

func (s *topic[T]) unmarshal(data json.RawMessage) error {
	v, err := decodeAs[[]T](data)
	s.vs = v
	return err
}

func (s *topic[T]) decodeWrite(data json.RawMessage) (any, error) { return decodeAs[T](data) }

// ---------------------------------------------------------------- ephemeral

// EphemeralChannel holds a value for the one step after it was written.
type EphemeralChannel[T any] struct{ name string }

// Ephemeral declares a channel whose value lasts one step.
func Ephemeral[T any](name string) *EphemeralChannel[T] { return &EphemeralChannel[T]{name: name} }

// Name implements Channel.
func (c *EphemeralChannel[T]) Name() string { return c.name }

// Get returns the channel's value in s, or the zero value.
func (c *EphemeralChannel[T]) Get(s State) T { v, _ := lookup[T](s, c.name); return v }

// Lookup returns the channel's value in s and whether it has one.
func (c *EphemeralChannel[T]) Lookup(s State) (T, bool) { return lookup[T](s, c.name) }

// Write returns an update that sets the channel for the next step.
func (c *EphemeralChannel[T]) Write(v T) Update { return writeOf(c.name, v) }

func (c *EphemeralChannel[T]) newSlot() slot { return &ephemeral[T]{guard: true} }

type ephemeral[T any] struct {
	guard bool
	v     T
	set   bool
}

func (s *ephemeral[T]) hasValue() bool { return s.set }

func (s *ephemeral[T]) get() (any, bool) {
	if !s.set {
		return nil, false
	}
	return s.v, true
}

func (s *ephemeral[T]) update(key string, ws []any) (bool, error) {
	if len(ws) == 0 {
		if s.set {
			var zero T
			s.v, s.set = zero, false
			return true, nil
		}
		return false, nil
	}
	if s.guard && len(ws) > 1 {
		return false, fmt.Errorf("%w: ephemeral channel %q received %d writes in one step; it takes one", ErrInvalidUpdate, key, len(ws))
	}
	w := ws[len(ws)-1]
	v, ok := w.(T)
	if !ok {
		return false, wrongType[T](key, w)
	}
	s.v, s.set = v, true
	return true, nil
}

func (s *ephemeral[T]) consume() bool { return false }
func (s *ephemeral[T]) finish() bool  { return false }
func (s *ephemeral[T]) clone() slot   { c := *s; return &c }

func (s *ephemeral[T]) marshal(e *valueEncoder) (json.RawMessage, bool, error) {
	if !s.set {
		return nil, false, nil
	}
	b, err := e.encode(s.v)
	return b, true, err
}

func (s *ephemeral[T]) unmarshal(data json.RawMessage) error {
	v, err := decodeAs[T](data)
	if err != nil {
		return err
	}
	s.v, s.set = v, true
	return nil
}

func (s *ephemeral[T]) decodeWrite(data json.RawMessage) (any, error) { return decodeAs[T](data) }

// ---------------------------------------------------------------- internal

// trigger is the channel behind an edge into a node ("branch:to:NODE"): any
// write makes the node run in the next step. With afterFinish (deferred
// nodes) the trigger becomes visible only once nothing else is left to run.
type trigger struct {
	afterFinish bool
	set         bool
	finished    bool
}

func (s *trigger) hasValue() bool { return s.set && (!s.afterFinish || s.finished) }

func (s *trigger) get() (any, bool) {
	if !s.set || (s.afterFinish && !s.finished) {
		return nil, false
	}
	return true, true
}

func (s *trigger) update(key string, ws []any) (bool, error) {
	if len(ws) == 0 {
		if s.set && !s.afterFinish {
			s.set = false
			return true, nil
		}
		return false, nil
	}
	s.set = true
	s.finished = false
	return true, nil
}

func (s *trigger) consume() bool {
	if s.afterFinish && s.set && s.finished {
		s.set, s.finished = false, false
		return true
	}
	return false
}

func (s *trigger) finish() bool {
	if s.afterFinish && s.set && !s.finished {
		s.finished = true
		return true
	}
	return false
}

func (s *trigger) clone() slot { c := *s; return &c }

type triggerJSON struct {
	Set      bool `json:"set"`
	Finished bool `json:"finished,omitempty"`
}

func (s *trigger) marshal(e *valueEncoder) (json.RawMessage, bool, error) {
	if !s.set {
		return nil, false, nil
	}
	b, err := json.Marshal(triggerJSON{s.set, s.finished})
	return b, true, err
}

func (s *trigger) unmarshal(data json.RawMessage) error {
	var t triggerJSON
	if err := json.Unmarshal(data, &t); err != nil {
		return err
	}
	s.set, s.finished = t.Set, t.Finished
	return nil
}

func (s *trigger) decodeWrite(data json.RawMessage) (any, error) { return true, nil }

// barrier is the channel behind a join edge ("join:a+b:c"): it is available
// once every named source has written to it, and consumed when the target
// runs.
type barrier struct {
	names       []string
	seen        map[string]bool
	afterFinish bool
	finished    bool
}

func (s *barrier) complete() bool { return len(s.seen) == len(s.names) }

func (s *barrier) hasValue() bool { return s.complete() && (!s.afterFinish || s.finished) }

func (s *barrier) get() (any, bool) {
	if !s.complete() || (s.afterFinish && !s.finished) {
		return nil, false
	}
	return true, true
}

func (s *barrier) update(key string, ws []any) (bool, error) {
	changed := false
	for _, w := range ws {
		name, ok := w.(string)
		if !ok {
			return false, fmt.Errorf("%w: join channel %q takes node names, got %T", ErrInvalidUpdate, key, w)
		}
		known := false
		for _, n := range s.names {
			known = known || n == name
		}
		if !known {
			return false, fmt.Errorf("%w: join channel %q does not wait for node %q", ErrInvalidUpdate, key, name)
		}
		if !s.seen[name] {
			if s.seen == nil {
				s.seen = make(map[string]bool, len(s.names))
			}
			s.seen[name] = true
			changed = true
		}
	}
	return changed, nil
}

func (s *barrier) consume() bool {
	if s.complete() && (!s.afterFinish || s.finished) {
		s.seen, s.finished = nil, false
		return true
	}
	return false
}

func (s *barrier) finish() bool {
	if s.afterFinish && !s.finished && s.complete() {
		s.finished = true
		return true
	}
	return false
}

func (s *barrier) clone() slot {
	c := *s
	if s.seen != nil {
		c.seen = make(map[string]bool, len(s.seen))
		for k, v := range s.seen {
			c.seen[k] = v
		}
	}
	return &c
}

type barrierJSON struct {
	Seen     []string `json:"seen"`
	Finished bool     `json:"finished,omitempty"`
}

func (s *barrier) marshal(e *valueEncoder) (json.RawMessage, bool, error) {
	if len(s.seen) == 0 {
		return nil, false, nil
	}
	var b barrierJSON
	for _, n := range s.names {
		if s.seen[n] {
			b.Seen = append(b.Seen, n)
		}
	}
	b.Finished = s.finished
	data, err := json.Marshal(b)
	return data, true, err
}

func (s *barrier) unmarshal(data json.RawMessage) error {
	var b barrierJSON
	if err := json.Unmarshal(data, &b); err != nil {
		return err
	}
	s.seen = make(map[string]bool, len(b.Seen))
	for _, n := range b.Seen {
		s.seen[n] = true
	}
	s.finished = b.Finished
	return nil
}

func (s *barrier) decodeWrite(data json.RawMessage) (any, error) { return decodeAs[string](data) }

// internalChannel adapts a slot constructor to Channel for channels the
// builder creates itself.
type internalChannel struct {
	name string
	mk   func() slot
}

func (c *internalChannel) Name() string  { return c.name }
func (c *internalChannel) newSlot() slot { return c.mk() }
