package server

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/internal/jsonx"
	"github.com/weftlabs/weft/llm"
)

// The "events" stream mode: LangChain's stream events (astream_events,
// version 2), which the reference server sends as "events" SSE events,
// each {"event", "name", "run_id", "tags", "metadata", "data"}:
//
//	on_chain_start / on_chain_end       the graph (named after it, run_id the run's)
//	                                     and each of its nodes (run_id the task's)
//	on_chat_model_start / _stream / _end a model's reply streamed in a node
//
// weft builds them from the run's task and message events: a node's
// chain starts with its task and ends with its result (its update as
// output); a model's reply starts with its first chunk (the prompt is not
// known there, so its start event carries no input), streams each chunk,
// and ends, with the whole reply as output, when its node's task ends.

// langchainRun is the state of the events mode for one run.
type langchainRun struct {
	graphName, runID string
	// open lists, per task, the replies streamed in it not yet ended, in
	// the order they began; reply holds each one's chunks merged, and its
	// metadata.
	open  map[string][]string
	reply map[string]*streamedReply
}

type streamedReply struct {
	chunk llm.Chunk
	meta  []byte
}

// startEvents sends the graph's on_chain_start, with the run's input, when
// the client asked for the events mode.
func (e *encoder) startEvents(graphName, runID string, input json.RawMessage, emit func(string, []byte) error) error {
	if !e.want[modeEvents] {
		return nil
	}
	if graphName == "" {
		graphName = "LangGraph"
	}
	e.lc = &langchainRun{graphName: graphName, runID: runID, open: map[string][]string{}, reply: map[string]*streamedReply{}}
	if len(input) == 0 {
		input = json.RawMessage("null")
	}
	return emit(modeEvents, e.lcEvent("on_chain_start", graphName, runID, nil, e.runMetaJSON(), "input", input))
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
	return emit(modeEvents, e.lcEvent("on_chain_end", e.lc.graphName, e.lc.runID, nil, e.runMetaJSON(), "output", values))
}

// runMetaJSON is the run's metadata as a JSON object.
func (e *encoder) runMetaJSON() []byte {
	return append(append([]byte(nil), e.meta...), '}')
}

// taskMeta is the metadata of a node's events: the run's, and the task's
// as messages events carry it.
func (e *encoder) taskMeta(name, id string, step int, triggers []string) []byte {
	return e.appendMeta(nil, graph.MessageEvent{
		Node: name, Step: step, TaskID: id, Triggers: triggers,
		Path: []any{"__pregel_pull", name}, Namespace: name + ":" + id,
	})
}

// lcEvent encodes one stream event; data is {key: value}.
func (e *encoder) lcEvent(event, name, runID string, tags []string, meta []byte, key string, value []byte) []byte {
	b := make([]byte, 0, 128+len(meta)+len(value))
	b = append(b, `{"event":`...)
	b = jsonx.AppendString(b, event, true)
	b = append(b, `,"name":`...)
	b = jsonx.AppendString(b, name, true)
	b = append(b, `,"run_id":`...)
	b = jsonx.AppendString(b, runID, true)
	b = append(b, `,"tags":[`...)
	for i, t := range tags {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonx.AppendString(b, t, true)
	}
	b = append(b, `],"metadata":`...)
	b = append(b, meta...)
	b = append(b, `,"data":{`...)
	if key != "" {
		b = jsonx.AppendString(b, key, true)
		b = append(b, ':')
		b = append(b, value...)
	}
	return append(b, "}}"...)
}

// encodeEvents turns a task or message event of the root graph into
// stream events, in the events mode.
func (e *encoder) encodeEvents(ev graph.Event, emit func(string, []byte) error) error {
	if e.lc == nil || len(ev.Namespace) > 0 {
		return nil
	}
	switch ev.Mode {
	case graph.StreamTasks:
		if ts, ok := ev.TaskStart(); ok {
			input, err := json.Marshal(ts.Input)
			if err != nil {
				return err
			}
			return emit(modeEvents, e.lcEvent("on_chain_start", ts.Name, ts.ID, stepTags(ts.Step), e.taskMeta(ts.Name, ts.ID, ts.Step, ts.Triggers), "input", input))
		}
		if tr, ok := ev.TaskResult(); ok {
			return e.endTask(tr, emit)
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
			r = &streamedReply{chunk: c, meta: meta}
			e.lc.reply[c.ID] = r
			e.lc.open[me.TaskID] = append(e.lc.open[me.TaskID], c.ID)
			if err := emit(modeEvents, e.lcEvent("on_chat_model_start", modelName(c), replyRunID(c.ID), nil, meta, "", nil)); err != nil {
				return err
			}
		} else {
			r.chunk = llm.Merge(r.chunk, c)
		}
		chunk, err := appendChunk(nil, c)
		if err != nil {
			return err
		}
		return emit(modeEvents, e.lcEvent("on_chat_model_stream", modelName(c), replyRunID(c.ID), nil, r.meta, "chunk", chunk))
	}
	return nil
}

// endTask ends the replies streamed in a task, then the task's chain,
// with its update as output.
func (e *encoder) endTask(tr graph.TaskResult, emit func(string, []byte) error) error {
	for _, id := range e.lc.open[tr.ID] {
		r := e.lc.reply[id]
		out, err := appendChunk(nil, r.chunk)
		if err != nil {
			return err
		}
		if err := emit(modeEvents, e.lcEvent("on_chat_model_end", modelName(r.chunk), replyRunID(id), nil, r.meta, "output", out)); err != nil {
			return err
		}
		delete(e.lc.reply, id)
	}
	delete(e.lc.open, tr.ID)
	if tr.Error != "" {
		return nil // the run fails: LangChain ends a failed chain with no end event
	}
	output, err := json.Marshal(tr.Result)
	if err != nil {
		return err
	}
	return emit(modeEvents, e.lcEvent("on_chain_end", tr.Name, tr.ID, stepTags(tr.Step), e.taskMeta(tr.Name, tr.ID, tr.Step, nil), "output", output))
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
