package examples_test

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weftlabs/weft/agent/react"
	"github.com/weftlabs/weft/agent/router"
	"github.com/weftlabs/weft/cmd/weft/internal/examples"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llm/scripted"
)

func TestEveryExampleBuilds(t *testing.T) {
	all := examples.All()
	if len(all) == 0 {
		t.Fatal("no examples")
	}
	if !slices.IsSortedFunc(all, func(a, b examples.Example) int { return strings.Compare(a.Name, b.Name) }) {
		t.Errorf("examples are not sorted by name: %v", examples.Names())
	}
	for _, e := range all {
		g, err := e.Build(nil)
		if err != nil {
			t.Errorf("%s: %v", e.Name, err)
			continue
		}
		if len(g.Nodes()) == 0 {
			t.Errorf("%s has no nodes", e.Name)
		}
	}
}

func TestLookup(t *testing.T) {
	if e, err := examples.Lookup("approval"); err != nil || e.Name != "approval" {
		t.Fatalf("Lookup(approval) = %v, %v", e.Name, err)
	}
	_, err := examples.Lookup("nope")
	if !errors.Is(err, examples.ErrUnknown) {
		t.Fatalf("err = %v, want ErrUnknown", err)
	}
	if !strings.Contains(err.Error(), "approval") {
		t.Errorf("error %q does not list the known graphs", err)
	}
}

// Every agent has both demo scripts, and they load.
func TestDemoScriptsLoad(t *testing.T) {
	for _, e := range examples.All() {
		if e.Open == nil && e.Orchestrate == nil {
			continue
		}
		for _, path := range []string{e.Demo, e.DemoJSON} {
			if path == "" {
				t.Errorf("%s lacks a demo script: Demo %q, DemoJSON %q", e.Name, e.Demo, e.DemoJSON)
				continue
			}
			if _, err := scripted.Load(filepath.Join("..", "..", "..", "..", path)); err != nil {
				t.Errorf("%s: %v", e.Name, err)
			}
		}
	}
}

// In JSON mode the router's classifier is asked for its decision as JSON
// text, with no tools offered, since a model without tool calling rejects
// tools; its JSON reply decides the route. In native mode it is offered
// the route tool.
func TestOpenModeClassifier(t *testing.T) {
	const question = "UX 디자이너가 되고 싶은데 어떻게 시작해야 할까요?"
	for _, name := range []string{"career", "travel"} {
		e, err := examples.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(name+"/json", func(t *testing.T) {
			model := scripted.New(llm.AI(`{"route": "agent", "reason": "tools needed"}`))
			a, err := e.Open(t.Context(), model, examples.OpenOptions{Mode: react.JSONFormat})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			if got, _ := a.Router.Decide(t.Context(), question); got != router.Agent {
				t.Errorf("route = %q, want agent", got)
			}
			reqs := model.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d model calls, want 1 (the classifier)", len(reqs))
			}
			r := reqs[0]
			if len(r.Tools) != 0 || r.Options.ToolChoice != "" {
				t.Errorf("the classifier was offered tools %v, tool choice %q", r.Tools, r.Options.ToolChoice)
			}
			if sys := r.Messages[0]; sys.Type != llm.TypeSystem || !strings.Contains(sys.Text(), "Reply with only one JSON object") || !strings.Contains(sys.Text(), `"route"`) {
				t.Errorf("the classifier's system message does not ask for the decision's JSON:\n%s", sys.Text())
			}
		})
		t.Run(name+"/native", func(t *testing.T) {
			model := scripted.New(llm.AI("", llm.ToolCall{Name: "route", Args: []byte(`{"route": "agent"}`)}))
			a, err := e.Open(t.Context(), model, examples.OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			if got, _ := a.Router.Decide(t.Context(), question); got != router.Agent {
				t.Errorf("route = %q, want agent", got)
			}
			if reqs := model.Requests(); len(reqs) != 1 || len(reqs[0].Tools) != 1 || reqs[0].Options.ToolChoice != "route" {
				t.Errorf("requests = %+v, want one call forcing the route tool", reqs)
			}
		})
	}
}
