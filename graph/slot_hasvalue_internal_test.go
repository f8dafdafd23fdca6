package graph

import (
	"testing"

	"github.com/weftlabs/weft/llm"
)

// TestSlotHasValueMatchesGet drives every kind of slot through writes,
// empty steps, consume and finish, and checks at each point that hasValue
// says what get's ok says: the loop uses hasValue to decide which
// channels are available.
func TestSlotHasValueMatchesGet(t *testing.T) {
	slots := map[string]func() (slot, []any){
		"value": func() (slot, []any) { return Value[int]("c").newSlot(), []any{1} },
		"reduce": func() (slot, []any) {
			return Reduce("c", func(a, b []any) []any { return append(a, b...) }).newSlot(), []any{[]any{1}}
		},
		"topic":      func() (slot, []any) { return Topic[int]("c", nil).newSlot(), []any{1, 2} },
		"accumulate": func() (slot, []any) { return Topic[int]("c", &TopicOptions{Accumulate: true}).newSlot(), []any{1} },
		"ephemeral":  func() (slot, []any) { return Ephemeral[string]("c").newSlot(), []any{"x"} },
		"messages": func() (slot, []any) {
			return Messages[llm.Message]("c").newSlot(), []any{[]llm.Message{llm.Human("hi")}}
		},
		"trigger":   func() (slot, []any) { return &trigger{}, []any{true} },
		"deferred":  func() (slot, []any) { return &trigger{afterFinish: true}, []any{true} },
		"barrier":   func() (slot, []any) { return &barrier{names: []string{"a", "b"}}, []any{"a", "b"} },
		"half":      func() (slot, []any) { return &barrier{names: []string{"a", "b"}}, []any{"a"} },
		"deferjoin": func() (slot, []any) { return &barrier{names: []string{"a"}, afterFinish: true}, []any{"a"} },
		"start":     func() (slot, []any) { return &startSlot{}, []any{[]write{{ch: "x", v: 1}}} },
		"sends":     func() (slot, []any) { return &sendsSlot{}, []any{Send{Node: "n"}} },
	}
	for name, mk := range slots {
		s, ws := mk()
		check := func(when string) {
			t.Helper()
			if _, ok := s.get(); ok != s.hasValue() {
				t.Errorf("%s %s: get says %v, hasValue %v", name, when, ok, s.hasValue())
			}
		}
		check("new")
		if _, err := s.update("c", ws); err != nil {
			t.Fatalf("%s: update: %v", name, err)
		}
		check("written")
		s.finish()
		check("finished")
		s.consume()
		check("consumed")
		if _, err := s.update("c", ws); err != nil {
			t.Fatalf("%s: update: %v", name, err)
		}
		check("written again")
		_, _ = s.update("c", nil)
		check("empty step")
		_, _ = s.update("c", nil)
		check("second empty step")
	}
}
