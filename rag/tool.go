package rag

import (
	"context"
	"errors"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/weftlabs/weft/tool"
)

// ToolName is the name the retrieval tool has in document 004.
const ToolName = "retrieve_docs"

// MaxToolK is the most passages one retrieve_docs call returns.
const MaxToolK = 20

// RetrieveInput is what a model passes to retrieve_docs.
type RetrieveInput struct {
	Query    string `json:"query" jsonschema:"what to look for, in the user's words (Korean or English)"`
	K        int    `json:"k,omitempty" jsonschema:"how many passages to return (default 5)"`
	Language string `json:"language,omitempty" jsonschema:"only passages in this language: ko or en"`
	Source   string `json:"source,omitempty" jsonschema:"only passages from this source file, as cited in earlier results"`
}

// Passage is one retrieved chunk as retrieve_docs returns it.
type Passage struct {
	// ID is the chunk's ID; DocID its document's.
	ID    string `json:"id"`
	DocID string `json:"doc_id"`
	Title string `json:"title,omitempty"`
	Text  string `json:"text"`
	// Citation says where the text came from (Chunk.Citation).
	Citation string   `json:"citation"`
	Source   string   `json:"source"`
	Page     int      `json:"page,omitempty"`
	Headings []string `json:"headings,omitempty"`
	URL      string   `json:"url,omitempty"`
	Language string   `json:"language,omitempty"`
	Score    float64  `json:"score"`
}

// Retrieved is retrieve_docs' result: the passages, best first (none when
// nothing matched).
type Retrieved struct {
	Query    string    `json:"query"`
	Passages []Passage `json:"passages"`
}

// ToolOptions tune the retrieve_docs tool.
type ToolOptions struct {
	// Name replaces ToolName.
	Name string
	// Description replaces the default description the model reads.
	Description string
	// Mode is the search mode (default Hybrid).
	Mode Mode
	// Tool is passed to tool.New (timeout, post-processing node).
	Tool tool.Options
}

// Tool returns the retrieve_docs tool over ix: a typed tool taking
// RetrieveInput and answering Retrieved in weft's result envelope. Bad
// arguments (a blank query, k out of 1..MaxToolK, a language other than ko
// or en) come back to the model as errors it can correct.
func (ix *Index) Tool(opts ToolOptions) *tool.Tool {
	name := opts.Name
	if name == "" {
		name = ToolName
	}
	desc := opts.Description
	if desc == "" {
		desc = "Search the knowledge base of workflow and tool guides (Korean and English; JSON entries, Markdown guides, PDF reports) " +
			"by keywords and meaning. Returns the best passages with citations; cite them in the answer."
	}
	topts := opts.Tool
	userSchema := topts.Schema
	topts.Schema = func(s *jsonschema.Schema) {
		one, most := 1.0, float64(MaxToolK)
		s.Properties["k"].Minimum = &one
		s.Properties["k"].Maximum = &most
		s.Properties["query"].Pattern = `\S` // not blank
		s.Properties["language"].Enum = []any{"ko", "en"}
		if userSchema != nil {
			userSchema(s)
		}
	}
	return tool.New(name, desc, func(ctx context.Context, in RetrieveInput) (Retrieved, error) {
		hits, err := ix.Search(ctx, in.Query, SearchOptions{K: in.K, Mode: opts.Mode, Language: in.Language, Source: in.Source})
		if err != nil {
			if errors.Is(err, ErrInvalidConfig) {
				return Retrieved{}, &tool.Error{Code: tool.CodeInvalidArgs, Message: err.Error(), Err: err}
			}
			return Retrieved{}, err
		}
		out := Retrieved{Query: in.Query, Passages: make([]Passage, len(hits))}
		for i, h := range hits {
			out.Passages[i] = h.Passage()
		}
		tool.SetMeta(ctx, "hits", len(hits))
		return out, nil
	}, topts)
}

// Passage is the hit as retrieve_docs returns it: the chunk's text and
// metadata, its citation and the hit's score.
func (h Hit) Passage() Passage {
	c := h.Chunk
	return Passage{
		ID: c.ID, DocID: c.DocID, Title: c.Title, Text: c.Text, Citation: c.Citation(),
		Source: c.Source, Page: c.Page, Headings: c.Headings, URL: c.URL,
		Language: c.Language, Score: h.Score,
	}
}
