package events_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/agent/events"
)

var at = time.Date(2026, 2, 6, 9, 30, 0, 0, time.UTC)

func all() []events.Event {
	return []events.Event{
		events.Start{Thread: "th", Task: 2, Request: "지난 분기 채널별 성과", Time: at},
		events.Status{Message: "3/5 done", Node: "execution_collector", Done: 3, Total: 5},
		events.Token{Text: "안녕"},
		events.HumanInputRequired{Kind: "plan", Message: "approve?", Actions: []string{"accept", "edit", "reject"}},
		events.End{Status: events.EndFailed, Error: &events.Error{Code: "invalid_plan", Message: "cycle t1 → t2 → t1"}},
		events.SessionState{Thread: "th", Task: 1, Layer: events.LayerExecution, Todos: []events.TodoState{{ID: "t1", Title: "collect", Executor: "data", Status: "done", Version: 3}}},
		events.LayerStart{Layer: events.LayerPlanning, Node: "planning"},
		events.TodoProgress{TodoID: "t3", Title: "report", Executor: "content", Tool: "draft_report", Status: "running", Version: 2, Attempt: 1, Time: at},
		events.HITLRequest{Kind: "step", Message: "run it?", Actions: []string{"accept", "edit", "skip"}, Request: json.RawMessage(`{"kind":"step"}`)},
		events.Complete{Format: "mixed", Text: "# 보고서", Attachments: []events.Attachment{{Name: "chart.svg", MediaType: "image/svg+xml", Path: "/r/chart.svg"}}, NextActions: []string{"run it next month"}, Succeeded: 3},
	}
}

// Every event encodes with its name in "event", first, and decodes back to
// the same value.
func TestRoundTrip(t *testing.T) {
	for _, ev := range all() {
		t.Run(ev.Name(), func(t *testing.T) {
			data, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			want := `{"event":"` + ev.Name() + `"`
			if !strings.HasPrefix(string(data), want) {
				t.Fatalf("JSON %s does not start with %s", data, want)
			}
			var obj map[string]any
			if err := json.Unmarshal(data, &obj); err != nil {
				t.Fatalf("not an object: %s: %v", data, err)
			}
			got, err := events.Decode(data)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(ev, got); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

// The field names the server and the web UI rely on.
func TestFieldNames(t *testing.T) {
	data, _ := json.Marshal(events.TodoProgress{TodoID: "t3", Status: "running"})
	var obj map[string]any
	json.Unmarshal(data, &obj)
	for _, k := range []string{"event", "todo_id", "title", "executor", "status", "version", "time"} {
		if _, ok := obj[k]; !ok {
			t.Errorf("todo_progress JSON %s has no %q", data, k)
		}
	}
	data, _ = json.Marshal(events.Token{})
	if string(data) != `{"event":"token","text":""}` {
		t.Errorf("token JSON = %s", data)
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, c := range []struct {
		in   string
		want error
	}{
		{`not json`, events.ErrInvalidEvent},
		{`[]`, events.ErrInvalidEvent},
		{`{"text":"x"}`, events.ErrInvalidEvent},
		{`{"event":7}`, events.ErrInvalidEvent},
		{`{"event":"todo_progress","version":"x"}`, events.ErrInvalidEvent},
		{`{"event":"nope"}`, events.ErrUnknownEvent},
	} {
		if _, err := events.Decode([]byte(c.in)); !errors.Is(err, c.want) {
			t.Errorf("Decode(%s) = %v, want %v", c.in, err, c.want)
		}
	}
}

// Decode never panics, and what it accepts encodes to JSON that decodes
// to the same event.
func FuzzDecode(f *testing.F) {
	for _, ev := range all() {
		data, _ := json.Marshal(ev)
		f.Add(data)
	}
	f.Add([]byte(`{"event":"end"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := events.Decode(data)
		if err != nil {
			return
		}
		again, err := json.Marshal(ev)
		if err != nil {
			t.Fatalf("re-encoding %#v: %v", ev, err)
		}
		back, err := events.Decode(again)
		if err != nil {
			t.Fatalf("decoding re-encoded %s: %v", again, err)
		}
		if back.Name() != ev.Name() {
			t.Fatalf("name changed: %s → %s", ev.Name(), back.Name())
		}
	})
}
