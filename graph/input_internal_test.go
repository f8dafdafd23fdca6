package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"testing"

	"github.com/weftlabs/weft/llm"
)

// An object read without a json.Decoder (valid JSON) gives the writes and
// errors reading it token by token gives.
func TestDecodeValidObjectAsTokens(t *testing.T) {
	noop := func(ctx context.Context, s State) (Update, error) { return Update{}, nil }
	g, err := New(Messages[llm.Message]("messages"), Value[float64]("n"), Topic[int]("seen", nil), Value[any]("any")).
		AddNode("a", noop, nil).AddEdge(START, "a").AddEdge("a", END).Compile(nil)
	if err != nil {
		t.Fatal(err)
	}
	allowed := []string{"messages", "n", "seen", "any"}
	for _, in := range []string{
		`{}`, ` { } `, `{"n":1}`, "{ \"n\" :\t2 ,\n\"seen\" : [ 1 , 2 ] }",
		`{"messages":[{"role":"user","content":"hi","id":"m1"}, "bare" ,{"type":"ai","content":"x","id":"m2"}]}`,
		`{"messages":[]}`, `{"messages":{"role":"user","content":"one","id":"m3"}}`, `{"messages":"just text"}`,
		`{"any":{"a":[1,{"b":"}]"}],"c":"\"q\""},"n":3,"n":4}`, `{"nope":1}`, `{"n":"text"}`, `{"seen":["x"]}`,
		`{"messages":[1]}`, `{"messages":[null]}`, `{"messages":5}`, `{"m\u0065ssages":[]}`,
	} {
		data := bytes.TrimSpace([]byte(in)) // as decodeObject has it
		if !json.Valid(data) {
			t.Fatalf("%s is not valid JSON", in)
		}
		fast, ok, fastErr := g.decodeValidObject(data, allowed)
		if !ok {
			if in != `{"m\u0065ssages":[]}` {
				t.Errorf("%s: not read without a decoder", in)
			}
			continue
		}
		slow, slowErr := g.decodeObjectTokens(data, allowed)
		if (fastErr == nil) != (slowErr == nil) || (fastErr != nil && fastErr.Error() != slowErr.Error()) {
			t.Errorf("%s: error %v, token by token %v", in, fastErr, slowErr)
			continue
		}
		// Messages without an id get a random one.
		uuid := regexp.MustCompile(`"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"`)
		a, _ := json.Marshal(fast.Writes())
		b, _ := json.Marshal(slow.Writes())
		a, b = uuid.ReplaceAll(a, []byte(`"id"`)), uuid.ReplaceAll(b, []byte(`"id"`))
		if string(a) != string(b) {
			t.Errorf("%s: writes %s, token by token %s", in, a, b)
		}
	}
}
