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
	Action  string `json:"action" jsonschema:"create a new memory, update one (by id) or delete one (by id)"`
	ID      string `json:"id,omitempty" jsonschema:"the memory's id, for update and delete (from search results)"`
	Content *T     `json:"content,omitempty" jsonschema:"the memory, for create and update"`
}

// ManageResult is what ManageTool answers.
type ManageResult struct {
	Action string `json:"action"`
	ID     string `json:"id"`
	// Note explains a create that found the memory already stored.
	Note string `json:"note,omitempty"`
}

// ManageTool returns a tool with which an agent creates, updates and
// deletes the user's memories of m's kind (LangMem's manage_memory,
// document 004's write_memory). A create that repeats a stored memory
// answers with that memory's id instead of storing a duplicate.
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
		switch in.Action {
		case "create", "update":
			if in.Content == nil {
				return ManageResult{}, &tool.Error{Code: tool.CodeInvalidArgs, Message: in.Action + " needs content"}
			}
			id := ""
			if in.Action == "update" {
				if id = in.ID; id == "" {
					return ManageResult{}, &tool.Error{Code: tool.CodeInvalidArgs, Message: "update needs the id of the memory"}
				}
			} else if in.ID != "" {
				return ManageResult{}, &tool.Error{Code: tool.CodeInvalidArgs, Message: "create takes no id; use update to change a memory"}
			}
			got, created, err := m.Put(ctx, user, id, *in.Content)
			if err != nil {
				return ManageResult{}, toolError(err)
			}
			res := ManageResult{Action: in.Action, ID: got}
			if in.Action == "create" && !created {
				res.Note = "already remembered; nothing was added"
			}
			return res, nil
		case "delete":
			if in.ID == "" {
				return ManageResult{}, &tool.Error{Code: tool.CodeInvalidArgs, Message: "delete needs the id of the memory"}
			}
			if err := m.Delete(ctx, user, in.ID); err != nil {
				return ManageResult{}, toolError(err)
			}
			return ManageResult{Action: "delete", ID: in.ID}, nil
		}
		return ManageResult{}, &tool.Error{Code: tool.CodeInvalidArgs, Message: fmt.Sprintf("unknown action %q; expected create, update or delete", in.Action)}
	}, tool.Options{Schema: func(s *jsonschema.Schema) {
		s.Properties["action"].Enum = []any{"create", "update", "delete"}
	}})
}

// toolError gives a not-found memory the envelope's NOT_FOUND code, so the
// model can tell a wrong id from a failure.
func toolError(err error) error {
	if errors.Is(err, ErrNotFound) {
		return &tool.Error{Code: "NOT_FOUND", Message: "no memory has this id; search first to find it", Err: err}
	}
	return err
}

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
