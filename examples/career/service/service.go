// Package service is the business logic of DreamPath, the career-counselling
// example of design document 002: mentoring sessions, learning paths, job
// postings and bookings over SQLite.
//
// The package knows nothing of graphs, models or tools (document 000's first
// rule): each operation queries the database, applies the domain rules and
// returns plain DTOs, so the same calls serve a REST handler, a CLI or a
// tool adapter. Open creates the schema and seeds the embedded sample data
// (seed.json) once; opening the same file again keeps what is stored.
package service

import (
	"cmp"
	"context"
	"database/sql"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	_ "modernc.org/sqlite" // database/sql driver "sqlite"

	"github.com/weftlabs/weft/internal/sqlitefile"
)

//go:embed seed.json
var seedJSON []byte

// MaxResults bounds the number of sessions and job postings a search returns.
const MaxResults = 10

// minScore is the share of query words a record must match to be returned.
const minScore = 0.5

// keep reports whether a hit scoring score makes the result list when the
// best hit scored best: when some record matches every word of the query,
// only such records are returned ("서울 백엔드" does not list every job in
// Seoul); otherwise every record above minScore is.
func keep(best, score float64) bool {
	return best < 1 || score >= 1
}

// kst is Korea Standard Time (no daylight saving), fixed so the package needs
// no time zone database.
var kst = time.FixedZone("KST", 9*60*60)

// Options configure a Service.
type Options struct {
	// Now returns the current time; nil means time.Now. Sessions are
	// "upcoming" and postings "open" relative to it, and the seed data's
	// dates are laid out relative to it when the database is first seeded.
	Now func() time.Time
}

// Service is DreamPath's business logic over one SQLite database. It is safe
// for concurrent use.
type Service struct {
	db  *sql.DB
	now func() time.Time
}

// Open opens the SQLite database at path (":memory:" for a private in-memory
// database), creates the schema and seeds the sample data if it is not
// seeded yet.
func Open(ctx context.Context, path string) (*Service, error) {
	return OpenWith(ctx, path, Options{})
}

// OpenWith is Open with options.
func OpenWith(ctx context.Context, path string, opts Options) (*Service, error) {
	if strings.TrimSpace(path) == "" {
		return nil, &InputError{Field: "path", Value: path, Expected: `a file path or ":memory:"`}
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	// One connection for ":memory:", which is a database per connection.
	db, err := sqlitefile.Open(ctx, sqlitefile.ServiceDSN(path), 10*time.Second)
	if err != nil {
		return nil, fmt.Errorf("career: open %s: %w", path, err)
	}
	s := &Service{db: db, now: now}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the database.
func (s *Service) Close() error { return s.db.Close() }

const schema = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS mentors (
	id TEXT PRIMARY KEY, name TEXT NOT NULL, title TEXT NOT NULL, company TEXT NOT NULL,
	career TEXT NOT NULL, years_experience INTEGER NOT NULL, bio TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
	id TEXT PRIMARY KEY, mentor_id TEXT NOT NULL REFERENCES mentors(id), career TEXT NOT NULL,
	title TEXT NOT NULL, description TEXT NOT NULL, tags TEXT NOT NULL,
	starts_at INTEGER NOT NULL, duration_minutes INTEGER NOT NULL, format TEXT NOT NULL,
	location TEXT NOT NULL, capacity INTEGER NOT NULL, booked INTEGER NOT NULL,
	price_krw INTEGER NOT NULL, CHECK (booked >= 0 AND booked <= capacity));
CREATE INDEX IF NOT EXISTS sessions_starts_at ON sessions(starts_at);
CREATE TABLE IF NOT EXISTS bookings (
	id TEXT PRIMARY KEY, session_id TEXT NOT NULL REFERENCES sessions(id), user_id TEXT NOT NULL,
	status TEXT NOT NULL, booked_at INTEGER NOT NULL, UNIQUE (session_id, user_id));
CREATE TABLE IF NOT EXISTS learning_paths (
	id TEXT PRIMARY KEY, career TEXT NOT NULL, career_en TEXT NOT NULL, aliases TEXT NOT NULL,
	summary TEXT NOT NULL, level TEXT NOT NULL, duration_weeks INTEGER NOT NULL, position INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS learning_steps (
	path_id TEXT NOT NULL REFERENCES learning_paths(id), step_order INTEGER NOT NULL,
	title TEXT NOT NULL, description TEXT NOT NULL, weeks INTEGER NOT NULL,
	topics TEXT NOT NULL, resources TEXT NOT NULL, PRIMARY KEY (path_id, step_order));
CREATE TABLE IF NOT EXISTS job_postings (
	id TEXT PRIMARY KEY, company TEXT NOT NULL, title TEXT NOT NULL, career TEXT NOT NULL,
	skills TEXT NOT NULL, location TEXT NOT NULL, employment_type TEXT NOT NULL,
	experience TEXT NOT NULL, salary TEXT NOT NULL, posted_at INTEGER NOT NULL, closes_at INTEGER NOT NULL);
`

// seedData mirrors seed.json.
type seedData struct {
	Version  int      `json:"version"`
	Mentors  []Mentor `json:"mentors"`
	Sessions []struct {
		MentoringSession
		MentorID string `json:"mentor_id"`
		InDays   int    `json:"in_days"`
		At       string `json:"at"`
		Booked   int    `json:"booked"`
	} `json:"sessions"`
	LearningPaths []struct {
		LearningPath
		Aliases []string `json:"aliases"`
	} `json:"learning_paths"`
	JobPostings []struct {
		JobPosting
		PostedDaysAgo int `json:"posted_days_ago"`
		ClosesInDays  int `json:"closes_in_days"`
	} `json:"job_postings"`
}

func (s *Service) migrate(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, schema); err != nil {
		return fmt.Errorf("career: migrate: %w", err)
	}
	var seed seedData
	if err := json.Unmarshal(seedJSON, &seed); err != nil {
		return fmt.Errorf("career: embedded seed data: %w", err)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("career: seed: %w", err)
	}
	defer tx.Rollback()
	var seeded string
	switch err := tx.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'seed_version'`).Scan(&seeded); {
	case err == nil:
		return nil // seeded before; never overwrite bookings or seat counts
	case !errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("career: seed: %w", err)
	}
	if err := insertSeed(ctx, tx, &seed, s.now().In(kst)); err != nil {
		return fmt.Errorf("career: seed: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('seed_version', ?)`, fmt.Sprint(seed.Version)); err != nil {
		return fmt.Errorf("career: seed: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("career: seed: %w", err)
	}
	return nil
}

func insertSeed(ctx context.Context, tx *sql.Tx, seed *seedData, now time.Time) error {
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, kst)
	for _, m := range seed.Mentors {
		if _, err := tx.ExecContext(ctx, `INSERT INTO mentors VALUES (?, ?, ?, ?, ?, ?, ?)`,
			m.ID, m.Name, m.Title, m.Company, m.Career, m.YearsExperience, m.Bio); err != nil {
			return err
		}
	}
	for _, ss := range seed.Sessions {
		at, err := time.Parse("15:04", ss.At)
		if err != nil {
			return fmt.Errorf("session %s: time %q: %w", ss.ID, ss.At, err)
		}
		start := today.AddDate(0, 0, ss.InDays).Add(time.Duration(at.Hour())*time.Hour + time.Duration(at.Minute())*time.Minute)
		if _, err := tx.ExecContext(ctx, `INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			ss.ID, ss.MentorID, ss.Career, ss.Title, ss.Description, mustJSON(ss.Tags), start.Unix(),
			ss.DurationMinutes, ss.Format, ss.Location, ss.Capacity, ss.Booked, ss.PriceKRW); err != nil {
			return fmt.Errorf("session %s: %w", ss.ID, err)
		}
	}
	for i, p := range seed.LearningPaths {
		if _, err := tx.ExecContext(ctx, `INSERT INTO learning_paths VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			p.ID, p.Career, p.CareerEn, mustJSON(p.Aliases), p.Summary, p.Level, p.DurationWeeks, i); err != nil {
			return err
		}
		for j, st := range p.Steps {
			if _, err := tx.ExecContext(ctx, `INSERT INTO learning_steps VALUES (?, ?, ?, ?, ?, ?, ?)`,
				p.ID, j+1, st.Title, st.Description, st.Weeks, mustJSON(st.Topics), mustJSON(st.Resources)); err != nil {
				return err
			}
		}
	}
	for _, j := range seed.JobPostings {
		posted := today.AddDate(0, 0, -j.PostedDaysAgo).Add(10 * time.Hour)
		closes := today.AddDate(0, 0, j.ClosesInDays+1).Add(-time.Second) // end of that day
		if _, err := tx.ExecContext(ctx, `INSERT INTO job_postings VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			j.ID, j.Company, j.Title, j.Career, mustJSON(j.Skills), j.Location, j.EmploymentType,
			j.Experience, j.Salary, posted.Unix(), closes.Unix()); err != nil {
			return err
		}
	}
	return nil
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only slices of strings and Resources reach here
	}
	return string(b)
}

// queryer is what *sql.DB and *sql.Tx share.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

const sessionColumns = `s.id, s.title, s.career, s.description, s.tags, s.starts_at, s.duration_minutes,
	s.format, s.location, s.capacity, s.booked, s.price_krw,
	m.id, m.name, m.title, m.company, m.career, m.years_experience, m.bio`

func querySessions(ctx context.Context, q queryer, where string, args ...any) ([]MentoringSession, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+sessionColumns+` FROM sessions s JOIN mentors m ON m.id = s.mentor_id WHERE `+where+` ORDER BY s.starts_at, s.id`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []MentoringSession
	for rows.Next() {
		var (
			ms       MentoringSession
			tags     string
			startsAt int64
			booked   int
		)
		m := &ms.Mentor
		if err := rows.Scan(&ms.ID, &ms.Title, &ms.Career, &ms.Description, &tags, &startsAt, &ms.DurationMinutes,
			&ms.Format, &ms.Location, &ms.Capacity, &booked, &ms.PriceKRW,
			&m.ID, &m.Name, &m.Title, &m.Company, &m.Career, &m.YearsExperience, &m.Bio); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(tags), &ms.Tags); err != nil {
			return nil, fmt.Errorf("session %s tags: %w", ms.ID, err)
		}
		ms.StartsAt = time.Unix(startsAt, 0).In(kst)
		ms.SeatsLeft = ms.Capacity - booked
		out = append(out, ms)
	}
	return out, rows.Err()
}

// SearchMentoringSessions returns upcoming sessions with at least one free
// seat whose career, title, tags or mentor match careerInterest, best match
// first, then soonest; at most MaxResults. careerInterest may be Korean or
// English and may be phrased loosely ("UX 디자이너가 되고 싶어요", "data
// analyst"). No match is an empty list, not an error.
func (s *Service) SearchMentoringSessions(ctx context.Context, careerInterest string) (*MentoringSearchResult, error) {
	toks := tokens(careerInterest)
	if len(toks) == 0 {
		return nil, &InputError{Field: "career_interest", Value: careerInterest,
			Expected: "a career or field to search for, such as \"UX 디자이너\" or \"backend\""}
	}
	sessions, err := querySessions(ctx, s.db, `s.starts_at > ? AND s.booked < s.capacity`, s.now().Unix())
	if err != nil {
		return nil, fmt.Errorf("career: search mentoring sessions: %w", err)
	}
	type scored struct {
		MentoringSession
		score float64
	}
	var hits []scored
	for _, ms := range sessions {
		doc := newDocument(append([]string{ms.Career, ms.Title, ms.Mentor.Career, ms.Mentor.Title}, ms.Tags...)...)
		if sc := doc.score(toks); sc >= minScore {
			hits = append(hits, scored{ms, sc})
		}
	}
	// sessions come ordered by start time; a stable sort keeps that order
	// among equal scores.
	slices.SortStableFunc(hits, func(a, b scored) int { return cmp.Compare(b.score, a.score) })
	res := &MentoringSearchResult{CareerInterest: careerInterest, Sessions: []MentoringSession{}}
	for i := 0; i < len(hits) && i < MaxResults && keep(hits[0].score, hits[i].score); i++ {
		res.Sessions = append(res.Sessions, hits[i].MentoringSession)
	}
	return res, nil
}

// GetLearningPath returns the learning path of the career that best matches
// career (Korean, English or a common alias such as "PM" or "프론트엔드").
// When no path matches it returns a *NotFoundError listing the careers that
// have one. Equally good matches go to the path listed first.
func (s *Service) GetLearningPath(ctx context.Context, career string) (*LearningPath, error) {
	toks := tokens(career)
	if len(toks) == 0 {
		return nil, &InputError{Field: "career", Value: career,
			Expected: "a career such as \"백엔드 개발자\" or \"Data Analyst\""}
	}
	rows, err := s.db.QueryContext(ctx, `SELECT id, career, career_en, aliases, summary, level, duration_weeks
		FROM learning_paths ORDER BY position`)
	if err != nil {
		return nil, fmt.Errorf("career: get learning path: %w", err)
	}
	var (
		best      *LearningPath
		bestScore float64
		known     []string
	)
	for rows.Next() {
		var (
			p       LearningPath
			aliases string
			names   []string
		)
		if err := rows.Scan(&p.ID, &p.Career, &p.CareerEn, &aliases, &p.Summary, &p.Level, &p.DurationWeeks); err != nil {
			rows.Close()
			return nil, fmt.Errorf("career: get learning path: %w", err)
		}
		if err := json.Unmarshal([]byte(aliases), &names); err != nil {
			rows.Close()
			return nil, fmt.Errorf("career: learning path %s aliases: %w", p.ID, err)
		}
		known = append(known, p.Career)
		sc := newDocument(append([]string{p.Career, p.CareerEn}, names...)...).score(toks)
		// Naming the career outright beats matching a word of it.
		if c := compact(career); c == compact(p.Career) || c == compact(p.CareerEn) {
			sc += 1
		}
		if sc >= minScore && sc > bestScore {
			best, bestScore = &p, sc
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("career: get learning path: %w", err)
	}
	if best == nil {
		return nil, &NotFoundError{Kind: "learning path", Query: career, Known: known}
	}
	if err := s.loadSteps(ctx, best); err != nil {
		return nil, fmt.Errorf("career: learning path %s: %w", best.ID, err)
	}
	return best, nil
}

func (s *Service) loadSteps(ctx context.Context, p *LearningPath) error {
	rows, err := s.db.QueryContext(ctx, `SELECT step_order, title, description, weeks, topics, resources
		FROM learning_steps WHERE path_id = ? ORDER BY step_order`, p.ID)
	if err != nil {
		return err
	}
	defer rows.Close()
	p.Topics = []string{}
	p.Steps = []LearningStep{}
	for rows.Next() {
		var (
			st                LearningStep
			topicsJS, resJSON string
		)
		if err := rows.Scan(&st.Order, &st.Title, &st.Description, &st.Weeks, &topicsJS, &resJSON); err != nil {
			return err
		}
		if err := json.Unmarshal([]byte(topicsJS), &st.Topics); err != nil {
			return err
		}
		if err := json.Unmarshal([]byte(resJSON), &st.Resources); err != nil {
			return err
		}
		for _, t := range st.Topics {
			if !slices.Contains(p.Topics, t) {
				p.Topics = append(p.Topics, t)
			}
		}
		p.Steps = append(p.Steps, st)
	}
	return rows.Err()
}

// SearchJobPostings returns open postings (closing today or later) whose
// title, company, career, skills, location or employment type match
// keyword, best match first, then newest; at most MaxResults. No match is an
// empty list, not an error.
func (s *Service) SearchJobPostings(ctx context.Context, keyword string) (*JobSearchResult, error) {
	toks := tokens(keyword)
	if len(toks) == 0 {
		return nil, &InputError{Field: "keyword", Value: keyword,
			Expected: "a career, skill, company or location such as \"백엔드\", \"Python\" or \"판교\""}
	}
	rows, err := s.db.QueryContext(ctx, `SELECT id, company, title, career, skills, location, employment_type,
		experience, salary, posted_at, closes_at FROM job_postings WHERE closes_at >= ?
		ORDER BY posted_at DESC, id`, s.now().Unix())
	if err != nil {
		return nil, fmt.Errorf("career: search job postings: %w", err)
	}
	defer rows.Close()
	type scored struct {
		JobPosting
		score float64
	}
	var hits []scored
	for rows.Next() {
		var (
			j              JobPosting
			skills         string
			posted, closes int64
		)
		if err := rows.Scan(&j.ID, &j.Company, &j.Title, &j.Career, &skills, &j.Location, &j.EmploymentType,
			&j.Experience, &j.Salary, &posted, &closes); err != nil {
			return nil, fmt.Errorf("career: search job postings: %w", err)
		}
		if err := json.Unmarshal([]byte(skills), &j.Skills); err != nil {
			return nil, fmt.Errorf("career: job posting %s skills: %w", j.ID, err)
		}
		j.PostedAt, j.ClosesAt = time.Unix(posted, 0).In(kst), time.Unix(closes, 0).In(kst)
		doc := newDocument(append([]string{j.Title, j.Company, j.Career, j.Location, j.EmploymentType}, j.Skills...)...)
		if sc := doc.score(toks); sc >= minScore {
			hits = append(hits, scored{j, sc})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("career: search job postings: %w", err)
	}
	slices.SortStableFunc(hits, func(a, b scored) int { return cmp.Compare(b.score, a.score) })
	res := &JobSearchResult{Keyword: keyword, Jobs: []JobPosting{}}
	for i := 0; i < len(hits) && i < MaxResults && keep(hits[0].score, hits[i].score); i++ {
		res.Jobs = append(res.Jobs, hits[i].JobPosting)
	}
	return res, nil
}

// BookMentoring books one seat of session sessionID for userID in one
// transaction: the seat count drops by one and the booking is stored, or
// nothing changes. A user holds at most one seat per session. Errors:
// *InputError for empty ids, *NotFoundError for an unknown session, and
// *BookingError wrapping ErrAlreadyBooked, ErrSessionFull or
// ErrSessionStarted.
func (s *Service) BookMentoring(ctx context.Context, sessionID, userID string) (*Booking, error) {
	sessionID, userID = strings.TrimSpace(sessionID), strings.TrimSpace(userID)
	if sessionID == "" {
		return nil, &InputError{Field: "session_id", Value: sessionID, Expected: "the id of a session, such as \"ms-001\""}
	}
	if userID == "" || utf8.RuneCountInString(userID) > 128 {
		return nil, &InputError{Field: "user_id", Value: userID, Expected: "a non-empty user id of at most 128 characters"}
	}
	refuse := func(reason error) error {
		return &BookingError{SessionID: sessionID, UserID: userID, Reason: reason}
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("career: book mentoring: %w", err)
	}
	defer tx.Rollback()

	var (
		startsAt         int64
		capacity, booked int
		now              = s.now()
		already          int
	)
	err = tx.QueryRowContext(ctx, `SELECT starts_at, capacity, booked FROM sessions WHERE id = ?`, sessionID).
		Scan(&startsAt, &capacity, &booked)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &NotFoundError{Kind: "session", Query: sessionID}
	}
	if err != nil {
		return nil, fmt.Errorf("career: book mentoring: %w", err)
	}
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM bookings WHERE session_id = ? AND user_id = ?`,
		sessionID, userID).Scan(&already); err != nil {
		return nil, fmt.Errorf("career: book mentoring: %w", err)
	}
	switch {
	case already > 0:
		return nil, refuse(ErrAlreadyBooked)
	case startsAt <= now.Unix():
		return nil, refuse(ErrSessionStarted)
	case booked >= capacity:
		return nil, refuse(ErrSessionFull)
	}
	// The guard in the WHERE clause keeps the count right even if the
	// transaction mode were ever weakened.
	res, err := tx.ExecContext(ctx, `UPDATE sessions SET booked = booked + 1 WHERE id = ? AND booked < capacity`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("career: book mentoring: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return nil, refuse(ErrSessionFull)
	}
	b := &Booking{ID: "bk-" + uuid.NewString(), SessionID: sessionID, UserID: userID, Status: "confirmed",
		BookedAt: time.Unix(now.Unix(), 0).In(kst)}
	if _, err := tx.ExecContext(ctx, `INSERT INTO bookings (id, session_id, user_id, status, booked_at) VALUES (?, ?, ?, ?, ?)`,
		b.ID, b.SessionID, b.UserID, b.Status, now.Unix()); err != nil {
		return nil, fmt.Errorf("career: book mentoring: %w", err)
	}
	sessions, err := querySessions(ctx, tx, `s.id = ?`, sessionID)
	if err != nil || len(sessions) != 1 {
		return nil, fmt.Errorf("career: book mentoring: reload session: %w", cmp.Or(err, ErrNotFound))
	}
	b.Session = sessions[0]
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("career: book mentoring: %w", err)
	}
	return b, nil
}

// UserBookings returns the user's bookings, soonest session first.
func (s *Service) UserBookings(ctx context.Context, userID string) ([]Booking, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT b.id, b.session_id, b.user_id, b.status, b.booked_at
		FROM bookings b JOIN sessions s ON s.id = b.session_id WHERE b.user_id = ? ORDER BY s.starts_at, b.id`, userID)
	if err != nil {
		return nil, fmt.Errorf("career: user bookings: %w", err)
	}
	out := []Booking{}
	for rows.Next() {
		var (
			b  Booking
			at int64
		)
		if err := rows.Scan(&b.ID, &b.SessionID, &b.UserID, &b.Status, &at); err != nil {
			rows.Close()
			return nil, fmt.Errorf("career: user bookings: %w", err)
		}
		b.BookedAt = time.Unix(at, 0).In(kst)
		out = append(out, b)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("career: user bookings: %w", err)
	}
	for i := range out {
		sessions, err := querySessions(ctx, s.db, `s.id = ?`, out[i].SessionID)
		if err != nil || len(sessions) != 1 {
			return nil, fmt.Errorf("career: user bookings: session %s: %w", out[i].SessionID, cmp.Or(err, ErrNotFound))
		}
		out[i].Session = sessions[0]
	}
	return out, nil
}
