package main

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/graph"
)

// The 15 channels of the wide_dict case, with bench.mjs's reducers. The
// values are JavaScript-like: []any for lists, map[string]any for dicts, and
// any where the JavaScript value may be null.
var (
	wdMessages           = graph.Reduce("messages", concat[any])
	wdTriggerEvents      = graph.Reduce("trigger_events", concat[any])
	wdPrimaryIssueMedium = graph.Reduce("primary_issue_medium", func(x, y string) string { return or(y, x) })
	wdAutoresponse       = graph.Reduce("autoresponse", func(_, y any) any { return y })
	wdIssue              = graph.Reduce("issue", func(x, y any) any {
		if truthy(y) {
			return y
		}
		return x
	})
	wdRelevantRules     = graph.Value[[]any]("relevant_rules")
	wdMemoryDocs        = graph.Value[[]any]("memory_docs")
	wdCategorizations   = graph.Reduce("categorizations", concat[any])
	wdResponses         = graph.Reduce("responses", concat[any])
	wdUserInfo          = graph.Reduce("user_info", nullish)
	wdCrmInfo           = graph.Reduce("crm_info", nullish)
	wdEmailThreadID     = graph.Reduce("email_thread_id", nullish)
	wdSlackParticipants = graph.Reduce("slack_participants", merge)
	wdBotID             = graph.Value[string]("bot_id")
	wdNotifiedAssignees = graph.Reduce("notified_assignees", merge)
)

// or is JavaScript's y || x for strings.
func or(y, x string) string {
	if y != "" {
		return y
	}
	return x
}

// nullish is JavaScript's y ?? x.
func nullish(x, y any) any {
	if y != nil {
		return y
	}
	return x
}

// merge is JavaScript's {...x, ...y}.
func merge(x, y map[string]any) map[string]any {
	out := make(map[string]any, len(x)+len(y))
	maps.Copy(out, x)
	maps.Copy(out, y)
	return out
}

func truthy(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	case string:
		return v != ""
	case int:
		return v != 0
	case float64:
		return v != 0
	}
	return true
}

// fieldKind says what bench.mjs's rw writes to a key: the list it read, the
// last item of it, or a random string.
type fieldKind int

const (
	otherField fieldKind = iota
	listField
	dictField
)

// field is one wide_dict channel as rw sees it: read as any, written from
// any.
type field struct {
	name string
	kind fieldKind
	get  func(graph.State) any
	put  func(any) (graph.Update, error)
}

// typed is a channel handle of value type T (Value or Reduce).
type typed[T any] interface {
	graph.Channel
	Get(graph.State) T
	Write(T) graph.Update
}

func fieldOf[T any](ch typed[T], kind fieldKind) field {
	return field{
		name: ch.Name(),
		kind: kind,
		get:  func(s graph.State) any { return ch.Get(s) },
		put: func(v any) (graph.Update, error) {
			t, ok := v.(T)
			if !ok && v != nil {
				return graph.Update{}, fmt.Errorf("channel %q takes %T, got %T", ch.Name(), t, v)
			}
			return ch.Write(t), nil
		},
	}
}

var wdFields = func() map[string]field {
	fs := []field{
		fieldOf(wdMessages, listField),
		fieldOf(wdTriggerEvents, listField),
		fieldOf(wdPrimaryIssueMedium, otherField),
		fieldOf(wdAutoresponse, dictField),
		fieldOf(wdIssue, dictField),
		fieldOf(wdRelevantRules, listField),
		fieldOf(wdMemoryDocs, listField),
		fieldOf(wdCategorizations, listField),
		fieldOf(wdResponses, listField),
		fieldOf(wdUserInfo, dictField),
		fieldOf(wdCrmInfo, dictField),
		fieldOf(wdEmailThreadID, otherField),
		fieldOf(wdSlackParticipants, dictField),
		fieldOf(wdBotID, otherField),
		fieldOf(wdNotifiedAssignees, dictField),
	}
	m := make(map[string]field, len(fs))
	for _, f := range fs {
		m[f.name] = f
	}
	return m
}()

// rw is bench.mjs's rw: read one key, and write each of the others from it.
// A string read becomes the dict {s: s}; list keys get the list read (a
// one-item list if it was not a list), dict keys its last item, other keys
// a random string of n letters.
func rw(n int, read string, write ...string) graph.NodeFunc {
	from := wdFields[read]
	to := make([]field, len(write))
	for i, k := range write {
		to[i] = wdFields[k]
	}
	return func(_ context.Context, s graph.State) (graph.Update, error) {
		val := from.get(s)
		if str, ok := val.(string); ok {
			val = map[string]any{str: str}
		}
		list, isList := val.([]any)
		var single any
		if isList {
			if len(list) > 0 {
				single = list[len(list)-1]
			}
		} else {
			single = val
			list = []any{val}
		}
		us := make([]graph.Update, len(to))
		for i, f := range to {
			var v any
			switch f.kind {
			case listField:
				v = list
			case dictField:
				v = single
			default:
				v = randString(n)
			}
			u, err := f.put(v)
			if err != nil {
				return graph.Update{}, err
			}
			us[i] = u
		}
		return graph.Update{}.And(us...), nil
	}
}

// wideDict builds the wide_dict graph: one -> two -> {three, four} -> five
// -> six, looping back to one until messages has more than n items.
func wideDict(n, outer, inner int, saver *checkpoint.Saver) (*graph.Graph, graph.Update, error) {
	g, err := graph.New(
		wdMessages, wdTriggerEvents, wdPrimaryIssueMedium, wdAutoresponse, wdIssue,
		wdRelevantRules, wdMemoryDocs, wdCategorizations, wdResponses, wdUserInfo,
		wdCrmInfo, wdEmailThreadID, wdSlackParticipants, wdBotID, wdNotifiedAssignees,
	).AddNode(

		"one", rw(n, "messages", "trigger_events", "primary_issue_medium"), nil).AddNode(

		"two", rw(n, "trigger_events", "autoresponse", "issue"), nil).AddNode(

		"three", rw(n, "autoresponse", "relevant_rules"), nil).AddNode(

		"four", rw(n, "trigger_events", "categorizations", "responses", "memory_docs"), nil).AddNode(

		"five", rw(n, "categorizations", "user_info", "crm_info", "email_thread_id", "slack_participants", "bot_id", "notified_assignees"), nil).AddNode(

		"six", rw(n, "responses", "messages"), nil).
		AddEdge(graph.START, "one").
		AddEdge("one", "two").
		AddEdge("two", "three").
		AddEdge("two", "four").
		AddJoin([]string{"three", "four"}, "five").
		AddEdge("five", "six").AddConditionalEdges(

		"six", func(_ context.Context, s graph.State) (graph.Route, error) {
			if len(wdMessages.Get(s)) > n {
				return graph.To(graph.END), nil
			}
			return graph.To("one"), nil
		}, nil).Compile(&graph.CompileOptions{Checkpointer: saver})

	if err != nil {
		return nil, graph.Update{}, err
	}
	return g, wdMessages.Write([]any{wideInput(outer, inner)}), nil
}

// wideInput is bench.mjs's wideInput: outer dicts of inner dicts of lists of
// 25 JSON scalars, keyed by the index repeated 10 times.
func wideInput(outer, inner int) map[string]any {
	m := make(map[string]any, outer)
	for i := range outer {
		o := make(map[string]any, inner)
		for j := range inner {
			leaf := make([]any, 0, 25)
			for range 5 {
				leaf = append(leaf, strings.Repeat("hi?", 10), true, 1, int64(6327816386138), nil)
			}
			o[strings.Repeat(strconv.Itoa(j), 10)] = leaf
		}
		m[strings.Repeat(strconv.Itoa(i), 10)] = o
	}
	return m
}
