package cli

import (
	"container/list"
	"context"
	"iter"
	"slices"
	"sync"

	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/scripted"
)

// demoThreads bounds how many threads' scripts a served demo model keeps;
// the least recently used thread starts its script again when it returns.
const demoThreads = 1000

// threadScripts plays a demo script once per thread: each conversation
// (a run's thread, graph.CurrentTask) hears the script from its top,
// whatever other conversations the server holds, as a person trying the
// offline demo expects. One script shared by every thread would hand a new
// conversation the reply that was next for another one (a routing reply
// where an answer belongs, say).
type threadScripts struct {
	data []byte

	mu      sync.Mutex
	byID    map[string]*list.Element // of *threadScript
	recency *list.List               // front: most recently used
}

type threadScript struct {
	thread string
	model  *scripted.Model
}

func newThreadScripts(data []byte) (*threadScripts, error) {
	// Parsed once here so that a bad script is refused at start.
	if _, err := scripted.Parse(data); err != nil {
		return nil, err
	}
	return &threadScripts{data: data, byID: map[string]*list.Element{}, recency: list.New()}, nil
}

func (s *threadScripts) forThread(ctx context.Context) (*scripted.Model, error) {
	thread := ""
	if ti, ok := graph.CurrentTask(ctx); ok {
		thread = ti.ThreadID
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if el, ok := s.byID[thread]; ok {
		s.recency.MoveToFront(el)
		return el.Value.(*threadScript).model, nil
	}
	m, err := scripted.Parse(s.data)
	if err != nil {
		return nil, err
	}
	s.byID[thread] = s.recency.PushFront(&threadScript{thread: thread, model: m})
	for s.recency.Len() > demoThreads {
		old := s.recency.Back()
		s.recency.Remove(old)
		delete(s.byID, old.Value.(*threadScript).thread)
	}
	return m, nil
}

// threadScripted is the llm.ChatModel over threadScripts, with the tools
// bound to it.
type threadScripted struct {
	s     *threadScripts
	tools []llm.ToolSpec
	bound bool
}

func (m threadScripted) model(ctx context.Context) (llm.ChatModel, error) {
	base, err := m.s.forThread(ctx)
	if err != nil {
		return nil, err
	}
	if m.bound {
		return base.BindTools(m.tools), nil
	}
	return base, nil
}

// Generate implements llm.ChatModel.
func (m threadScripted) Generate(ctx context.Context, msgs []llm.Message, opts ...llm.CallOptions) (llm.Message, error) {
	mm, err := m.model(ctx)
	if err != nil {
		return llm.Message{}, err
	}
	return mm.Generate(ctx, msgs, opts...)
}

// Stream implements llm.ChatModel.
func (m threadScripted) Stream(ctx context.Context, msgs []llm.Message, opts ...llm.CallOptions) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		mm, err := m.model(ctx)
		if err != nil {
			yield(llm.Chunk{}, err)
			return
		}
		for c, err := range mm.Stream(ctx, msgs, opts...) {
			if !yield(c, err) {
				return
			}
		}
	}
}

// BindTools implements llm.ChatModel.
func (m threadScripted) BindTools(tools []llm.ToolSpec) llm.ChatModel {
	return threadScripted{s: m.s, tools: slices.Clone(tools), bound: true}
}
