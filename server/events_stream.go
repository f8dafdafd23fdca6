package server

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/internal/ids"
	"github.com/weftlabs/weft/internal/jsonx"
	"github.com/weftlabs/weft/llm"
)

// The "events" stream mode: LangChain's stream events (astream_events,
// version 2), which the reference server sends as "events" SSE events,
// each {"event", "name", "run_id", "parent_ids", "tags", "metadata",
// "data"}:
//
//	on_chain_start / on_chain_end       the graph (named after it, run_id the run's)
//	                                     and each of its nodes (run_id the task's)
//	on_chat_model_start / _stream / _end a model's reply streamed in a node
//	on_tool_start / _end / _error        a tool call made in a node
//
// parent_ids are the run ids of the runs an event's run is nested in, the
// outermost first: none for the graph, the graph's for a node, the
// graph's and the node's for a model reply or a tool call.
//
// A subgraph's events are nested the same way, whether or not the client
// asked for stream_subgraphs: inside the chain of the node that runs it,
// the subgraph's own run (on_chain_start/on_chain_end named after the
// subgraph, with the node's input and metadata, started by the
// subgraph's first event and ended, with its last values, before the
// node's chain), and inside that its nodes' chains, replies and tool
// calls, with the subgraph's namespace in their metadata's checkpoint_ns.
//
// weft builds them from the run's task, message and tools events: a
// node's chain starts with its task and ends with its result (its update
// as output); a model's reply starts with its first chunk (the prompt is
// not known there, so its start event carries no input), streams each
// chunk, and ends, with the whole reply as output, when its node's task
// ends. A tool call starts with its arguments as input and ends with its
// input and its result as output (the tool message, for the tool node's
// calls), or fails with its input and its error ({"error", "message"}).
// A tool's progress (tool.Progress) has no stream event: LangChain has
// none for it (the tools mode carries it).

// langchainRun is the state of the events mode for one run.
type langchainRun struct {
	graphName, runID string
	// open lists, per task, the replies streamed in it not yet ended, in
	// the order they began; reply holds each one's chunks merged, and its
	// metadata.
	open  map[string][]string
	reply map[string]*streamedReply
	// calls holds, per task, its tool calls started and not yet ended,
	// by toolKey.
	calls map[string]map[string]*toolRun
	// g is the graph run, whose subgraphs name their runs.
	g *graph.Graph
	// tasks holds, per task started and not yet ended, its chain's input
	// and metadata; subs, per task that runs a subgraph, the subgraph's
	// run, opened by the subgraph's first event and ended with the task.
	tasks map[string]*taskRun
	subs  map[string]*subRun
}

// taskRun is a node's chain started in the events mode: what its end, and
// the run of a subgraph it runs, repeat.
type taskRun struct {
	input, meta []byte
}

// subRun is a subgraph's own chain, nested in the chain of the task that
// runs it: its run id, name, parent_ids and metadata, and its last values
// (its output).
type subRun struct {
	runID, name string
	parents     []string
	meta        []byte
	values      *graph.State
}

// toolRun is a tool call started in the events mode: what its end event
// repeats.
type toolRun struct {
	runID, name string
	input, meta []byte
}

// lcField is a member of a stream event's data.
type lcField struct {
	key   string
	value []byte
}

type streamedReply struct {
	chunk   llm.Chunk
	meta    []byte
	parents []string
}

// startEvents sends the graph's on_chain_start, with the run's input, when
// the client asked for the events mode.
func (e *encoder) startEvents(g *graph.Graph, runID string, input json.RawMessage, emit func(string, []byte) error) error {
	if !e.want[modeEvents] {
		return nil
	}
	graphName := graphRunName(g)
	e.lc = &langchainRun{
		graphName: graphName, runID: runID, g: g,
		open: map[string][]string{}, reply: map[string]*streamedReply{}, calls: map[string]map[string]*toolRun{},
		tasks: map[string]*taskRun{}, subs: map[string]*subRun{},
	}
	if len(input) == 0 {
		input = json.RawMessage("null")
	}
	return emit(modeEvents, e.lcEvent("on_chain_start", graphName, runID, nil, nil, e.runMetaJSON(), lcField{"input", input}))
}

// endEvents sends the graph's on_chain_end with its last values, once the
// run ended without an error.
func (e *encoder) endEvents(emit func(string, []byte) error) error {
	if e.lc == nil {
		return nil
	}
	values, err := e.finalValues()
	if err != nil {
		return err
	}
	if values == nil {
		values = json.RawMessage("null")
	}
	return emit(modeEvents, e.lcEvent("on_chain_end", e.lc.graphName, e.lc.runID, nil, nil, e.runMetaJSON(), lcField{"output", values}))
}

// graphRunName names a graph's run: after the graph, LangGraph when it
// has no name (or is not known).
func graphRunName(g *graph.Graph) string {
	if g == nil || g.Name() == "" {
		return "LangGraph"
	}
	return g.Name()
}

// runMetaJSON is the run's metadata as a JSON object.
func (e *encoder) runMetaJSON() []byte {
	return append(append([]byte(nil), e.meta...), '}')
}

// taskMeta is the metadata of a node's events: the run's, and the task's
// as messages events carry it; ns is the namespace of the (sub)graph the
// task runs in, the task's own checkpoint namespace is ns's and its own.
func (e *encoder) taskMeta(ns []string, name, id string, step int, triggers []string) []byte {
	own := name + ":" + id
	if len(ns) > 0 {
		own = strings.Join(ns, "|") + "|" + own
	}
	return e.appendMeta(nil, graph.MessageEvent{
		Node: name, Step: step, TaskID: id, Triggers: triggers,
		Path: []any{"__pregel_pull", name}, Namespace: own,
	})
}

// lcEvent encodes one stream event; parents are its parent_ids, data
// the members of its data.
func (e *encoder) lcEvent(event, name, runID string, tags, parents []string, meta []byte, data ...lcField) []byte {
	size := 160 + len(meta)
	for _, f := range data {
		size += len(f.key) + len(f.value) + 4
	}
	b := make([]byte, 0, size)
	b = append(b, `{"event":`...)
	b = jsonx.AppendString(b, event, true)
	b = append(b, `,"name":`...)
	b = jsonx.AppendString(b, name, true)
	b = append(b, `,"run_id":`...)
	b = jsonx.AppendString(b, runID, true)
	b = append(b, `,"parent_ids":`...)
	b = appendStrings(b, parents)
	b = append(b, `,"tags":`...)
	b = appendStrings(b, tags)
	b = append(b, `,"metadata":`...)
	b = append(b, meta...)
	b = append(b, `,"data":{`...)
	for i, f := range data {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonx.AppendString(b, f.key, true)
		b = append(b, ':')
		b = append(b, f.value...)
	}
	return append(b, "}}"...)
}

// appendStrings appends ss as a JSON array ([] for none).
func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonx.AppendString(b, s, true)
	}
	return append(b, ']')
}

// nsTask is the id of the task a namespace's part ("node:task_id") names.
func nsTask(part string) string { return part[strings.LastIndexByte(part, ':')+1:] }

// chainParents are the parent_ids of a node's chain in the (sub)graph at
// namespace ns: the graph's run, then, for each subgraph on the way, the
// chain of the task that runs it and the subgraph's own run.
func (e *encoder) chainParents(ns []string) []string {
	out := make([]string, 1, 1+2*len(ns))
	out[0] = e.lc.runID
	for _, part := range ns {
		task := nsTask(part)
		out = append(out, task)
		if sr := e.lc.subs[task]; sr != nil {
			out = append(out, sr.runID)
		}
	}
	return out
}

// taskParents are the parent_ids of a run nested in a task's chain (a
// model reply, a tool call): the task's chain's, and the task's. checkNS
// is the task's checkpoint namespace, its parents' parts before its own.
func (e *encoder) taskParents(checkNS, task string) []string {
	i := strings.LastIndexByte(checkNS, '|')
	if i < 0 {
		return []string{e.lc.runID, task}
	}
	return append(e.chainParents(strings.Split(checkNS[:i], "|")), task)
}

// openSubs opens the run of each subgraph on the way to namespace ns not
// yet open: a subgraph's run starts with its first event, nested in the
// chain of the task that runs it, with that chain's input and metadata,
// and is named after the subgraph.
func (e *encoder) openSubs(ns []string, emit func(string, []byte) error) error {
	for i, part := range ns {
		task := nsTask(part)
		if e.lc.subs[task] != nil {
			continue
		}
		sr := &subRun{runID: ids.Random(), name: e.subName(ns[:i+1]), parents: append(e.chainParents(ns[:i]), task)}
		input := []byte("null")
		if tr := e.lc.tasks[task]; tr != nil {
			input, sr.meta = tr.input, tr.meta
		} else {
			sr.meta = e.runMetaJSON()
		}
		e.lc.subs[task] = sr
		if err := emit(modeEvents, e.lcEvent("on_chain_start", sr.name, sr.runID, nil, sr.parents, sr.meta, lcField{"input", input})); err != nil {
			return err
		}
	}
	return nil
}

// subName names the run of the subgraph at namespace ns after the
// subgraph, found by its nodes' names; a graph a node invokes from inside
// its function is not known by them, and is LangGraph.
func (e *encoder) subName(ns []string) string {
	if e.lc.g == nil {
		return "LangGraph"
	}
	nodes := make([]string, len(ns))
	for i, part := range ns {
		nodes[i] = part
		if j := strings.LastIndexByte(part, ':'); j >= 0 {
			nodes[i] = part[:j]
		}
	}
	for _, sg := range e.lc.g.Subgraphs(strings.Join(nodes, "|"), true) {
		return graphRunName(sg)
	}
	return "LangGraph"
}

// encodeEvents turns a task, message or tools event of the graph or of
// one of its subgraphs into stream events, in the events mode; a
// subgraph's values events make its run's output.
func (e *encoder) encodeEvents(ev graph.Event, emit func(string, []byte) error) error {
	if e.lc == nil {
		return nil
	}
	if len(ev.Namespace) > 0 {
		switch ev.Mode {
		case graph.StreamTasks, graph.StreamMessages, graph.StreamTools, graph.StreamValues:
			if err := e.openSubs(ev.Namespace, emit); err != nil {
				return err
			}
		}
	}
	switch ev.Mode {
	case graph.StreamValues:
		if len(ev.Namespace) > 0 {
			s, _ := ev.Values()
			e.lc.subs[nsTask(ev.Namespace[len(ev.Namespace)-1])].values = &s
		}
	case graph.StreamTasks:
		if ts, ok := ev.TaskStart(); ok {
			input, err := json.Marshal(ts.Input)
			if err != nil {
				return err
			}
			tr := &taskRun{input: input, meta: e.taskMeta(ev.Namespace, ts.Name, ts.ID, ts.Step, ts.Triggers)}
			e.lc.tasks[ts.ID] = tr
			return emit(modeEvents, e.lcEvent("on_chain_start", ts.Name, ts.ID, stepTags(ts.Step), e.chainParents(ev.Namespace), tr.meta, lcField{"input", input}))
		}
		if tr, ok := ev.TaskResult(); ok {
			return e.endTask(ev.Namespace, tr, emit)
		}
	case graph.StreamMessages:
		me, _ := ev.Message()
		c, ok := me.Message.(llm.Chunk)
		if !ok || c.ID == "" {
			return nil
		}
		r := e.lc.reply[c.ID]
		if r == nil {
			meta := e.appendMeta(nil, me)
			meta = append(meta[:len(meta)-1], `,"ls_model_type":"chat"}`...)
			r = &streamedReply{chunk: c, meta: meta, parents: e.taskParents(me.Namespace, me.TaskID)}
			e.lc.reply[c.ID] = r
			e.lc.open[me.TaskID] = append(e.lc.open[me.TaskID], c.ID)
			if err := emit(modeEvents, e.lcEvent("on_chat_model_start", modelName(c), replyRunID(c.ID), nil, r.parents, meta)); err != nil {
				return err
			}
		} else {
			r.chunk = llm.Merge(r.chunk, c)
		}
		chunk, err := appendChunk(nil, c)
		if err != nil {
			return err
		}
		return emit(modeEvents, e.lcEvent("on_chat_model_stream", modelName(c), replyRunID(c.ID), nil, r.parents, r.meta, lcField{"chunk", chunk}))
	case graph.StreamTools:
		te, _ := ev.Tool()
		return e.toolEvent(te, emit)
	}
	return nil
}

// toolEvent turns a tool call's start, end or failure into its stream
// event. Its progress has none.
func (e *encoder) toolEvent(te graph.ToolEvent, emit func(string, []byte) error) error {
	task := te.Task.TaskID
	key := toolKey(te)
	switch te.Kind {
	case graph.ToolStarted:
		input := toolValue(te.Input)
		if string(input) == "null" {
			input = []byte("{}") // as LangChain sends a tool's missing input
		}
		runID := te.RunID
		if runID == "" {
			runID = ids.Random()
		}
		r := &toolRun{runID: runID, name: te.Name, input: input, meta: e.appendMeta(nil, te.Task)}
		calls := e.lc.calls[task]
		if calls == nil {
			calls = map[string]*toolRun{}
			e.lc.calls[task] = calls
		}
		calls[key] = r
		return emit(modeEvents, e.lcEvent("on_tool_start", r.name, r.runID, nil, e.taskParents(te.Task.Namespace, task), r.meta, lcField{"input", input}))
	case graph.ToolEnded, graph.ToolFailed:
		r := e.lc.calls[task][key]
		if r == nil {
			return nil // its start was not seen
		}
		delete(e.lc.calls[task], key)
		event, field, value := "on_tool_end", "output", any(te.Output)
		if te.Kind == graph.ToolFailed {
			event, field, value = "on_tool_error", "error", te.Error
		}
		return emit(modeEvents, e.lcEvent(event, r.name, r.runID, nil, e.taskParents(te.Task.Namespace, task), r.meta, lcField{"input", r.input}, lcField{field, toolValue(value)}))
	}
	return nil
}

// toolValue is a tool call's input, output or error as JSON: null for a
// value that does not encode (the tool package sends only values that do;
// code of its own calling graph.StreamTool may not), which must not fail
// the stream of a run that did not ask for the tools mode.
func toolValue(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte("null")
	}
	return b
}

// toolKey tells a task's tool calls apart: by their run id, or, for
// events sent without one, by their tool call id and tool name.
func toolKey(te graph.ToolEvent) string {
	if te.RunID != "" {
		return te.RunID
	}
	return te.ToolCallID + "\x00" + te.Name
}

// endTask ends the replies streamed in a task, then the run of the
// subgraph it ran, with the subgraph's last values as output, then the
// task's chain, with its update as output; ns is the namespace of the
// (sub)graph the task ran in.
func (e *encoder) endTask(ns []string, tr graph.TaskResult, emit func(string, []byte) error) error {
	for _, id := range e.lc.open[tr.ID] {
		r := e.lc.reply[id]
		out, err := appendChunk(nil, r.chunk)
		if err != nil {
			return err
		}
		if err := emit(modeEvents, e.lcEvent("on_chat_model_end", modelName(r.chunk), replyRunID(id), nil, r.parents, r.meta, lcField{"output", out})); err != nil {
			return err
		}
		delete(e.lc.reply, id)
	}
	delete(e.lc.open, tr.ID)
	delete(e.lc.calls, tr.ID) // calls the task left unended end with it, unreported
	started := e.lc.tasks[tr.ID]
	delete(e.lc.tasks, tr.ID)
	sr := e.lc.subs[tr.ID]
	if tr.Error != "" {
		delete(e.lc.subs, tr.ID)
		return nil // the run fails: LangChain ends a failed chain with no end event
	}
	if sr != nil {
		out := []byte("null")
		if sr.values != nil {
			var err error
			if out, err = sr.values.MarshalJSON(); err != nil {
				return err
			}
		}
		if err := emit(modeEvents, e.lcEvent("on_chain_end", sr.name, sr.runID, nil, sr.parents, sr.meta, lcField{"output", out})); err != nil {
			return err
		}
	}
	delete(e.lc.subs, tr.ID)
	output, err := json.Marshal(tr.Result)
	if err != nil {
		return err
	}
	meta := e.taskMeta(ns, tr.Name, tr.ID, tr.Step, nil)
	if started != nil {
		meta = started.meta
	}
	return emit(modeEvents, e.lcEvent("on_chain_end", tr.Name, tr.ID, stepTags(tr.Step), e.chainParents(ns), meta, lcField{"output", output}))
}

// stepTags are a node's tags, as LangGraph tags a node's run.
func stepTags(step int) []string { return []string{"graph:step:" + strconv.Itoa(step)} }

// replyRunID is the run id of the model call a reply came from: its
// message id is "run-" and that id, as LangChain names streamed replies.
func replyRunID(messageID string) string { return strings.TrimPrefix(messageID, "run-") }

// modelName names the model of a reply: its response metadata's
// model_name when the provider gave one, else ChatModel.
func modelName(c llm.Chunk) string {
	if n, ok := c.ResponseMetadata["model_name"].(string); ok && n != "" {
		return n
	}
	return "ChatModel"
}
