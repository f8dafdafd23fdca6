package graph

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/weftlabs/weft/internal/ids"
)

// MessageLike is what a message type needs for a Messages channel: an id,
// and a copy with another id. llm.Message satisfies it.
type MessageLike[M any] interface {
	MessageID() string
	WithMessageID(id string) M
}

// messageRemover is implemented by message types that can stand for a
// removal (LangChain's RemoveMessage): writing one removes the message with
// its id.
type messageRemover interface {
	RemovesMessage() bool
}

// jsonAppender is implemented by message types that append their own JSON,
// compact and escaped as json.Marshal would give it (llm.Message): a
// message is then encoded without encoding/json's second pass over a
// Marshaler's output, which for a large tool result costs more than
// encoding it.
type jsonAppender interface {
	AppendJSON(b []byte) ([]byte, error)
}

// jsonSizeHinter is implemented by message types that can estimate the
// length of their JSON (llm.Message), so a checkpoint of many messages is
// encoded into one buffer of about the right size.
type jsonSizeHinter interface {
	JSONSizeHint() int
}

// RemoveAllMessages is the id that, in a removal, removes every message
// before it.
const RemoveAllMessages = "__remove_all__"

// MessagesChannel is a list of messages with LangGraph's add-messages rule:
// written messages without an id get one, a message whose id is already in
// the list replaces it, a removal drops the message with its id, and
// RemoveAll clears the list. Removing an id that is not there is an error.
type MessagesChannel[M MessageLike[M]] struct{ name string }

// Messages declares a message-list channel.
func Messages[M MessageLike[M]](name string) *MessagesChannel[M] {
	return &MessagesChannel[M]{name: name}
}

// Name implements Channel.
func (c *MessagesChannel[M]) Name() string { return c.name }

// Get returns the messages in s.
func (c *MessagesChannel[M]) Get(s State) []M { v, _ := lookup[[]M](s, c.name); return v }

// Write returns an update that adds (or replaces by id) msgs.
func (c *MessagesChannel[M]) Write(msgs ...M) Update {
	ops := make([]msgOp[M], len(msgs))
	for i, m := range msgs {
		ops[i].Msg = m
		// Asked through a pointer into ops: boxing the message itself in an
		// interface would copy it to the heap.
		if r, ok := any(&ops[i].Msg).(messageRemover); ok && r.RemovesMessage() {
			ops[i] = msgOp[M]{Remove: m.MessageID()}
			continue
		}
		// The id is given now rather than when the write is applied, so the
		// message streams, is saved and is stored under one id.
		if m.MessageID() == "" {
			ops[i].Msg = m.WithMessageID(ids.Random())
		}
	}
	return writeOf(c.name, msgOps[M](ops))
}

// Remove returns an update that removes the messages with these ids.
func (c *MessagesChannel[M]) Remove(ids ...string) Update {
	ops := make([]msgOp[M], len(ids))
	for i, id := range ids {
		ops[i] = msgOp[M]{Remove: id}
	}
	return writeOf(c.name, msgOps[M](ops))
}

// RemoveAll returns an update that clears the list; messages written after
// it in the same update are kept.
func (c *MessagesChannel[M]) RemoveAll() Update { return c.Remove(RemoveAllMessages) }

// Overwrite returns an update that replaces the whole list.
func (c *MessagesChannel[M]) Overwrite(msgs []M) Update { return writeOf(c.name, overwrite{msgs}) }

func (c *MessagesChannel[M]) newSlot() slot { return &messages[M]{} }

type msgOp[M any] struct {
	Msg    M      `json:"msg,omitzero"`
	Remove string `json:"remove,omitempty"`
}

type msgOps[M any] []msgOp[M]

// MessageRemoval stands for the removal of a message in an update's writes
// (LangChain's RemoveMessage); its JSON form is {"type":"remove","id":...}.
type MessageRemoval struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// public renders the ops as a user reads them: the messages written, with
// removals as MessageRemoval values.
func (o msgOps[M]) public() any {
	removals := false
	for _, op := range o {
		removals = removals || op.Remove != ""
	}
	if !removals {
		out := make([]M, len(o))
		for i, op := range o {
			out[i] = op.Msg
		}
		return out
	}
	out := make([]any, len(o))
	for i, op := range o {
		if op.Remove != "" {
			out[i] = MessageRemoval{Type: "remove", ID: op.Remove}
		} else {
			out[i] = op.Msg
		}
	}
	return out
}

type messages[M MessageLike[M]] struct {
	msgs []M
	set  bool
	// owned means the slot may append in place past len(msgs): no reader
	// sees those cells, as get returns a clipped slice, and a clone
	// appends there only by claiming the cells from tail. A conversation
	// then grows in amortised constant time per message instead of being
	// copied at every step.
	owned bool
	// index maps ids to positions, built when first needed and kept. A
	// clone (a router's view) shares its original's index read-only and
	// keeps what it adds in extra.
	index  map[string]int
	shared bool
	extra  map[string]int
	// enc caches the JSON of msgs[:len(enc)]: each message is encoded once,
	// for full saves and deltas alike. Appends keep it; any other change
	// drops it.
	enc []json.RawMessage
	// markLen is the length when the value was last saved; stableLen the
	// length of the prefix untouched since then.
	markLen, stableLen int
	// tail is shared by a slot that owns its list and the clones of it;
	// view marks a clone.
	tail *msgTail[M]
	view bool
}

// msgTail records how far the backing array of an owned list is used, so
// that a clone (a router's view: the state plus one task's writes) appends
// those writes in place past the original's length instead of copying the
// whole list, and the original, when it commits the very same writes at the
// same place, finds them there. Cells someone may read are never written
// again: whoever finds its cells taken copies the list, as before.
type msgTail[M any] struct {
	mu   sync.Mutex
	used int // cells [0, used) hold messages someone may read
	// The last claim of a clone: ops (by their first element) at at.
	by    *msgOp[M]
	at, n int
}

// claim reserves cells [at, at+len(ops)) for ops. For the owner, filled
// reports that a clone already wrote these very ops there.
func (t *msgTail[M]) claim(at int, ops msgOps[M], clone bool) (ok, filled bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.used == at {
		t.used = at + len(ops)
		if clone {
			t.by, t.at, t.n = &ops[0], at, len(ops)
		}
		return true, false
	}
	if !clone && t.by == &ops[0] && t.at == at && t.n == len(ops) && t.used == at+len(ops) {
		t.by = nil
		return true, true
	}
	return false, false
}

func (s *messages[M]) hasValue() bool { return s.set }

func (s *messages[M]) get() (any, bool) {
	if !s.set {
		return nil, false
	}
	return slices.Clip(s.msgs), true
}

// reset replaces the list with a new one the slot owns.
func (s *messages[M]) reset(msgs []M) {
	s.msgs, s.owned = msgs, true
	s.tail, s.view = &msgTail[M]{used: len(msgs)}, false
	s.index, s.shared, s.extra = nil, false, nil
	s.enc = nil
}

// encoded returns the JSON of every message, encoding those not yet cached.
func (s *messages[M]) encoded() ([]json.RawMessage, error) {
	for i := len(s.enc); i < len(s.msgs); i++ {
		b, err := appendMessage(nil, &s.msgs[i])
		if err != nil {
			return nil, err
		}
		s.enc = append(s.enc, b)
	}
	return s.enc[:len(s.msgs):len(s.msgs)], nil
}

// appendMessage appends m's JSON to buf: its own AppendJSON when it has
// one (llm.Message), else encoding/json's.
func appendMessage[M any](buf []byte, m *M) ([]byte, error) {
	if a, ok := any(m).(jsonAppender); ok {
		return a.AppendJSON(buf)
	}
	b, err := json.Marshal(*m)
	if err != nil {
		return nil, err
	}
	return append(buf, b...), nil
}

func (s *messages[M]) pos(id string) (int, bool) {
	if i, ok := s.extra[id]; ok {
		return i, true
	}
	if s.index == nil {
		s.index = make(map[string]int, len(s.msgs))
		for i, m := range s.msgs {
			s.index[m.MessageID()] = i
		}
		s.shared, s.extra = false, nil
	}
	i, ok := s.index[id]
	return i, ok
}

func (s *messages[M]) add(id string, i int) {
	if s.shared {
		if s.extra == nil {
			s.extra = make(map[string]int)
		}
		s.extra[id] = i
		return
	}
	s.index[id] = i
}

// appendOnly reports whether ops only add messages with new, distinct ids.
func (s *messages[M]) appendOnly(ops msgOps[M]) bool {
	for i, op := range ops {
		if op.Remove != "" {
			return false
		}
		id := op.Msg.MessageID()
		if _, ok := s.pos(id); ok {
			return false
		}
		for _, prev := range ops[:i] {
			if prev.Msg.MessageID() == id {
				return false
			}
		}
	}
	return true
}

func (s *messages[M]) update(key string, ws []any) (bool, error) {
	if len(ws) == 0 {
		return false, nil
	}
	for _, w := range ws {
		switch w := w.(type) {
		case msgOps[M]:
			if err := s.apply(key, w); err != nil {
				return false, err
			}
		case overwrite:
			msgs, ok := w.v.([]M)
			if !ok {
				return false, wrongType[[]M](key, w.v)
			}
			s.reset(withIDs(msgs))
			s.stableLen = 0
		case []M:
			ops := make(msgOps[M], len(w))
			for i, m := range w {
				ops[i] = msgOp[M]{Msg: m}
			}
			if err := s.apply(key, ops); err != nil {
				return false, err
			}
		default:
			return false, wrongType[[]M](key, w)
		}
	}
	s.set = true
	return true, nil
}

func withIDs[M MessageLike[M]](msgs []M) []M {
	out := make([]M, len(msgs))
	for i, m := range msgs {
		if m.MessageID() == "" {
			m = m.WithMessageID(ids.Random())
		}
		out[i] = m
	}
	return out
}

func (s *messages[M]) apply(key string, ops msgOps[M]) error {
	// Everything before the last remove-all goes.
	start := 0
	for i, op := range ops {
		if op.Remove == RemoveAllMessages {
			start = i + 1
		}
	}
	if start > 0 {
		s.reset(nil)
		s.stableLen = 0
	}
	ops = ops[start:]
	copied := false
	for i := range ops {
		if ops[i].Remove == "" && ops[i].Msg.MessageID() == "" {
			if !copied {
				// The ops belong to the update (saved, streamed): copy.
				ops, copied = slices.Clone(ops), true
			}
			ops[i].Msg = ops[i].Msg.WithMessageID(ids.Random())
		}
	}
	if s.appendOnly(ops) {
		if len(ops) == 0 {
			return nil
		}
		n := len(s.msgs)
		inPlace, filled := false, false
		if s.tail != nil && n+len(ops) <= cap(s.msgs) {
			inPlace, filled = s.tail.claim(n, ops, s.view)
		}
		if !inPlace {
			size := max(2*n, n+len(ops), 8)
			if s.view {
				// A router's short-lived view needs room for these
				// messages only.
				size = n + len(ops)
			}
			grown := make([]M, n, size)
			copy(grown, s.msgs)
			s.msgs, s.owned = grown, true
			s.tail, s.view = &msgTail[M]{used: n + len(ops)}, false
		}
		for _, op := range ops {
			s.add(op.Msg.MessageID(), len(s.msgs))
			if filled {
				s.msgs = s.msgs[:len(s.msgs)+1]
			} else {
				s.msgs = append(s.msgs, op.Msg)
			}
		}
		return nil
	}
	// Replacements and removals: build a new list.
	cur := s.msgs
	var index map[string]int
	removed := map[int]bool{}
	// Copy on first change, so earlier snapshots of the list never change
	// under a reader.
	out := cur
	owned := false
	own := func() {
		if !owned {
			out = append(make([]M, 0, len(out)+len(ops)), out...)
			owned = true
		}
	}
	for _, op := range ops {
		if index == nil {
			index = make(map[string]int, len(out)+len(ops))
			for i, m := range out {
				index[m.MessageID()] = i
			}
		}
		if op.Remove != "" {
			i, ok := index[op.Remove]
			if !ok {
				return fmt.Errorf("%w: channel %q: cannot remove message %q: no message with that id", ErrInvalidUpdate, key, op.Remove)
			}
			// As in LangGraph, the removal happens at the end of the
			// write: removing an id twice is no error, and a later
			// message with the id replaces it in place and cancels it.
			removed[i] = true
			s.stableLen = min(s.stableLen, i)
			continue
		}
		m := op.Msg // has an id: given above
		own()
		if i, ok := index[m.MessageID()]; ok {
			out[i] = m
			delete(removed, i)
			s.stableLen = min(s.stableLen, i)
			continue
		}
		index[m.MessageID()] = len(out)
		out = append(out, m)
	}
	if len(removed) > 0 {
		kept := make([]M, 0, len(out)-len(removed))
		for i, m := range out {
			if !removed[i] {
				kept = append(kept, m)
			}
		}
		out = kept
	}
	s.reset(out)
	return nil
}

func (s *messages[M]) consume() bool { return false }
func (s *messages[M]) finish() bool  { return false }
func (s *messages[M]) clone() slot {
	c := *s
	c.owned, c.view = false, true
	c.enc = nil
	if s.extra != nil {
		// A clone of a clone builds its own index when it needs one.
		c.index, c.shared, c.extra = nil, false, nil
	} else if s.index != nil {
		c.shared = true
	}
	return &c
}

// marshal writes the whole list. Messages not encoded yet are encoded
// straight into the value, in a buffer sized once (llm.Message estimates
// its JSON), and their cached encodings are slices of it: a long history
// saved for the first time is written once, not encoded message by
// message and then copied.
func (s *messages[M]) marshal(e *valueEncoder) (json.RawMessage, bool, error) {
	if !s.set {
		return nil, false, nil
	}
	done := min(len(s.enc), len(s.msgs))
	s.enc = s.enc[:done]
	n := 2 + len(s.msgs)
	for _, b := range s.enc {
		n += len(b)
	}
	for i := done; i < len(s.msgs); i++ {
		if h, ok := any(&s.msgs[i]).(jsonSizeHinter); ok {
			n += h.JSONSizeHint()
		} else {
			n += 256
		}
	}
	buf := make([]byte, 0, n)
	buf = append(buf, '[')
	for i := range s.msgs {
		if i > 0 {
			buf = append(buf, ',')
		}
		if i < done {
			buf = append(buf, s.enc[i]...)
			continue
		}
		start := len(buf)
		var err error
		if buf, err = appendMessage(buf, &s.msgs[i]); err != nil {
			return nil, false, err
		}
		// Should buf outgrow its estimate, earlier slices keep the old
		// array, which holds the same bytes: correct, if less compact.
		s.enc = append(s.enc, buf[start:len(buf):len(buf)])
	}
	return append(buf, ']'), true, nil
}

func (s *messages[M]) unmarshal(data json.RawMessage) error {
	v, err := decodeAs[[]M](data)
	if err != nil {
		return err
	}
	s.reset(v)
	s.set = true
	s.markLen, s.stableLen = len(v), len(v)
	return nil
}

func (s *messages[M]) decodeWrite(data json.RawMessage) (any, error) {
	var w struct {
		Overwrite *json.RawMessage `json:"__overwrite__"`
	}
	if json.Unmarshal(data, &w) == nil && w.Overwrite != nil {
		v, err := decodeAs[[]M](*w.Overwrite)
		return overwrite{v}, err
	}
	return decodeAs[msgOps[M]](data)
}

// delta implements appender: the messages added since the value was last
// saved, when nothing before them changed.
func (s *messages[M]) delta() ([]json.RawMessage, bool, error) {
	n := s.markLen
	if s.stableLen < n || n > len(s.msgs) {
		return nil, false, nil
	}
	enc, err := s.encoded()
	if err != nil {
		return nil, false, err
	}
	return enc[n:], true, nil
}

// markSaved records that the current value has been saved.
func (s *messages[M]) markSaved() { s.markLen, s.stableLen = len(s.msgs), len(s.msgs) }
