package service

import "time"

// Mentor is a professional who runs mentoring sessions.
type Mentor struct {
	ID              string `json:"id"`
	Name            string `json:"name"`
	Title           string `json:"title"`
	Company         string `json:"company"`
	Career          string `json:"career"`
	YearsExperience int    `json:"years_experience"`
	Bio             string `json:"bio"`
}

// MentoringSession is one scheduled session a user can book.
type MentoringSession struct {
	ID              string    `json:"id"`
	Title           string    `json:"title"`
	Career          string    `json:"career"`
	Description     string    `json:"description"`
	Tags            []string  `json:"tags"`
	Mentor          Mentor    `json:"mentor"`
	StartsAt        time.Time `json:"starts_at"`
	DurationMinutes int       `json:"duration_minutes"`
	// Format is "online" or "offline".
	Format    string `json:"format"`
	Location  string `json:"location"`
	Capacity  int    `json:"capacity"`
	SeatsLeft int    `json:"seats_left"`
	PriceKRW  int    `json:"price_krw"`
}

// MentoringSearchResult answers SearchMentoringSessions: upcoming sessions
// with free seats, best match first.
type MentoringSearchResult struct {
	CareerInterest string             `json:"career_interest"`
	Sessions       []MentoringSession `json:"sessions"`
}

// Resource is a book, course, article, practice site or mentoring offer
// that supports a learning step.
type Resource struct {
	Title string `json:"title"`
	// Kind is one of "book", "course", "article", "practice", "mentoring".
	Kind string `json:"kind"`
	URL  string `json:"url,omitempty"`
}

// LearningStep is one stage of a learning path; Order starts at 1.
type LearningStep struct {
	Order       int        `json:"order"`
	Title       string     `json:"title"`
	Description string     `json:"description"`
	Weeks       int        `json:"weeks"`
	Topics      []string   `json:"topics"`
	Resources   []Resource `json:"resources"`
}

// LearningPath is the ordered way into a career.
type LearningPath struct {
	ID            string `json:"id"`
	Career        string `json:"career"`
	CareerEn      string `json:"career_en"`
	Summary       string `json:"summary"`
	Level         string `json:"level"`
	DurationWeeks int    `json:"duration_weeks"`
	// Topics lists every step's topics in step order, without repeats.
	Topics []string       `json:"topics"`
	Steps  []LearningStep `json:"steps"`
}

// JobPosting is an open position.
type JobPosting struct {
	ID             string    `json:"id"`
	Company        string    `json:"company"`
	Title          string    `json:"title"`
	Career         string    `json:"career"`
	Skills         []string  `json:"skills"`
	Location       string    `json:"location"`
	EmploymentType string    `json:"employment_type"`
	Experience     string    `json:"experience"`
	Salary         string    `json:"salary"`
	PostedAt       time.Time `json:"posted_at"`
	ClosesAt       time.Time `json:"closes_at"`
}

// JobSearchResult answers SearchJobPostings: open postings, best match
// first, then newest.
type JobSearchResult struct {
	Keyword string       `json:"keyword"`
	Jobs    []JobPosting `json:"jobs"`
}

// BookingRequest asks for a seat in a session; it is what BookMentoring
// takes, as a struct for callers that decode requests from JSON.
type BookingRequest struct {
	SessionID string `json:"session_id"`
	UserID    string `json:"user_id"`
}

// Booking is a confirmed seat. Session reflects the seat count after the
// booking.
type Booking struct {
	ID        string           `json:"id"`
	SessionID string           `json:"session_id"`
	UserID    string           `json:"user_id"`
	Status    string           `json:"status"`
	BookedAt  time.Time        `json:"booked_at"`
	Session   MentoringSession `json:"session"`
}
