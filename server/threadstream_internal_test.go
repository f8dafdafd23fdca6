package server

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/internal/redistest"
)

// Both brokers read a run's kept events without waiting, then the rest of
// the stream from there.
func TestKept(t *testing.T) {
	rc, prefix := redistest.New(t)
	brokers := map[string]func(maxBytes int) Broker{
		"memory": func(int) Broker { return newMemoryBroker() },
		"redis": func(maxBytes int) Broker {
			return NewRedisBroker(rc, &RedisBrokerOptions{Prefix: prefix + t.Name() + ":", Block: 100 * time.Millisecond, MaxStreamBytes: maxBytes})
		},
	}
	ids := func(evs []Event) []int {
		out := []int{}
		for _, ev := range evs {
			out = append(out, ev.ID)
		}
		return out
	}
	for name, newBroker := range brokers {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			b := newBroker(0)
			kr := b.(keptReader)
			if _, _, _, ok, _ := kr.Kept(ctx, "none", -1); ok {
				t.Error("Kept found a stream never opened")
			}
			if err := b.Open("r"); err != nil {
				t.Fatal(err)
			}
			for range 3 {
				_ = b.Publish("r", Event{Name: "values", Data: []byte(`{}`)})
			}
			kept, ended, rest, ok, err := kr.Kept(ctx, "r", -1)
			if !ok || err != nil || ended || rest == nil || !cmp.Equal(ids(kept), []int{0, 1, 2}) {
				t.Fatalf("Kept(-1) of a stream going = %v, ended %v, rest %v, ok %v, %v", ids(kept), ended, rest != nil, ok, err)
			}
			_ = b.Publish("r", Event{Name: "values", Data: []byte(`{}`)})
			if err := b.Close("r", time.Minute); err != nil {
				t.Fatal(err)
			}
			var after []int
			for batch, err := range rest {
				if err != nil {
					t.Fatal(err)
				}
				after = append(after, ids(batch)...)
			}
			if !cmp.Equal(after, []int{3}) {
				t.Errorf("the rest after Kept = %v; want [3]", after)
			}
			kept, ended, rest, ok, err = kr.Kept(ctx, "r", 1)
			if !ok || err != nil || !ended || rest != nil || !cmp.Equal(ids(kept), []int{2, 3}) {
				t.Errorf("Kept(1) of a stream ended = %v, ended %v, rest %v, ok %v, %v", ids(kept), ended, rest != nil, ok, err)
			}
			if kept, ended, _, _, err := kr.Kept(ctx, "r", 3); len(kept) != 0 || !ended || err != nil {
				t.Errorf("Kept after the last event = %v, ended %v, %v", ids(kept), ended, err)
			}

			// Trimmed: a reader behind what is kept is told.
			// (The in-process broker keeps 16 MiB a run, Redis here 1000
			// bytes.)
			small := newBroker(1000)
			_ = small.Open("big")
			n, data := 500, []byte(`{"x":"0123456789"}`)
			if name == "memory" {
				n, data = 20, []byte(`"`+strings.Repeat("x", 1<<20)+`"`)
			}
			for range n {
				_ = small.Publish("big", Event{Name: "values", Data: data})
			}
			if _, _, _, ok, err := small.(keptReader).Kept(ctx, "big", 0); !ok || !errors.Is(err, ErrStreamTrimmed) {
				t.Errorf("Kept behind the trimmed events: ok %v, %v; want ErrStreamTrimmed", ok, err)
			}
			if kept, _, _, _, err := small.(keptReader).Kept(ctx, "big", -1); err != nil || len(kept) == 0 || len(kept) == n || kept[len(kept)-1].ID != n-1 {
				t.Errorf("Kept from the first kept: %d events, %v", len(kept), err)
			}
			_ = small.Close("big", 0)
		})
	}
}

func TestParseThreadLastEventID(t *testing.T) {
	rid := "01a21bb8-35e9-7432-b20a-30769b5cb3e2"
	for v, want := range map[string]*threadPos{
		"":               nil,
		"-":              {after: -1},
		"-1":             {after: -1},
		rid + ":0":       {runID: rid},
		rid + ":12":      {runID: rid, after: 12},
		rid + ":done":    {runID: rid, done: true},
		" " + rid + ":3": {runID: rid, after: 3},
	} {
		got, err := parseThreadLastEventID(v)
		if err != nil || !cmp.Equal(got, want, cmp.AllowUnexported(threadPos{})) {
			t.Errorf("parseThreadLastEventID(%q) = %+v, %v; want %+v", v, got, err, want)
		}
	}
	for _, v := range []string{"0", "-2", rid, rid + ":", rid + ":01", rid + ":-1", rid + ":1.5", "x:1", rid + "x:1", ":1"} {
		if _, err := parseThreadLastEventID(v); err == nil {
			t.Errorf("parseThreadLastEventID(%q) accepted", v)
		}
	}
}

func TestParseThreadModes(t *testing.T) {
	for query, want := range map[string]threadModes{
		"":                                    {runs: true},
		"stream_mode=lifecycle":               {lifecycle: true},
		"stream_modes=state_update":           {state: true},
		"stream_mode=lifecycle,+state_update": {lifecycle: true, state: true},
		"stream_mode=run_modes&stream_modes=lifecycle&stream_mode=state_update": {runs: true, lifecycle: true, state: true},
		"stream_mode=": {runs: true},
	} {
		got, err := parseThreadModes(httptest.NewRequest("GET", "/threads/x/stream?"+query, nil))
		if err != nil || got != want {
			t.Errorf("%q: %+v, %v; want %+v", query, got, err, want)
		}
	}
}

// A run's events wait for the end of the runs created before it, but its
// first metadata; those of a run that never ends wait orderWait at most.
func TestThreadStreamOrder(t *testing.T) {
	rec := httptest.NewRecorder()
	ts := &threadStream{ctx: context.Background(), modes: threadModes{runs: true}, out: &sse{}, followed: map[string]bool{}, going: map[string]bool{}, held: map[string][]threadItem{}}
	ts.out.start(rec)
	ev := func(id int, name, data string) []Event { return []Event{{ID: id, Name: name, Data: []byte(data)}} }
	for _, id := range []string{"a", "b"} {
		ts.followed[id], ts.going[id] = true, true
	}
	for _, it := range []threadItem{
		{runID: "b", batch: ev(0, "metadata", `{"run_id":"b","attempt":1}`)},
		{runID: "a", batch: ev(1, "values", `{}`)},
		{runID: "b", batch: ev(1, "values", `{}`)},
		{runID: "b", done: true},
		{runID: "a", done: true},
	} {
		if !ts.handle(it) {
			t.Fatal("the stream ended")
		}
	}
	if ts.holdTimer != nil {
		t.Error("a timer runs with nothing held")
	}
	ids := func() []string {
		var out []string
		for line := range strings.Lines(rec.Body.String()) {
			if id, ok := strings.CutPrefix(strings.TrimSpace(line), "id: "); ok {
				out = append(out, id)
			}
		}
		rec.Body.Reset()
		return out
	}
	if diff := cmp.Diff([]string{"b:0", "a:1", "a:done", "b:1", "b:done"}, ids()); diff != "" {
		t.Errorf("ids in the order written (-want +got):\n%s", diff)
	}
	// c never ends here: d's events are held, then written when the
	// timer fires, and no longer wait for c.
	for _, id := range []string{"c", "d"} {
		ts.followed[id], ts.going[id] = true, true
	}
	_ = ts.handle(threadItem{runID: "d", batch: ev(1, "values", `{}`)})
	if got := ids(); len(got) != 0 || ts.holdTimer == nil {
		t.Fatalf("written %v, timer %v; want d's event held", got, ts.holdTimer != nil)
	}
	if !ts.giveUpWaiting() {
		t.Fatal("the stream ended")
	}
	_ = ts.handle(threadItem{runID: "d", batch: ev(2, "values", `{}`)})
	if diff := cmp.Diff([]string{"d:1", "d:2"}, ids()); diff != "" {
		t.Errorf("after the wait (-want +got):\n%s", diff)
	}
	if ts.holdTimer != nil {
		t.Error("the timer still runs")
	}
}
