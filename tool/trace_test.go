package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/tool"
)

type traced struct {
	mu     sync.Mutex
	starts []tool.CallInfo
	done   map[string]error // by call id, or by name for Tool.Run
	codes  map[string]string
	sawCtx map[string]bool // whether CallDone got CallStart's context
}

type callKey struct{}

func newTraced() (*traced, *tool.Trace) {
	r := &traced{done: map[string]error{}, codes: map[string]string{}, sawCtx: map[string]bool{}}
	return r, &tool.Trace{
		CallStart: func(ctx context.Context, c tool.CallInfo) context.Context {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.starts = append(r.starts, c)
			return context.WithValue(ctx, callKey{}, c)
		},
		CallDone: func(ctx context.Context, c tool.CallInfo, res tool.Result[any], err error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			id := c.ID
			if id == "" {
				id = c.Name
			}
			r.done[id] = err
			r.codes[id] = res.ErrorCode
			r.sawCtx[id] = ctx.Value(callKey{}) == c
		},
	}
}

// Every call the tool node makes, whatever its outcome, is seen by the
// context's Trace, with its id, its envelope and its error.
func TestTraceSeesNodeCalls(t *testing.T) {
	ok := tool.New("replace_places", "x", replacePlaces)
	boom := tool.New("boom", "panics", func(context.Context, struct{}) (int, error) { panic("kaput") })
	reg, err := tool.NewRegistry(ok, boom)
	if err != nil {
		t.Fatal(err)
	}
	g, err := graph.New(messages).AddNode("tools", tool.Node(reg, messages, tool.NodeOptions{}), nil).
		AddEdge(graph.START, "tools").Compile(nil)
	if err != nil {
		t.Fatal(err)
	}
	rec, tr := newTraced()
	ctx := tool.WithTrace(context.Background(), tr)
	in := messages.Write(llm.Human("go"), llm.AI("",
		call("1", "replace_places", `{"latitude": 1, "longitude": 2}`),
		call("2", "boom", `{}`),
		call("3", "nope", `{}`),
		call("4", "replace_places", `{"latitude": "north"}`),
	))
	if _, err := g.Invoke(ctx, in, nil); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, 0, len(rec.starts))
	for _, s := range rec.starts {
		ids = append(ids, s.ID+":"+s.Name)
	}
	slices.Sort(ids)
	if want := []string{"1:replace_places", "2:boom", "3:nope", "4:replace_places"}; !slices.Equal(ids, want) {
		t.Errorf("calls started = %v; want %v", ids, want)
	}
	wantErr := map[string]error{"1": nil, "2": tool.ErrPanic, "3": tool.ErrUnknownTool, "4": tool.ErrInvalidArgs}
	wantCode := map[string]string{"1": "", "2": tool.CodePanic, "3": tool.CodeUnknownTool, "4": tool.CodeInvalidArgs}
	for id, want := range wantErr {
		if got := rec.done[id]; !errors.Is(got, want) || (want == nil) != (got == nil) {
			t.Errorf("call %s ended with %v; want %v", id, got, want)
		}
		if rec.codes[id] != wantCode[id] {
			t.Errorf("call %s envelope code %q; want %q", id, rec.codes[id], wantCode[id])
		}
		if !rec.sawCtx[id] {
			t.Errorf("call %s: CallDone did not get the context CallStart returned", id)
		}
	}
}

// Tool.Run is traced too; without a Trace nothing changes.
func TestTraceSeesRun(t *testing.T) {
	tl := tool.New("replace_places", "x", replacePlaces)
	rec, tr := newTraced()
	if _, err := tl.Run(tool.WithTrace(context.Background(), tr), json.RawMessage(`{"latitude": 0, "longitude": 0}`), 0); !errors.Is(err, tool.ErrFailed) {
		t.Fatalf("Run = %v", err)
	}
	if len(rec.starts) != 1 || rec.starts[0] != (tool.CallInfo{Name: "replace_places"}) || !errors.Is(rec.done["replace_places"], tool.ErrFailed) {
		t.Errorf("trace saw %+v, %v", rec.starts, rec.done)
	}
	if _, err := tl.Run(context.Background(), json.RawMessage(`{"latitude": 1, "longitude": 1}`), 0); err != nil {
		t.Errorf("Run without a trace = %v", err)
	}
}
