package memory

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/weftlabs/weft/internal/ids"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/store"
)

// Content is what a memory holds: a struct the model fills in (Fact,
// Episode, Procedure, or one of your own). Text is what the memory is
// searched by and how the model is shown it; two memories with the same
// text (ignoring case and spacing) are duplicates.
type Content interface {
	Text() string
}

// Fact is a semantic memory: a fact about the user or their world, or a
// preference.
type Fact struct {
	Category string `json:"category" jsonschema:"fact or preference"`
	Content  string `json:"content" jsonschema:"the fact or preference as one standalone sentence, e.g. 'Prefers window seats on long flights'"`
}

// Text returns the fact's content.
func (f Fact) Text() string { return f.Content }

// Episode is an episodic memory: a situation, what was done and how it
// went, so that the agent can repeat what worked (LangMem's episodes).
type Episode struct {
	Observation string `json:"observation" jsonschema:"the situation and the user's request"`
	Thoughts    string `json:"thoughts" jsonschema:"the reasoning that decided the approach"`
	Action      string `json:"action" jsonschema:"what was done"`
	Result      string `json:"result" jsonschema:"how it went and why, including the user's reaction"`
}

// Text joins the episode's fields.
func (e Episode) Text() string {
	return strings.Join([]string{e.Observation, e.Action, e.Result}, " — ")
}

// Procedure is a procedural memory: an instruction on how to act in some
// situation, learned from the user's corrections.
type Procedure struct {
	When        string `json:"when" jsonschema:"the situation the instruction applies to"`
	Instruction string `json:"instruction" jsonschema:"what to do, as an imperative sentence"`
}

// Text joins the situation and the instruction.
func (p Procedure) Text() string { return p.When + ": " + p.Instruction }

// Memory is a stored memory.
type Memory[T Content] struct {
	// ID is the memory's key in its namespace.
	ID        string    `json:"id"`
	Kind      Kind      `json:"kind"`
	Content   T         `json:"content"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Score is the similarity to the query of a search, else 0.
	Score float64 `json:"score,omitempty"`
}

// record is a memory's value in the store.
type record[T Content] struct {
	Kind    Kind   `json:"kind"`
	Content T      `json:"content"`
	Text    string `json:"text"`
	// Hash is the digest of the normalized text, for duplicate checks.
	Hash string `json:"hash"`
}

var indexText = []string{"text"}

// ManagerOptions configure a Manager.
type ManagerOptions struct {
	// Kind is the namespace label of the manager's memories (default by
	// content type: Semantic for Fact, Episodic for Episode, Procedural
	// for Procedure; required for other types).
	Kind Kind
	// Instructions tell the model what to remember (default by kind).
	Instructions string
	// Existing is how many stored memories most relevant to the
	// conversation the model is shown to consolidate with (default 10).
	Existing int
	// NoDeletes forbids the model to delete memories (it may still
	// update them).
	NoDeletes bool
	// MaxConversation caps the characters of conversation shown to the
	// model, keeping the latest (default 16,000).
	MaxConversation int
	// Structured is passed to llm.Structured (the method, say, for a model
	// without tool calling). Its Name and TypeSchemas are the manager's.
	Structured llm.StructuredOptions
	// Timeout bounds the model call (default 2 minutes) and each store
	// call (default DefaultTimeout).
	Timeout, StoreTimeout time.Duration
}

// Manager extracts memories of one kind from conversations and keeps them
// consolidated, per user (LangMem's memory store manager). It is safe for
// concurrent use.
type Manager[T Content] struct {
	model llm.ChatModel
	st    *store.Store
	opts  ManagerOptions
}

// Result says what an extraction changed.
type Result struct {
	Kind Kind
	// Inserted, Updated and Deleted are memory ids.
	Inserted, Updated, Deleted []string
	// Skipped are operations the model asked for that were not applied,
	// with why: a duplicate, an unknown id, an empty memory.
	Skipped []string
}

// Changed reports whether the extraction changed anything.
func (r Result) Changed() bool {
	return len(r.Inserted)+len(r.Updated)+len(r.Deleted) > 0
}

// NewManager returns a manager of memories holding a T.
func NewManager[T Content](model llm.ChatModel, st *store.Store, opts ManagerOptions) (*Manager[T], error) {
	if model == nil {
		return nil, fmt.Errorf("%w: nil model", ErrInvalid)
	}
	if err := checkStore(st); err != nil {
		return nil, err
	}
	var zero T
	if opts.Kind == "" {
		switch any(zero).(type) {
		case Fact:
			opts.Kind = Semantic
		case Episode:
			opts.Kind = Episodic
		case Procedure:
			opts.Kind = Procedural
		default:
			return nil, fmt.Errorf("%w: ManagerOptions.Kind is required for memories of type %T", ErrInvalid, zero)
		}
	}
	if _, err := Namespace("u", opts.Kind); err != nil {
		return nil, err
	}
	if opts.Existing < 0 || opts.MaxConversation < 0 || opts.Timeout < 0 || opts.StoreTimeout < 0 {
		return nil, fmt.Errorf("%w: Existing, MaxConversation and timeouts must not be negative", ErrInvalid)
	}
	opts.Existing = cmp.Or(opts.Existing, 10)
	opts.MaxConversation = cmp.Or(opts.MaxConversation, 16000)
	opts.Timeout = cmp.Or(opts.Timeout, 2*time.Minute)
	opts.StoreTimeout = cmp.Or(opts.StoreTimeout, DefaultTimeout)
	if opts.Instructions == "" {
		opts.Instructions = defaultInstructions[opts.Kind]
		if opts.Instructions == "" {
			opts.Instructions = "Extract what is worth remembering from the conversation for future conversations with this user."
		}
	}
	return &Manager[T]{model: model, st: st, opts: opts}, nil
}

var defaultInstructions = map[Kind]string{
	Semantic: "Remember lasting facts about the user and their world (role, projects, people, tools they use) and their preferences " +
		"(formats, tone, tools and services they like or dislike, things they asked you to remember or to avoid). " +
		"Do not record the task of the moment, small talk, or what the assistant said unless the user confirmed it.",
	Episodic: "Record the episodes worth learning from: a request, the approach taken, and how it went, especially what the user " +
		"approved, corrected or rejected. Skip routine exchanges.",
	Procedural: "Record instructions on how to act that the user taught by correcting or directing the assistant " +
		"(\"always ask before booking\", \"answer in Korean\"), as imperative sentences with the situation they apply to.",
}

// Kind returns the kind of memory the manager keeps.
func (m *Manager[T]) Kind() Kind { return m.opts.Kind }

// OpKind is what a consolidation operation does.
type OpKind string

// The operations.
const (
	OpInsert OpKind = "insert"
	OpUpdate OpKind = "update"
	OpDelete OpKind = "delete"
)

// Operation is one change the model asks for.
type Operation[T Content] struct {
	Op OpKind `json:"op" jsonschema:"insert a new memory, update an existing one, or delete an existing one"`
	ID string `json:"id,omitempty" jsonschema:"for update and delete: the id of the existing memory, as shown"`
	// Content is the new memory (insert) or the replacement (update).
	Content *T `json:"content,omitempty" jsonschema:"for insert and update: the memory"`
}

// Operations is the model's whole answer.
type Operations[T Content] struct {
	Operations []Operation[T] `json:"operations" jsonschema:"every change to make; an empty list when nothing is worth remembering"`
}

// Extract reads msgs, shows the model the user's stored memories most
// relevant to them, and applies the inserts, updates and deletes it asks
// for. An insert that repeats a stored memory, and an update or delete of
// a memory the model was not shown, are skipped (Result.Skipped), so the
// model can neither duplicate memories nor touch another user's. Writes
// are one transaction; deletes follow it.
//
// A failure of the model is an error matching ErrExtraction; nothing is
// written then.
func (m *Manager[T]) Extract(ctx context.Context, user string, msgs []llm.Message) (Result, error) {
	res := Result{Kind: m.opts.Kind}
	ns, err := Namespace(user, m.opts.Kind)
	if err != nil {
		return res, err
	}
	convo := renderConversation(msgs, m.opts.MaxConversation)
	if strings.TrimSpace(convo) == "" {
		return res, nil
	}
	existing, err := m.search(ctx, ns, searchText(msgs, convo), m.opts.Existing)
	if err != nil {
		return res, err
	}
	// The model refers to memories by short ids (m1, m2): a UUID would be
	// copied wrong now and then.
	byShort := make(map[string]*Memory[T], len(existing))
	var shown strings.Builder
	for i := range existing {
		short := "m" + strconv.Itoa(i+1)
		byShort[short] = &existing[i]
		c, _ := json.Marshal(existing[i].Content)
		fmt.Fprintf(&shown, "[%s] %s\n", short, c)
	}
	if shown.Len() == 0 {
		shown.WriteString("(none)\n")
	}
	prompt := []llm.Message{
		llm.System("You are the memory manager of an AI assistant. " + m.opts.Instructions + "\n\n" + consolidationRules(m.opts.NoDeletes)),
		llm.Human("<existing_memories>\n" + shown.String() + "</existing_memories>\n\n<conversation>\n" + convo + "\n</conversation>\n\nAnswer with the operations to apply."),
	}
	so := m.opts.Structured
	so.Name = "memory_operations"
	so.Description = "The changes to make to the stored memories."
	so.TypeSchemas = map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[OpKind](): {Type: "string", Enum: []any{string(OpInsert), string(OpUpdate), string(OpDelete)}},
	}
	var ops Operations[T]
	err = bounded(ctx, m.opts.Timeout, func(ctx context.Context) (err error) {
		ops, err = llm.Structured[Operations[T]](ctx, m.model, prompt, &so)
		return err
	})
	if err != nil {
		return res, fmt.Errorf("%w (%s, user %q): %w", ErrExtraction, m.opts.Kind, user, err)
	}
	return m.apply(ctx, ns, byShort, ops.Operations, res)
}

func consolidationRules(noDeletes bool) string {
	rules := `Consolidate with the existing memories:
- insert a memory only when no existing memory says the same; never repeat one;
- update an existing memory (by its id) when the conversation refines, extends or corrects it, writing the whole new memory;
`
	if noDeletes {
		rules += "- do not delete memories;\n"
	} else {
		rules += "- delete an existing memory (by its id) when it is now wrong or the user asked to forget it;\n"
	}
	return rules + "- when nothing is worth remembering, answer with an empty list of operations."
}

// apply validates the operations against what the model was shown and
// writes them.
func (m *Manager[T]) apply(ctx context.Context, ns []string, shown map[string]*Memory[T], ops []Operation[T], res Result) (Result, error) {
	hashes := map[string]string{} // text hash -> id, of shown and new memories
	for short, mem := range shown {
		hashes[digest(normalize(mem.Content.Text()))] = short
	}
	touched := map[string]bool{}
	var puts []store.PutRequest
	var deletes []string
	skip := func(i int, why string) { res.Skipped = append(res.Skipped, fmt.Sprintf("operation %d: %s", i+1, why)) }
	for i, op := range ops {
		switch op.Op {
		case OpInsert, OpUpdate:
			if op.Content == nil || strings.TrimSpace((*op.Content).Text()) == "" {
				skip(i, string(op.Op)+" without content")
				continue
			}
			h := digest(normalize((*op.Content).Text()))
			if op.Op == OpInsert {
				if dup, ok := hashes[h]; ok {
					skip(i, "insert repeats memory "+dup)
					continue
				}
				// The model saw the most relevant memories, not all: check
				// the rest by hash before adding one.
				found, err := m.findByHash(ctx, ns, h)
				if err != nil {
					return res, err
				}
				if found != "" {
					skip(i, "insert repeats stored memory "+found)
					continue
				}
				id := ids.Random()
				hashes[h] = id
				puts = append(puts, m.put(ns, id, *op.Content, h))
				res.Inserted = append(res.Inserted, id)
				continue
			}
			mem, ok := shown[op.ID]
			switch {
			case !ok:
				skip(i, fmt.Sprintf("update of unknown memory %q", op.ID))
				continue
			case touched[op.ID]:
				skip(i, "memory "+op.ID+" changed twice")
				continue
			}
			if dup, ok := hashes[h]; ok {
				if dup != op.ID {
					skip(i, "update of "+op.ID+" repeats memory "+dup)
				} else {
					skip(i, "update of "+op.ID+" changes nothing")
				}
				continue
			}
			touched[op.ID] = true
			hashes[h] = op.ID
			puts = append(puts, m.put(ns, mem.ID, *op.Content, h))
			res.Updated = append(res.Updated, mem.ID)
		case OpDelete:
			mem, ok := shown[op.ID]
			switch {
			case m.opts.NoDeletes:
				skip(i, "deletes are turned off")
			case !ok:
				skip(i, fmt.Sprintf("delete of unknown memory %q", op.ID))
			case touched[op.ID]:
				skip(i, "memory "+op.ID+" changed twice")
			default:
				touched[op.ID] = true
				deletes = append(deletes, mem.ID)
				res.Deleted = append(res.Deleted, mem.ID)
			}
		default:
			skip(i, fmt.Sprintf("unknown operation %q", op.Op))
		}
	}
	if len(puts) > 0 {
		if err := bounded(ctx, m.opts.StoreTimeout, func(ctx context.Context) error { return m.st.PutMany(ctx, puts) }); err != nil {
			return Result{Kind: res.Kind}, fmt.Errorf("memory: write %d memories: %w", len(puts), err)
		}
	}
	for i, id := range deletes {
		if err := bounded(ctx, m.opts.StoreTimeout, func(ctx context.Context) error { return m.st.Delete(ctx, ns, id) }); err != nil {
			res.Deleted = res.Deleted[:i]
			return res, fmt.Errorf("memory: delete memory %s: %w", id, err)
		}
	}
	return res, nil
}

func (m *Manager[T]) put(ns []string, id string, c T, hash string) store.PutRequest {
	return store.PutRequest{
		Namespace: ns, Key: id,
		Value:   record[T]{Kind: m.opts.Kind, Content: c, Text: c.Text(), Hash: hash},
		Options: store.PutOptions{Index: indexText, TTL: store.NoTTL},
	}
}

func (m *Manager[T]) findByHash(ctx context.Context, ns []string, hash string) (string, error) {
	var items []store.Item
	err := bounded(ctx, m.opts.StoreTimeout, func(ctx context.Context) (err error) {
		items, err = m.st.Search(ctx, ns, store.SearchOptions{Filter: map[string]any{"hash": hash}, Limit: 1})
		return err
	})
	if err != nil || len(items) == 0 {
		return "", err
	}
	return items[0].Key, nil
}

// Search returns user's memories most similar to query, best first.
func (m *Manager[T]) Search(ctx context.Context, user, query string, limit int) ([]Memory[T], error) {
	ns, err := Namespace(user, m.opts.Kind)
	if err != nil {
		return nil, err
	}
	if limit < 1 {
		return nil, fmt.Errorf("%w: limit %d; expected at least 1", ErrInvalid, limit)
	}
	return m.search(ctx, ns, query, limit)
}

// List returns user's memories, most recently updated first.
func (m *Manager[T]) List(ctx context.Context, user string, limit int) ([]Memory[T], error) {
	return m.Search(ctx, user, "", limit)
}

func (m *Manager[T]) search(ctx context.Context, ns []string, query string, limit int) ([]Memory[T], error) {
	var items []store.Item
	err := bounded(ctx, m.opts.StoreTimeout, func(ctx context.Context) (err error) {
		items, err = m.st.Search(ctx, ns, store.SearchOptions{Query: query, Limit: limit})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("memory: search %s memories: %w", m.opts.Kind, err)
	}
	out := make([]Memory[T], 0, len(items))
	for i := range items {
		mem, err := decodeMemory[T](&items[i])
		if err != nil {
			return nil, err
		}
		out = append(out, mem)
	}
	return out, nil
}

func decodeMemory[T Content](it *store.Item) (Memory[T], error) {
	var r record[T]
	if err := it.Decode(&r); err != nil {
		return Memory[T]{}, fmt.Errorf("%w: memory %s under %s: %v", store.ErrCorrupt, it.Key, store.JoinNamespace(it.Namespace), err)
	}
	mem := Memory[T]{ID: it.Key, Kind: r.Kind, Content: r.Content, CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt}
	if it.Score != nil {
		mem.Score = *it.Score
	}
	return mem, nil
}

// Get returns user's memory id, or an error matching ErrNotFound.
func (m *Manager[T]) Get(ctx context.Context, user, id string) (Memory[T], error) {
	ns, err := Namespace(user, m.opts.Kind)
	if err != nil {
		return Memory[T]{}, err
	}
	var it *store.Item
	err = bounded(ctx, m.opts.StoreTimeout, func(ctx context.Context) (err error) {
		it, err = m.st.Get(ctx, ns, id, store.GetOptions{})
		return err
	})
	switch {
	case err != nil:
		return Memory[T]{}, err
	case it == nil:
		return Memory[T]{}, fmt.Errorf("%w: %s memory %q of user %q", ErrNotFound, m.opts.Kind, id, user)
	}
	return decodeMemory[T](it)
}

// Put stores c as user's memory id, or as a new memory when id is empty,
// and returns its id. A new memory that repeats a stored one is not added:
// the stored one's id is returned, with created false.
func (m *Manager[T]) Put(ctx context.Context, user, id string, c T) (got string, created bool, err error) {
	ns, err := Namespace(user, m.opts.Kind)
	if err != nil {
		return "", false, err
	}
	if strings.TrimSpace(c.Text()) == "" {
		return "", false, fmt.Errorf("%w: an empty memory", ErrInvalid)
	}
	h := digest(normalize(c.Text()))
	if id == "" {
		dup, err := m.findByHash(ctx, ns, h)
		if err != nil || dup != "" {
			return dup, false, err
		}
		id, created = ids.Random(), true
	} else if _, err := m.Get(ctx, user, id); err != nil {
		return "", false, err
	}
	err = bounded(ctx, m.opts.StoreTimeout, func(ctx context.Context) error { return m.st.PutMany(ctx, []store.PutRequest{m.put(ns, id, c, h)}) })
	if err != nil {
		return "", false, err
	}
	return id, created, nil
}

// find returns the id of user's stored memory whose text is c's (ignoring
// case and spacing), or ErrNotFound.
func (m *Manager[T]) find(ctx context.Context, user string, c T) (string, error) {
	ns, err := Namespace(user, m.opts.Kind)
	if err != nil {
		return "", err
	}
	id, err := m.findByHash(ctx, ns, digest(normalize(c.Text())))
	if err == nil && id == "" {
		err = fmt.Errorf("%w: no %s memory of user %q says %q", ErrNotFound, m.opts.Kind, user, clip(c.Text(), 80))
	}
	return id, err
}

// Delete removes user's memory id; it fails with ErrNotFound when there is
// none, so that a model deleting by a wrong id hears of it.
func (m *Manager[T]) Delete(ctx context.Context, user, id string) error {
	ns, err := Namespace(user, m.opts.Kind)
	if err != nil {
		return err
	}
	if _, err := m.Get(ctx, user, id); err != nil {
		return err
	}
	return bounded(ctx, m.opts.StoreTimeout, func(ctx context.Context) error { return m.st.Delete(ctx, ns, id) })
}

// renderConversation writes msgs as the lines a manager shows the model,
// keeping the last max characters.
func renderConversation(msgs []llm.Message, max int) string {
	var lines []string
	for _, msg := range msgs {
		text := strings.TrimSpace(msg.Text())
		switch msg.Type {
		case llm.TypeHuman:
			lines = append(lines, "user: "+text)
		case llm.TypeAI:
			for _, c := range msg.ToolCalls {
				text = strings.TrimSpace(text + " [calls " + c.Name + " " + clip(string(c.Args), 200) + "]")
			}
			if text != "" {
				lines = append(lines, "assistant: "+text)
			}
		case llm.TypeTool:
			lines = append(lines, "tool "+msg.Name+": "+clip(text, 500))
		}
	}
	out := strings.Join(lines, "\n")
	if len(out) > max {
		out = out[len(out)-max:]
		if i := strings.IndexByte(out, '\n'); i >= 0 {
			out = out[i+1:] // start at a whole line
		}
	}
	return out
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// searchText is what finds the stored memories relevant to a
// conversation: what the user said (the assistant's words would pull in
// memories about whatever it talked of).
func searchText(msgs []llm.Message, convo string) string {
	var said []string
	for _, m := range slices.Backward(msgs) {
		if m.Type == llm.TypeHuman {
			said = append(said, m.Text())
		}
		if len(said) == 5 {
			break
		}
	}
	if len(said) == 0 {
		return clip(convo, 2000)
	}
	slices.Reverse(said)
	return clip(strings.Join(said, "\n"), 2000)
}
