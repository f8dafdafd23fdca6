package memory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/weftlabs/weft/tool"
)

// ToolOptions configure ManageTool and SearchTool.
type ToolOptions struct {
	// Name is the tool's name (default "manage_memory" or
	// "search_memory"; document 004 calls them "write_memory" and
	// "read_memory").
	Name string
	// Description replaces the tool's description.
	Description string
	// User returns the user a call is for (default UserFrom: the run's
	// context names the user with WithUser).
	User func(ctx context.Context) string
	// Limit is the most memories a search returns (default 5).
	Limit int
}

func (o ToolOptions) user(ctx context.Context) (string, error) {
	u := UserFrom(ctx)
	if o.User != nil {
		u = o.User(ctx)
	}
	if strings.TrimSpace(u) == "" {
		return "", ErrNoUser
	}
	return u, nil
}

type manageArgs[T Content] struct {
	ID      string `json:"id,omitempty" jsonschema:"the id of the memory to update or delete, from search results; leave it out to create a memory"`
	Content T      `json:"content" jsonschema:"the memory to store; for a delete without an id, the memory to forget"`
	Delete  bool   `json:"delete,omitempty" jsonschema:"true to delete the memory with this id, or without an id the stored memory that says what content says"`
}

// ManageResult is what ManageTool answers.
type ManageResult struct {
	// Action is what was done: "created", "updated" or "deleted"; a
	// create of a memory already stored is "unchanged".
	Action string `json:"action"`
	ID     string `json:"id"`
}

// ManageTool returns a tool with which an agent creates, updates and
// deletes the user's memories of m's kind (LangMem's manage_memory,
// document 004's write_memory): {"content"} creates a memory (answering
// with the stored one's id, "unchanged", when it repeats one), {"id",
// "content"} updates one, {"id", "delete": true} deletes one (content is
// required by the schema and then ignored), and
// {"content", "delete": true} deletes the memory that says the same. An id
// the user has no memory under is a NOT_FOUND tool error.
func ManageTool[T Content](m *Manager[T], opts ToolOptions) *tool.Tool {
	name := cmp.Or(opts.Name, "manage_memory")
	desc := cmp.Or(opts.Description, fmt.Sprintf("Create, update or delete %s memories about the user that carry over to future conversations. "+
		"Create one when the user states a lasting fact or preference or asks you to remember something; update or delete one "+
		"(by the id search results give) when it is outdated or wrong.", m.Kind()))
	return tool.New(name, desc, func(ctx context.Context, in manageArgs[T]) (ManageResult, error) {
		user, err := opts.user(ctx)
		if err != nil {
			return ManageResult{}, err
		}
		switch {
		case in.Delete && in.ID == "":
			id, err := m.find(ctx, user, in.Content)
			if err == nil {
				err = m.Delete(ctx, user, id)
			}
			if err != nil {
				return ManageResult{}, toolError(err)
			}
			return ManageResult{Action: "deleted", ID: id}, nil
		case in.Delete:
			if err := m.Delete(ctx, user, in.ID); err != nil {
				return ManageResult{}, toolError(err)
			}
			return ManageResult{Action: "deleted", ID: in.ID}, nil
		}
		got, created, err := m.Put(ctx, user, in.ID, in.Content)
		switch {
		case err != nil:
			return ManageResult{}, toolError(err)
		case in.ID != "":
			return ManageResult{Action: "updated", ID: got}, nil
		case !created:
			return ManageResult{Action: "unchanged", ID: got}, nil
		}
		return ManageResult{Action: "created", ID: got}, nil
	}, tool.Options{Schema: nonBlankContent})
}

// nonBlankContent makes the schema say what Put enforces: a memory's
// required text fields may not be blank.
func nonBlankContent(s *jsonschema.Schema) {
	c := s.Properties["content"]
	if c == nil {
		return
	}
	for _, name := range c.Required {
		if p := c.Properties[name]; p != nil && p.Type == "string" {
			p.Pattern = `\S`
		}
	}
}

// toolError gives a not-found memory the envelope's NOT_FOUND code, so the
// model can tell a wrong id from a failure.
func toolError(err error) error {
	if errors.Is(err, ErrNotFound) {
		return &tool.Error{Code: CodeNotFound, Message: "no such memory; search first to find its id", Err: err}
	}
	return err
}

// CodeNotFound is the tool error code of a memory that does not exist.
const CodeNotFound = "NOT_FOUND"

type searchArgs struct {
	Query string `json:"query" jsonschema:"what to recall, in a few words"`
	Limit int    `json:"limit,omitempty" jsonschema:"the most memories to return"`
}

// SearchTool returns a tool with which an agent searches the user's
// memories of m's kind (LangMem's search_memory, document 004's
// read_memory). It answers with the memories, best first, with their ids
// and scores.
func SearchTool[T Content](m *Manager[T], opts ToolOptions) *tool.Tool {
	name := cmp.Or(opts.Name, "search_memory")
	desc := cmp.Or(opts.Description, fmt.Sprintf("Search the %s memories about the user (facts, preferences, past feedback) for what is relevant now.", m.Kind()))
	limit := cmp.Or(opts.Limit, 5)
	return tool.New(name, desc, func(ctx context.Context, in searchArgs) ([]Memory[T], error) {
		user, err := opts.user(ctx)
		if err != nil {
			return nil, err
		}
		n := limit
		if in.Limit > 0 {
			n = min(in.Limit, 4*limit)
		}
		mems, err := m.Search(ctx, user, in.Query, n)
		if mems == nil && err == nil {
			mems = []Memory[T]{}
		}
		return mems, err
	})
}
