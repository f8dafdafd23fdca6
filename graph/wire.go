package graph

import (
	"encoding/hex"
	"hash/fnv"
)

// interruptID is the id of the interrupt a task raises: 32 lowercase hex
// digits, the form LangGraph gives interrupt ids (a 128-bit hash of the
// task's namespace), so that clients which tell a map of interrupt ids
// from a resume value by that form (LangGraph's Command(resume={id: v}))
// read weft's the same way. It is the same for every attempt of the task.
func interruptID(ns string) string {
	h := fnv.New128a()
	h.Write([]byte(ns))
	h.Write([]byte{0})
	var b [16]byte
	return hex.EncodeToString(h.Sum(b[:0]))
}

// IsInterruptID reports whether s has the form of an interrupt id: 32
// lowercase hex digits. A resume value that is a map whose keys all have
// this form is a map of interrupt id to value (ResumeByID).
func IsInterruptID(s string) bool {
	if len(s) != 32 {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// messageEvent tags a streamed message with the task that made it.
func (t *task) messageEvent(msg any, step int) MessageEvent {
	return MessageEvent{
		Message:   msg,
		Node:      t.name,
		Step:      step,
		TaskID:    t.id,
		Triggers:  t.triggers,
		Path:      t.path(),
		Namespace: t.ns,
	}
}

// path is LangGraph's task path: how the task came to be scheduled. It is
// made once per task and shared by the task's message events, which only
// read it.
func (t *task) path() []any {
	t.pathOnce.Do(func() {
		if t.kind == pushTask {
			t.pathV = []any{"__pregel_push", t.idx}
		} else {
			t.pathV = []any{"__pregel_pull", t.name}
		}
	})
	return t.pathV
}
