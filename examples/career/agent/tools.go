// Package agent is DreamPath's agent (design document 002): four tools
// that adapt the career service for a model, a ReAct agent over them with
// the document's limits, and a router that keeps greetings and small talk
// away from the agent.
//
// The tools are thin adapters (document 000's second layer): they check
// the model's arguments, call the service and wrap its result in the tool
// package's envelope, turning the service's typed errors into error codes
// the model can act on. No business logic lives here.
package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/weftlabs/weft/examples/career/service"
	"github.com/weftlabs/weft/tool"
)

// Error codes the tools put in the envelope for the service's errors.
const (
	CodeInvalidInput   = "INVALID_INPUT"
	CodeNotFound       = "NOT_FOUND"
	CodeSessionFull    = "SESSION_FULL"
	CodeAlreadyBooked  = "ALREADY_BOOKED"
	CodeSessionStarted = "SESSION_STARTED"
)

// Tool names, as the model sees them (document 002).
const (
	SearchMentoringSessions = "search_mentoring_sessions"
	GetLearningPath         = "get_learning_path"
	SearchJobPostings       = "search_job_postings"
	BookMentoring           = "book_mentoring"
)

// MentoringQuery is the argument of search_mentoring_sessions.
type MentoringQuery struct {
	CareerInterest string `json:"career_interest" jsonschema:"the career or field the user is interested in, e.g. UX 디자이너, 데이터 분석가"`
}

// LearningPathQuery is the argument of get_learning_path.
type LearningPathQuery struct {
	Career string `json:"career" jsonschema:"the career to get a learning path for, e.g. UX 디자이너, 백엔드 개발자, PM"`
}

// JobQuery is the argument of search_job_postings.
type JobQuery struct {
	Keyword string `json:"keyword" jsonschema:"job title, skill or place, e.g. UX 디자이너, Figma, 판교"`
}

// BookingArgs are the arguments of book_mentoring.
type BookingArgs struct {
	SessionID string `json:"session_id" jsonschema:"the id of a session returned by search_mentoring_sessions, e.g. ms-001"`
	UserID    string `json:"user_id" jsonschema:"the id of the user who books, at most 128 characters"`
}

// The schemas state what the service enforces, as far as JSON Schema can
// (document 000: the tool layer validates). A search text needs a word of
// two or more letters or digits; the descriptions say what the schemas
// cannot: common words alone ("the", "추천") match nothing.

// wordsPattern asks for a word of two or more letters or digits: the
// service searches by such words.
const wordsPattern = `[\p{L}\p{N}]{2}`

// idPattern asks for an id with something other than spaces in it.
const idPattern = `\S`

// searchText adjusts a search tool's schema: its one property, name, must
// hold a word.
func searchText(name string) tool.Options {
	return tool.Options{Schema: func(s *jsonschema.Schema) {
		p := s.Properties[name]
		p.Pattern = wordsPattern
		p.Description += "; at least one word of two or more letters or digits that is not a common word"
	}}
}

// Tools returns DreamPath's four tools over svc, in document 002's order.
func Tools(svc *service.Service) []*tool.Tool {
	return []*tool.Tool{
		tool.New(SearchMentoringSessions,
			"멘토링 세션을 검색합니다. 관심 직무/분야로 예약 가능한(좌석이 남은) 다가오는 세션을 찾습니다. Searches upcoming mentoring sessions with free seats.",
			func(ctx context.Context, in MentoringQuery) (*service.MentoringSearchResult, error) {
				q, err := required("career_interest", in.CareerInterest)
				if err != nil {
					return nil, err
				}
				res, err := svc.SearchMentoringSessions(ctx, q)
				if err != nil {
					return nil, searchError("career_interest", err)
				}
				tool.SetMeta(ctx, "count", len(res.Sessions))
				return res, nil
			}, searchText("career_interest")),
		tool.New(GetLearningPath,
			"직무의 단계별 학습 경로(주제, 기간, 추천 자료)를 가져옵니다. Gets the ordered learning path of a career.",
			func(ctx context.Context, in LearningPathQuery) (*service.LearningPath, error) {
				q, err := required("career", in.Career)
				if err != nil {
					return nil, err
				}
				p, err := svc.GetLearningPath(ctx, q)
				if err != nil {
					return nil, searchError("career", err)
				}
				return p, nil
			}, searchText("career")),
		tool.New(SearchJobPostings,
			"채용 공고를 키워드(직무, 기술, 지역)로 검색합니다. Searches open job postings.",
			func(ctx context.Context, in JobQuery) (*service.JobSearchResult, error) {
				q, err := required("keyword", in.Keyword)
				if err != nil {
					return nil, err
				}
				res, err := svc.SearchJobPostings(ctx, q)
				if err != nil {
					return nil, searchError("keyword", err)
				}
				tool.SetMeta(ctx, "count", len(res.Jobs))
				return res, nil
			}, searchText("keyword")),
		tool.New(BookMentoring,
			"멘토링 세션 좌석을 예약합니다. 사용자가 예약을 명시적으로 요청했을 때만 사용하세요. Books a seat in a mentoring session.",
			func(ctx context.Context, in BookingArgs) (*service.Booking, error) {
				sid, err := required("session_id", in.SessionID)
				if err != nil {
					return nil, err
				}
				uid, err := required("user_id", in.UserID)
				if err != nil {
					return nil, err
				}
				b, err := svc.BookMentoring(ctx, sid, uid)
				if err != nil {
					return nil, toolError(err)
				}
				return b, nil
			}, tool.Options{Schema: func(s *jsonschema.Schema) {
				s.Properties["session_id"].Pattern = idPattern
				u := s.Properties["user_id"]
				u.Pattern = idPattern
				u.MaxLength = jsonschema.Ptr(128)
			}}),
	}
}

// NewRegistry returns a registry holding Tools(svc).
func NewRegistry(svc *service.Service) (*tool.Registry, error) {
	return tool.NewRegistry(Tools(svc)...)
}

// registry adds tools to reg, or to a new registry when reg is nil.
func registry(reg *tool.Registry, tools []*tool.Tool) (*tool.Registry, error) {
	if reg == nil {
		return tool.NewRegistry(tools...)
	}
	_, err := reg.Apply(tool.Change{Added: tools})
	return reg, err
}

// required trims v and rejects it when nothing is left: the schema
// guarantees the field is present, not that it says anything.
func required(field, v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", &tool.Error{Code: CodeInvalidInput, Message: field + " is empty; give a non-empty string"}
	}
	return v, nil
}

// searchError is toolError for a search: the schema lets through only
// texts with a word in them, so a text the service finds nothing to search
// for in holds common words alone ("the", "추천"), which JSON Schema cannot
// rule out. The model hears that nothing matched, as for a text that
// matches nothing, not that its arguments were malformed.
func searchError(field string, err error) error {
	var in *service.InputError
	if errors.As(err, &in) && in.Field == field {
		return &tool.Error{Code: CodeNotFound, Message: fmt.Sprintf("nothing to search for in %s %q: it holds only common words; %s", field, in.Value, in.Expected),
			Meta: map[string]any{"field": in.Field, "expected": in.Expected}, Err: err}
	}
	return toolError(err)
}

// toolError turns the service's typed errors into envelope error codes; any
// other error is left to the tool layer (tool_error).
func toolError(err error) error {
	var (
		in *service.InputError
		nf *service.NotFoundError
	)
	switch {
	case errors.As(err, &in):
		return &tool.Error{Code: CodeInvalidInput, Message: err.Error(), Meta: map[string]any{"field": in.Field, "expected": in.Expected}, Err: err}
	case errors.As(err, &nf):
		te := &tool.Error{Code: CodeNotFound, Message: err.Error(), Err: err}
		if len(nf.Known) > 0 {
			te.Meta = map[string]any{"known": nf.Known}
		}
		return te
	case errors.Is(err, service.ErrSessionFull):
		return &tool.Error{Code: CodeSessionFull, Message: err.Error(), Err: err}
	case errors.Is(err, service.ErrAlreadyBooked):
		return &tool.Error{Code: CodeAlreadyBooked, Message: err.Error(), Err: err}
	case errors.Is(err, service.ErrSessionStarted):
		return &tool.Error{Code: CodeSessionStarted, Message: err.Error(), Err: err}
	}
	return err
}
