package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	// The time zone database, built in: a cron's timezone reads the same
	// in every process sharing a database, whatever zoneinfo its host
	// has (a process without one would otherwise refuse the zone, and
	// stop the crons whose schedules it could not read).
	_ "time/tzdata"

	"github.com/google/uuid"
	"github.com/robfig/cron/v3"

	"github.com/weftlabs/weft/internal/ids"
	"github.com/weftlabs/weft/server/internal/api"
	"github.com/weftlabs/weft/server/internal/auth"
	"github.com/weftlabs/weft/server/internal/records"
)

// DefaultCronInterval is how often a server process looks for the crons
// due, unless Options.CronInterval says otherwise.
const DefaultCronInterval = 10 * time.Second

// cronBatch bounds the crons one look fires; more wait for the next.
const cronBatch = 100

// DefaultCronRetries is how many times a cron's tick whose run could not
// be made for a reason that may pass is tried again, unless
// Options.CronRetries says otherwise.
const DefaultCronRetries = 5

// cronRetryMaxDelay bounds the wait before a tick is tried again (unless
// the scheduler's interval is longer): the waits double from the
// interval up to it.
const cronRetryMaxDelay = 10 * time.Minute

// cronGiveBackTimeout bounds the write that gives a tick back to be tried
// again, made even when the scheduler is stopping (a run refused as the
// server shuts down is tried again by a process that lives on).
const cronGiveBackTimeout = 5 * time.Second

// cronParser reads the five fields of a cron expression (minute, hour,
// day of month, month, day of week) and the descriptors (@hourly,
// @daily...), as LangGraph's servers do.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// errNoSuchCron marks the answer to a cron that does not exist.
var errNoSuchCron = errors.New("server: no such cron")

func cronNotFound() error { return api.NotFound("Cron not found").Because(errNoSuchCron) }

// cronSchedule parses a schedule in a timezone ("" is UTC), naming the
// field that is wrong.
func cronSchedule(schedule, timezone string) (cron.Schedule, *time.Location, error) {
	if timezone == "" {
		timezone = "UTC"
	}
	loc, err := time.LoadLocation(timezone)
	if err != nil || timezone == "Local" {
		return nil, nil, api.Invalid(api.Field(fmt.Sprintf("Invalid timezone %q: expected an IANA time zone name such as UTC or Europe/Paris", timezone), "timezone"))
	}
	if strings.HasPrefix(schedule, "TZ=") || strings.HasPrefix(schedule, "CRON_TZ=") {
		return nil, nil, api.Invalid(api.Field("Invalid schedule: give the time zone in the timezone field, not in the schedule", "schedule"))
	}
	sched, err := cronParser.Parse(schedule)
	if err != nil {
		return nil, nil, api.Invalid(api.Field(fmt.Sprintf("Invalid schedule %q: %v; expected a cron expression of 5 fields (minute hour day-of-month month day-of-week), such as \"*/5 * * * *\"", schedule, err), "schedule"))
	}
	return sched, loc, nil
}

// nextTick is a cron's first tick after t, in UTC; nil when its schedule
// has none.
func nextTick(sched cron.Schedule, loc *time.Location, t time.Time) *time.Time {
	next := sched.Next(t.In(loc))
	if next.IsZero() {
		return nil
	}
	next = next.UTC()
	return &next
}

// cronRunKeys are the fields of a cron request that are its runs':
// what the cron keeps as its payload.
var cronRunKeys = []string{
	"assistant_id", "input", "command", "config", "context", "metadata", "interrupt_before", "interrupt_after",
	"webhook", "multitask_strategy", "checkpoint_during", "durability", "stream_mode", "stream_subgraphs",
	"stream_resumable", "feedback_keys",
}

// cronFields are the fields of a cron request that are the cron's own.
type cronFields struct {
	Schedule       *string         `json:"schedule"`
	Timezone       *string         `json:"timezone"`
	EndTime        *string         `json:"end_time"`
	Enabled        *bool           `json:"enabled"`
	OnRunCompleted *string         `json:"on_run_completed"`
	Metadata       json.RawMessage `json:"metadata"`
	AssistantID    *string         `json:"assistant_id"`
}

// cronBody reads a cron request: its own fields, and its members by name.
func cronBody(w http.ResponseWriter, r *http.Request) (cronFields, map[string]json.RawMessage, error) {
	var raw json.RawMessage
	if err := api.DecodeBody(w, r, 0, &raw); err != nil {
		return cronFields{}, nil, err
	}
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil || members == nil {
		return cronFields{}, nil, api.Invalid(api.TypeIssue("object", kindOf(raw)))
	}
	var f cronFields
	if err := api.Decode(raw, &f); err != nil {
		return cronFields{}, nil, err
	}
	// What the cron's runs would be given is checked as a run request's
	// body: its types, with the fields named.
	var req runRequest
	if err := api.Decode(raw, &req); err != nil {
		return cronFields{}, nil, err
	}
	return f, members, nil
}

// endTime reads a cron's end_time.
func endTime(v string) (*time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return nil, api.Invalid(api.Field(fmt.Sprintf("Invalid end_time %q: expected an RFC 3339 date-time such as 2026-01-02T15:04:05Z", v), "end_time"))
	}
	t = t.UTC()
	return &t, nil
}

// checkCronPayload checks that payload (a JSON object) makes a valid run
// of assistant assistantID on threadID ("" for a new thread each time),
// as a request to create the run would be checked (Server.checkRun), and
// returns the assistant's id.
func (s *Server) checkCronPayload(r *http.Request, payload json.RawMessage, assistantID, threadID, onRunCompleted string) (string, error) {
	req, err := cronRunRequest(payload, assistantID, threadID, onRunCompleted)
	if err != nil {
		return "", err
	}
	a, _, _, _, err := s.checkRun(r, req, threadID == "")
	if err != nil {
		return "", err
	}
	return a.ID, nil
}

// cronRunRequest is the request of a cron's run, from its payload (a
// JSON object).
func cronRunRequest(payload json.RawMessage, assistantID, threadID, onRunCompleted string) (*runRequest, error) {
	var req runRequest
	if err := api.Decode(payload, &req); err != nil {
		return nil, err
	}
	req.AssistantID = &assistantID
	if threadID == "" {
		req.OnCompletion = onRunCompleted
	}
	return &req, nil
}

// cronPayload keeps the members of a request that its runs are made of.
func cronPayload(members map[string]json.RawMessage) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for _, k := range cronRunKeys {
		if v, ok := members[k]; ok && !isNullJSON(v) {
			out[k] = v
		}
	}
	return out
}

func (s *Server) createCron(w http.ResponseWriter, r *http.Request) error {
	threadID := ""
	if r.PathValue("thread_id") != "" {
		var err error
		if threadID, err = pathUUID(r, "thread_id"); err != nil {
			return err
		}
	}
	f, members, err := cronBody(w, r)
	if err != nil {
		return err
	}
	if f.AssistantID == nil || *f.AssistantID == "" {
		return api.Invalid(api.TypeIssue("string", "undefined", "assistant_id"))
	}
	if f.Schedule == nil || *f.Schedule == "" {
		return api.Invalid(api.TypeIssue("string", "undefined", "schedule"))
	}
	c := records.Cron{
		ID: ids.TimeOrdered(), Owner: user(r), ThreadID: threadID, Schedule: *f.Schedule, Timezone: "UTC",
		Enabled: true, OnRunCompleted: "delete", Metadata: f.Metadata,
	}
	if err := jsonObject(f.Metadata, "metadata"); err != nil {
		return err
	}
	if f.Timezone != nil && *f.Timezone != "" {
		c.Timezone = *f.Timezone
	}
	sched, loc, err := cronSchedule(c.Schedule, c.Timezone)
	if err != nil {
		return err
	}
	if f.EndTime != nil {
		if c.EndTime, err = endTime(*f.EndTime); err != nil {
			return err
		}
	}
	if f.Enabled != nil {
		c.Enabled = *f.Enabled
	}
	if f.OnRunCompleted != nil {
		if !slices.Contains(onCompletions, *f.OnRunCompleted) {
			return enumIssue("on_run_completed", *f.OnRunCompleted, onCompletions...)
		}
		c.OnRunCompleted = *f.OnRunCompleted
	}
	if c.Payload, err = json.Marshal(cronPayload(members)); err != nil {
		return err
	}
	if c.AssistantID, err = s.checkCronPayload(r, c.Payload, *f.AssistantID, threadID, c.OnRunCompleted); err != nil {
		return err
	}
	c.NextRunDate = nextTick(sched, loc, time.Now())
	c, err = s.rec.CreateCron(r.Context(), c)
	if errors.Is(err, records.ErrNotFound) {
		return threadNotFound(threadID)
	}
	if err != nil {
		return err
	}
	api.WriteJSON(w, http.StatusOK, cronOut(c, false))
	return nil
}

func (s *Server) patchCron(w http.ResponseWriter, r *http.Request) error {
	id, err := pathUUID(r, "cron_id")
	if err != nil {
		return err
	}
	f, members, err := cronBody(w, r)
	if err != nil {
		return err
	}
	if err := jsonObject(f.Metadata, "metadata"); err != nil {
		return err
	}
	if f.OnRunCompleted != nil && !slices.Contains(onCompletions, *f.OnRunCompleted) {
		return enumIssue("on_run_completed", *f.OnRunCompleted, onCompletions...)
	}
	var end *time.Time
	if f.EndTime != nil {
		if end, err = endTime(*f.EndTime); err != nil {
			return err
		}
	}
	// apply makes the change asked to a cron, and gives its new payload
	// and whether its next tick is to be set again.
	apply := func(c *records.Cron) (map[string]json.RawMessage, bool) {
		reschedule := false
		if f.Schedule != nil && *f.Schedule != c.Schedule {
			c.Schedule, reschedule = *f.Schedule, true
		}
		if f.Timezone != nil {
			tz := *f.Timezone
			if tz == "" {
				tz = "UTC"
			}
			reschedule = reschedule || tz != c.Timezone
			c.Timezone = tz
		}
		if f.Enabled != nil {
			reschedule = reschedule || (*f.Enabled && !c.Enabled)
			c.Enabled = *f.Enabled
		}
		if raw, ok := members["end_time"]; ok {
			if isNullJSON(raw) {
				c.EndTime = nil
			} else {
				c.EndTime = end
			}
		}
		if f.OnRunCompleted != nil {
			c.OnRunCompleted = *f.OnRunCompleted
		}
		if _, ok := members["metadata"]; ok {
			c.Metadata = f.Metadata
		}
		var payload map[string]json.RawMessage
		if err := json.Unmarshal(c.Payload, &payload); err != nil || payload == nil {
			payload = map[string]json.RawMessage{}
		}
		for _, k := range cronRunKeys {
			if v, ok := members[k]; ok {
				if isNullJSON(v) {
					delete(payload, k)
				} else {
					payload[k] = v
				}
			}
		}
		return payload, reschedule || c.NextRunDate == nil
	}
	// The change is checked on the cron as read, outside the update's
	// transaction (the checks read the assistant), then made on the cron
	// as it is then: a change made meanwhile by another request is kept.
	old, err := s.rec.GetCron(r.Context(), user(r), id)
	if errors.Is(err, records.ErrNotFound) {
		return cronNotFound()
	}
	if err != nil {
		return err
	}
	payload, _ := apply(&old)
	if _, _, err := cronSchedule(old.Schedule, old.Timezone); err != nil {
		return err
	}
	checked, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	assistant := old.AssistantID
	if f.AssistantID != nil && *f.AssistantID != "" {
		assistant = *f.AssistantID
	}
	resolved, err := s.checkCronPayload(r, checked, assistant, old.ThreadID, old.OnRunCompleted)
	if err != nil {
		return err
	}
	c, err := s.rec.UpdateCron(r.Context(), user(r), id, func(c *records.Cron) error {
		payload, reschedule := apply(c)
		sched, loc, err := cronSchedule(c.Schedule, c.Timezone)
		if err != nil {
			return err
		}
		c.AssistantID = resolved
		if c.Payload, err = json.Marshal(payload); err != nil {
			return err
		}
		if reschedule {
			c.NextRunDate = nextTick(sched, loc, time.Now())
		}
		return nil
	})
	if errors.Is(err, records.ErrNotFound) {
		return cronNotFound()
	}
	if err != nil {
		return err
	}
	api.WriteJSON(w, http.StatusOK, cronOut(c, false))
	return nil
}

func (s *Server) deleteCron(w http.ResponseWriter, r *http.Request) error {
	id, err := pathUUID(r, "cron_id")
	if err != nil {
		return err
	}
	err = s.rec.DeleteCron(r.Context(), user(r), id)
	if errors.Is(err, records.ErrNotFound) {
		return cronNotFound()
	}
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// cronSelectable are the fields a cron search may select.
var cronSelectable = []string{
	"cron_id", "assistant_id", "thread_id", "end_time", "schedule", "created_at", "updated_at", "user_id",
	"payload", "next_run_date", "metadata", "now", "timezone", "enabled", "on_run_completed",
}

// cronSortable are the fields a cron search may sort by.
var cronSortable = []string{"cron_id", "assistant_id", "thread_id", "created_at", "updated_at", "next_run_date"}

type cronSearchRequest struct {
	AssistantID string         `json:"assistant_id"`
	ThreadID    string         `json:"thread_id"`
	Enabled     *bool          `json:"enabled"`
	Metadata    map[string]any `json:"metadata"`
	Limit       *int           `json:"limit"`
	Offset      *int           `json:"offset"`
	SortBy      string         `json:"sort_by"`
	SortOrder   string         `json:"sort_order"`
	Select      []string       `json:"select"`
}

func (s *Server) cronQuery(r *http.Request, req cronSearchRequest) (records.CronQuery, error) {
	if req.ThreadID != "" {
		if _, err := uuid.Parse(req.ThreadID); err != nil {
			return records.CronQuery{}, api.Invalid(api.Issue{Code: "invalid_string", Path: []any{"thread_id"}, Message: "Invalid uuid"})
		}
	}
	assistant := req.AssistantID
	if assistant != "" {
		assistant = s.assistantRef(assistant)
	}
	return records.CronQuery{Owner: user(r), AssistantID: assistant, ThreadID: req.ThreadID, Enabled: req.Enabled, Metadata: req.Metadata}, nil
}

func (s *Server) searchCrons(w http.ResponseWriter, r *http.Request) error {
	var req cronSearchRequest
	if err := api.DecodeBody(w, r, 0, &req); err != nil {
		return err
	}
	q, err := s.cronQuery(r, req)
	if err != nil {
		return err
	}
	if q.Limit, q.Offset, err = page(req.Limit, req.Offset); err != nil {
		return err
	}
	if req.SortBy != "" && !slices.Contains(cronSortable, req.SortBy) {
		return enumIssue("sort_by", req.SortBy, cronSortable...)
	}
	q.SortBy = req.SortBy
	if q.Desc, err = sortOrder(req.SortOrder); err != nil {
		return err
	}
	for _, f := range req.Select {
		if !slices.Contains(cronSelectable, f) {
			return enumIssue("select", f, cronSelectable...)
		}
	}
	list, total, err := s.rec.SearchCrons(r.Context(), q)
	if err != nil {
		return err
	}
	withNow := slices.Contains(req.Select, "now")
	out := make([]cronJSON, len(list))
	for i, c := range list {
		out[i] = cronOut(c, withNow)
	}
	return writePage(w, out, req.Select, q.Offset, total)
}

func (s *Server) countCrons(w http.ResponseWriter, r *http.Request) error {
	var req cronSearchRequest
	if err := api.DecodeBody(w, r, 0, &req); err != nil {
		return err
	}
	q, err := s.cronQuery(r, req)
	if err != nil {
		return err
	}
	n, err := s.rec.CountCrons(r.Context(), q)
	if err != nil {
		return err
	}
	api.WriteJSON(w, http.StatusOK, n)
	return nil
}

// cronScheduler fires the crons due, in each server process: it claims
// each tick in the database before it fires it (records.ClaimCronTick),
// so that of the processes sharing a database one only fires it.
type cronScheduler struct {
	s        *Server
	interval time.Duration
	// retries bounds how many times a tick is tried again
	// (Options.CronRetries); 0: never.
	retries int
	stop    context.CancelFunc
	done    chan struct{}
}

// startCrons starts the scheduler, unless Options.CronInterval is
// negative.
func (s *Server) startCrons() {
	interval := s.opts.CronInterval
	if interval < 0 {
		return
	}
	if interval == 0 {
		interval = DefaultCronInterval
	}
	retries := s.opts.CronRetries
	if retries == 0 {
		retries = DefaultCronRetries
	}
	ctx, stop := context.WithCancel(context.Background())
	c := &cronScheduler{s: s, interval: interval, retries: max(retries, 0), stop: stop, done: make(chan struct{})}
	s.crons = c
	go c.loop(ctx)
}

// shutdown stops the scheduler and waits for the look it is in to end.
func (c *cronScheduler) shutdown() {
	if c == nil {
		return
	}
	c.stop()
	<-c.done
}

func (c *cronScheduler) loop(ctx context.Context) {
	defer close(c.done)
	t := time.NewTicker(c.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c.fireDue(ctx)
	}
}

// cronPasses bounds the batches of crons one look fires.
const cronPasses = 10

// fireDue fires the crons due now, in batches of cronBatch while there
// are more (at most cronPasses of them: the rest wait for the next look).
// A tick that fails is logged, and given back to be tried again if the
// failure may pass (cronScheduler.failed); the others go on.
func (c *cronScheduler) fireDue(ctx context.Context) {
	now := time.Now()
	for range cronPasses {
		if c.fireBatch(ctx, now) < cronBatch || ctx.Err() != nil {
			return
		}
	}
}

// fireBatch fires up to cronBatch crons due at now and returns how many
// were due.
func (c *cronScheduler) fireBatch(ctx context.Context, now time.Time) int {
	due, err := c.s.rec.DueCrons(ctx, now, cronBatch)
	if err != nil {
		if ctx.Err() == nil {
			c.s.log.Error("server: reading the crons due", "err", err)
		}
		return 0
	}
	for _, cr := range due {
		if ctx.Err() != nil {
			break
		}
		var next *time.Time
		sched, loc, err := cronSchedule(cr.Schedule, cr.Timezone)
		if err != nil {
			// Stored by an older build that read it otherwise: it fires
			// once more, and no longer.
			c.s.log.Error("server: a cron's schedule does not parse; it fires no more", "cron_id", cr.ID, "err", err)
		} else {
			next = nextTick(sched, loc, now)
		}
		claimed, err := c.s.rec.ClaimCronTick(ctx, cr.ID, *cr.NextRunDate, next)
		if err != nil {
			if ctx.Err() == nil {
				c.s.log.Error("server: claiming a cron's tick", "cron_id", cr.ID, "err", err)
			}
			continue
		}
		if !claimed {
			continue // another process fired it, or it changed meanwhile
		}
		if made, err := c.s.fireCron(ctx, cr); err != nil {
			c.failed(ctx, cr, next, err)
		} else if made && cr.RetryTick != nil {
			c.s.log.Info("server: a cron's tick tried again created its run", "cron_id", cr.ID, "tick", *cr.RetryTick, "attempt", cr.RetryAttempts+1)
		}
	}
	return len(due)
}

// failed deals with a tick of cron cr whose run was not made (err), which
// this process claimed by moving the cron's next tick to next. A failure
// that may pass (passingFailure) gives the tick back, to be claimed and
// tried again, by any process, once a while has passed: the while doubles
// from the scheduler's interval with each failure, the tick is tried
// again at most c.retries times, and only before the cron's next tick
// (which would make a run anyway). Another failure, or one past these
// bounds, is logged, and the schedule goes on from next. Nothing here
// waits but the one write that gives the tick back.
func (c *cronScheduler) failed(ctx context.Context, cr records.Cron, next *time.Time, err error) {
	tick := dueTick(cr)
	attempts := cr.RetryAttempts + 1
	log := c.s.log.With("cron_id", cr.ID, "thread_id", cr.ThreadID, "assistant_id", cr.AssistantID, "tick", tick, "attempts", attempts, "err", err)
	const failedText = "server: a cron's tick failed to create its run"
	if !passingFailure(err) {
		log.Error(failedText + "; it is not tried again")
		return
	}
	if attempts > c.retries {
		log.Error(failedText+"; it is not tried again: tried as many times as Options.CronRetries allows", "retries", c.retries)
		return
	}
	retryAt := time.Now().Add(c.retryDelay(attempts)).UTC()
	if next != nil && !retryAt.Before(*next) {
		log.Error(failedText+"; it is not tried again: the cron's next tick comes first", "next_run_date", *next)
		return
	}
	gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cronGiveBackTimeout)
	defer cancel()
	given, gerr := c.s.rec.RetryCronTick(gctx, cr.ID, next, retryAt, tick, attempts)
	switch {
	case gerr != nil:
		log.Error(failedText+"; it is not tried again: giving it back failed", "give_back_err", gerr)
	case !given:
		log.Warn(failedText + "; it is not tried again: the cron changed meanwhile (disabled, rescheduled, or its next tick claimed)")
	default:
		log.Warn(failedText+"; it is tried again", "retry_at", retryAt)
	}
}

// dueTick is the tick of a cron due that its run is made for: the tick
// tried again (records.Cron.RetryTick), or else its next tick.
func dueTick(c records.Cron) time.Time {
	if c.RetryTick != nil {
		return *c.RetryTick
	}
	return *c.NextRunDate
}

// retryDelay is how long a tick that failed attempts times waits before
// it is tried again: the scheduler's interval, doubled with each failure
// after the first, up to cronRetryMaxDelay (or the interval, if longer).
func (c *cronScheduler) retryDelay(attempts int) time.Duration {
	limit := max(c.interval, cronRetryMaxDelay)
	d := c.interval
	for i := 1; i < attempts && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// passingFailure reports whether a cron's run was refused for a reason
// that may pass, so that its tick is worth trying again: by what its
// owner's request to create the run would be answered (api.Status), 429
// or 5xx (the server at its MaxRunsPerUser or MaxRuns bound, shutting
// down, the database's error, the scheduler's context ended), or an
// assistant changed as the run was made (409). Another 4xx is not: a
// deleted assistant or thread, a payload no longer valid, a busy thread
// under the reject strategy (that tick is skipped, as documented).
func passingFailure(err error) bool {
	if errors.Is(err, records.ErrStaleAssistant) {
		return true
	}
	st := api.Status(err)
	return st == http.StatusTooManyRequests || st >= 500
}

// fireCron creates and launches a cron's run, as its owner's request to
// create it would: through Server.newRun, with its checks, multitask
// strategy and webhook. The run is made once per tick
// (records.NewRun.CronTick): a tick tried again whose run an earlier try
// made (its answer lost) makes none, and that is no failure.
// It reports whether it made the run.
func (s *Server) fireCron(ctx context.Context, c records.Cron) (bool, error) {
	req, err := cronRunRequest(c.Payload, c.AssistantID, c.ThreadID, c.OnRunCompleted)
	if err != nil {
		return false, fmt.Errorf("its payload is not a run request: %w", err)
	}
	tick := dueTick(c)
	req.cronTick = &records.CronTick{CronID: c.ID, Tick: tick}
	r, err := http.NewRequestWithContext(auth.WithUser(ctx, c.Owner), http.MethodPost, "/runs/crons", nil)
	if err != nil {
		return false, err
	}
	lr, err := s.newRun(r, req, c.ThreadID)
	if errors.Is(err, records.ErrTickMade) {
		s.log.Info("server: a cron's tick had made its run already (an earlier try's answer was lost)", "cron_id", c.ID, "tick", tick, "attempt", c.RetryAttempts+1)
		return false, nil
	}
	if err != nil {
		return false, err
	}
	s.runs.launch(lr)
	return true, nil
}
