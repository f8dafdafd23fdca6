package graph

import (
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
)

// Schemas are the JSON Schemas of a graph's input, output and state: an
// object with one property per channel, each the schema of the channel's
// Go type (jsonschema.ForType). A messages channel is marked as LangGraph
// marks it, {"langgraph_type": "messages"}, so front ends built for
// LangGraph recognise a chat.
type Schemas struct {
	Input, Output, State *jsonschema.Schema
}

// schemaer is implemented by every channel type: the schema of the values
// a client writes to it.
type schemaer interface {
	valueSchema() (*jsonschema.Schema, error)
}

// Schemas returns the JSON Schemas of the graph's input keys
// (Builder.Input), output keys (Builder.Output) and whole state. A channel
// whose type has no JSON Schema (a func, a map with non-string keys, an
// interface) gets a schema that accepts anything.
func (g *Graph) Schemas() (Schemas, error) {
	var out Schemas
	var err error
	if out.Input, err = g.objectSchema(g.inputKeys); err != nil {
		return Schemas{}, err
	}
	if out.Output, err = g.objectSchema(g.outputKeys); err != nil {
		return Schemas{}, err
	}
	if out.State, err = g.objectSchema(g.stateKeys); err != nil {
		return Schemas{}, err
	}
	return out, nil
}

func (g *Graph) objectSchema(keys []string) (*jsonschema.Schema, error) {
	s := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}, PropertyOrder: keys}
	for _, k := range keys {
		c, ok := g.decls[k].(schemaer)
		if !ok {
			s.Properties[k] = anySchema()
			continue
		}
		ps, err := c.valueSchema()
		if err != nil {
			return nil, fmt.Errorf("graph: schema of key %q: %w", k, err)
		}
		s.Properties[k] = ps
	}
	return s, nil
}

// anySchema accepts any value. It has a description because an empty
// schema is written as true, which clients expecting an object misread.
func anySchema() *jsonschema.Schema { return &jsonschema.Schema{Description: "Any JSON value"} }

// typeSchema is the schema of t; a type JSON Schema cannot describe gets
// anySchema.
func typeSchema(t reflect.Type) (*jsonschema.Schema, error) {
	if t.Kind() == reflect.Interface {
		return anySchema(), nil
	}
	s, err := jsonschema.ForType(t, &jsonschema.ForOptions{IgnoreInvalidTypes: true})
	if err != nil {
		// A cycle in the type: describe it as anything rather than fail
		// the whole graph's schema.
		return anySchema(), nil
	}
	return s, nil
}

func (c *ValueChannel[T]) valueSchema() (*jsonschema.Schema, error) {
	return typeSchema(reflect.TypeFor[T]())
}

func (c *ReduceChannel[T]) valueSchema() (*jsonschema.Schema, error) {
	return typeSchema(reflect.TypeFor[T]())
}

func (c *EphemeralChannel[T]) valueSchema() (*jsonschema.Schema, error) {
	return typeSchema(reflect.TypeFor[T]())
}

func (c *TopicChannel[T]) valueSchema() (*jsonschema.Schema, error) {
	return typeSchema(reflect.TypeFor[[]T]())
}

func (c *MessagesChannel[M]) valueSchema() (*jsonschema.Schema, error) {
	return &jsonschema.Schema{
		Description: "A list of chat messages",
		Extra:       map[string]any{"langgraph_type": "messages"},
	}, nil
}
