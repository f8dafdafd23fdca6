package service_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/weftlabs/weft/examples/career/service"
)

// now is the fixed clock of the tests; the seed lays its dates out from it.
var now = time.Date(2026, 3, 2, 12, 0, 0, 0, time.FixedZone("KST", 9*60*60))

func open(t *testing.T, path string) *service.Service {
	t.Helper()
	s, err := service.OpenWith(t.Context(), path, service.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatalf("OpenWith(%q): %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func sessionIDs(ss []service.MentoringSession) []string {
	ids := []string{}
	for _, s := range ss {
		ids = append(ids, s.ID)
	}
	return ids
}

func TestSearchMentoringSessions(t *testing.T) {
	s := open(t, ":memory:")
	tests := []struct {
		query string
		want  []string
	}{
		// ms-003 is full and ms-013 is over: neither is offered.
		{"UX 디자이너", []string{"ms-001", "ms-002"}},
		{"UX 디자이너가 되고 싶어요", []string{"ms-001", "ms-002"}},
		{"ux designer", []string{"ms-001", "ms-002"}},
		{"데이터 분석가", []string{"ms-004", "ms-005"}},
		{"데이터분석가", []string{"ms-004", "ms-005"}},
		{"데이타 분석", []string{"ms-004", "ms-005"}}, // a misspelling still finds them
		{"data analyst", []string{"ms-004", "ms-005"}},
		{"백엔드", []string{"ms-006", "ms-007", "ms-008"}},
		{"개발자 되고 싶어", []string{"ms-006", "ms-011", "ms-007", "ms-008"}},
		{"마케팅", []string{"ms-009"}}, // ms-010 is over
		{"마케터를 만나고 싶어요", []string{"ms-009"}},
		{"PM", []string{"ms-012"}},
		{"우주비행사", []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			res, err := s.SearchMentoringSessions(t.Context(), tt.query)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, sessionIDs(res.Sessions)); diff != "" {
				t.Errorf("sessions (-want +got):\n%s", diff)
			}
			for _, ms := range res.Sessions {
				if !ms.StartsAt.After(now) || ms.SeatsLeft < 1 {
					t.Errorf("session %s: starts %v with %d seats left; want upcoming with a free seat", ms.ID, ms.StartsAt, ms.SeatsLeft)
				}
			}
		})
	}
}

func TestSearchMentoringSessionsDetails(t *testing.T) {
	s := open(t, ":memory:")
	res, err := s.SearchMentoringSessions(t.Context(), "UX")
	if err != nil {
		t.Fatal(err)
	}
	got := res.Sessions[0]
	if got.ID != "ms-001" || got.Mentor.Name != "김지은" || got.SeatsLeft != 4 || got.Capacity != 6 {
		t.Errorf("first session = %s by %s with %d/%d seats; want ms-001 by 김지은 with 4/6", got.ID, got.Mentor.Name, got.SeatsLeft, got.Capacity)
	}
	if want := time.Date(2026, 3, 5, 19, 30, 0, 0, now.Location()); !got.StartsAt.Equal(want) {
		t.Errorf("StartsAt = %v, want %v (three days after the seed, 19:30 KST)", got.StartsAt, want)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["sessions"].([]any); !ok {
		t.Errorf("JSON %s has no sessions list", b)
	}
}

func TestSearchRejectsEmptyQuery(t *testing.T) {
	s := open(t, ":memory:")
	for _, q := range []string{"", "   ", "멘토링", "?!"} {
		_, err := s.SearchMentoringSessions(t.Context(), q)
		var ie *service.InputError
		if !errors.As(err, &ie) || ie.Field != "career_interest" || !errors.Is(err, service.ErrInvalidInput) {
			t.Errorf("SearchMentoringSessions(%q) error = %v; want *InputError for career_interest", q, err)
		}
	}
	_, err := s.SearchJobPostings(t.Context(), "")
	if !errors.Is(err, service.ErrInvalidInput) {
		t.Errorf("SearchJobPostings(\"\") error = %v; want ErrInvalidInput", err)
	}
	_, err = s.GetLearningPath(t.Context(), " ")
	if !errors.Is(err, service.ErrInvalidInput) {
		t.Errorf("GetLearningPath(\" \") error = %v; want ErrInvalidInput", err)
	}
}

func TestGetLearningPath(t *testing.T) {
	s := open(t, ":memory:")
	tests := []struct {
		career, want string
	}{
		{"백엔드 개발자", "lp-backend"},
		{"백엔드", "lp-backend"},
		{"Backend Developer", "lp-backend"},
		{"서버 개발자", "lp-backend"},
		{"프론트엔드 개발자", "lp-frontend"},
		{"UX 디자이너가 되려면", "lp-ux"},
		{"Data Analyst", "lp-data"},
		{"데이터 분석", "lp-data"},
		{"마케팅", "lp-marketing"},
		{"PM", "lp-pm"},
		{"product manager", "lp-pm"},
	}
	for _, tt := range tests {
		t.Run(tt.career, func(t *testing.T) {
			p, err := s.GetLearningPath(t.Context(), tt.career)
			if err != nil {
				t.Fatal(err)
			}
			if p.ID != tt.want {
				t.Fatalf("path = %s (%s), want %s", p.ID, p.Career, tt.want)
			}
			if len(p.Steps) < 3 || len(p.Topics) == 0 {
				t.Fatalf("path %s has %d steps and %d topics; want at least 3 steps and some topics", p.ID, len(p.Steps), len(p.Topics))
			}
			for i, st := range p.Steps {
				if st.Order != i+1 || len(st.Resources) == 0 {
					t.Errorf("step %d: order %d with %d resources; want order %d with resources", i, st.Order, len(st.Resources), i+1)
				}
			}
		})
	}
}

func TestGetLearningPathBackendOrder(t *testing.T) {
	s := open(t, ":memory:")
	p, err := s.GetLearningPath(t.Context(), "백엔드 개발자")
	if err != nil {
		t.Fatal(err)
	}
	var titles []string
	for _, st := range p.Steps {
		titles = append(titles, st.Title)
	}
	want := []string{"프로그래밍 언어 하나 깊게", "웹과 HTTP API", "데이터베이스", "배포와 운영", "시스템 설계 기초"}
	if diff := cmp.Diff(want, titles); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if p.Topics[0] != "Java" {
		t.Errorf("Topics[0] = %q, want the first step's first topic Java", p.Topics[0])
	}
}

func TestGetLearningPathUnknown(t *testing.T) {
	s := open(t, ":memory:")
	_, err := s.GetLearningPath(t.Context(), "우주비행사")
	var nf *service.NotFoundError
	if !errors.As(err, &nf) || !errors.Is(err, service.ErrNotFound) {
		t.Fatalf("error = %v; want *NotFoundError", err)
	}
	if len(nf.Known) != 6 || nf.Known[0] != "UX 디자이너" {
		t.Errorf("Known = %q; want the six careers with a path", nf.Known)
	}
}

func TestSearchJobPostings(t *testing.T) {
	s := open(t, ":memory:")
	tests := []struct {
		keyword string
		want    []string
	}{
		{"백엔드", []string{"job-005", "job-006"}}, // job-007 has closed
		{"백엔드 개발자 채용", []string{"job-005", "job-006"}},
		{"Python", []string{"job-003", "job-004", "job-012"}},
		{"판교", []string{"job-005", "job-004"}},
		{"서울 백엔드", []string{"job-006"}},                       // job-005 is in 판교, not 서울
		{"백엔드 Rust", []string{"job-005", "job-006"}},          // no full match: partial ones, newest first
		{"스텔라커머스", []string{"job-010", "job-009", "job-002"}}, // newest first
		{"인턴", []string{"job-004"}},
		{"부산 데이터 분석가", []string{"job-012"}},
		{"우주비행사", []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.keyword, func(t *testing.T) {
			res, err := s.SearchJobPostings(t.Context(), tt.keyword)
			if err != nil {
				t.Fatal(err)
			}
			ids := []string{}
			for _, j := range res.Jobs {
				ids = append(ids, j.ID)
				if j.ClosesAt.Before(now) {
					t.Errorf("job %s closed at %v, before now", j.ID, j.ClosesAt)
				}
			}
			if diff := cmp.Diff(tt.want, ids); diff != "" {
				t.Errorf("jobs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBookMentoring(t *testing.T) {
	s := open(t, ":memory:")
	ctx := t.Context()
	b, err := s.BookMentoring(ctx, "ms-001", "user-1")
	if err != nil {
		t.Fatal(err)
	}
	if b.Status != "confirmed" || b.Session.SeatsLeft != 3 || b.UserID != "user-1" || b.ID == "" {
		t.Errorf("booking = %+v; want confirmed for user-1 with 3 seats left", b)
	}
	// Another user may book the same session.
	if _, err := s.BookMentoring(ctx, "ms-001", "user-2"); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name            string
		session, user   string
		wantIs          error
		wantBookingErr  bool
		wantInputField  string
		wantNotFoundErr bool
	}{
		{name: "double booking", session: "ms-001", user: "user-1", wantIs: service.ErrAlreadyBooked, wantBookingErr: true},
		{name: "full session", session: "ms-003", user: "user-1", wantIs: service.ErrSessionFull, wantBookingErr: true},
		{name: "past session", session: "ms-013", user: "user-1", wantIs: service.ErrSessionStarted, wantBookingErr: true},
		{name: "unknown session", session: "ms-999", user: "user-1", wantIs: service.ErrNotFound, wantNotFoundErr: true},
		{name: "empty user", session: "ms-001", user: " ", wantIs: service.ErrInvalidInput, wantInputField: "user_id"},
		{name: "empty session", session: "", user: "user-1", wantIs: service.ErrInvalidInput, wantInputField: "session_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.BookMentoring(ctx, tt.session, tt.user)
			if !errors.Is(err, tt.wantIs) {
				t.Fatalf("error = %v; want %v", err, tt.wantIs)
			}
			var be *service.BookingError
			if tt.wantBookingErr && (!errors.As(err, &be) || be.SessionID != tt.session || be.UserID != tt.user) {
				t.Errorf("error = %#v; want *BookingError naming %s and %s", err, tt.session, tt.user)
			}
			var ie *service.InputError
			if tt.wantInputField != "" && (!errors.As(err, &ie) || ie.Field != tt.wantInputField) {
				t.Errorf("error = %#v; want *InputError for %s", err, tt.wantInputField)
			}
			var nf *service.NotFoundError
			if tt.wantNotFoundErr && (!errors.As(err, &nf) || nf.Query != tt.session) {
				t.Errorf("error = %#v; want *NotFoundError for %s", err, tt.session)
			}
		})
	}

	// Refused bookings changed nothing.
	got, err := s.UserBookings(ctx, "user-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].SessionID != "ms-001" || got[0].Session.SeatsLeft != 2 {
		t.Errorf("user-1 bookings = %+v; want one booking of ms-001 with 2 seats left", got)
	}
}

// TestBookMentoringRace books the last seat of ms-002 from many goroutines
// at once: exactly one wins and the others see ErrSessionFull. Then one user
// books ms-006 from many goroutines: exactly one booking is stored.
func TestBookMentoringRace(t *testing.T) {
	for _, where := range []string{"memory", "file"} {
		t.Run(where, func(t *testing.T) {
			path := ":memory:"
			if where == "file" {
				path = filepath.Join(t.TempDir(), "career.db")
			}
			s := open(t, path)
			ctx := t.Context()

			const n = 16
			errs := race(n, func(i int) error {
				_, err := s.BookMentoring(ctx, "ms-002", fmt.Sprintf("racer-%d", i))
				return err
			})
			wins, full := count(errs, service.ErrSessionFull)
			if wins != 1 || full != n-1 {
				t.Errorf("last seat: %d bookings and %d ErrSessionFull out of %d; want 1 and %d (errors: %v)", wins, full, n, n-1, errs)
			}
			res, err := s.SearchMentoringSessions(ctx, "UX 디자이너")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"ms-001"}, sessionIDs(res.Sessions)); diff != "" {
				t.Errorf("after the last seat is gone, sessions (-want +got):\n%s", diff)
			}

			errs = race(n, func(int) error {
				_, err := s.BookMentoring(ctx, "ms-006", "same-user")
				return err
			})
			wins, dup := count(errs, service.ErrAlreadyBooked)
			if wins != 1 || dup != n-1 {
				t.Errorf("same user: %d bookings and %d ErrAlreadyBooked out of %d; want 1 and %d (errors: %v)", wins, dup, n, n-1, errs)
			}
			res, err = s.SearchMentoringSessions(ctx, "백엔드")
			if err != nil {
				t.Fatal(err)
			}
			if res.Sessions[0].ID != "ms-006" || res.Sessions[0].SeatsLeft != 12-5-1 {
				t.Errorf("ms-006 has %d seats left; want %d", res.Sessions[0].SeatsLeft, 12-5-1)
			}
		})
	}
}

func race(n int, f func(i int) error) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = f(i)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

// count returns how many calls succeeded and how many failed with target.
func count(errs []error, target error) (ok, matched int) {
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, target):
			matched++
		}
	}
	return ok, matched
}

// TestReopenKeepsData opens a file twice: the second open must not seed
// again or reset seat counts and bookings.
func TestReopenKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "career.db")
	ctx := context.Background()
	s1, err := service.OpenWith(ctx, path, service.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s1.BookMentoring(ctx, "ms-004", "user-1"); err != nil {
		t.Fatal(err)
	}
	s1.Close()

	s2 := open(t, path)
	got, err := s2.UserBookings(ctx, "user-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Session.SeatsLeft != 8-3-1 {
		t.Fatalf("after reopening, bookings = %+v; want the one booking of ms-004 with %d seats left", got, 8-3-1)
	}
	res, err := s2.SearchMentoringSessions(ctx, "데이터")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ms-004", "ms-005"}, sessionIDs(res.Sessions)); diff != "" {
		t.Errorf("after reopening, sessions (-want +got):\n%s", diff)
	}
}

func TestOpenRejectsEmptyPath(t *testing.T) {
	_, err := service.Open(t.Context(), "")
	if !errors.Is(err, service.ErrInvalidInput) {
		t.Errorf("Open(\"\") error = %v; want ErrInvalidInput", err)
	}
}

func TestOpenDefaultClock(t *testing.T) {
	s, err := service.Open(t.Context(), ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.SearchMentoringSessions(t.Context(), "백엔드 개발자")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Sessions) == 0 {
		t.Error("with the real clock, the freshly seeded data has no upcoming backend session")
	}
}
