package server

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/weftlabs/weft/server/internal/api"
	"github.com/weftlabs/weft/server/internal/auth"
	"github.com/weftlabs/weft/server/internal/records"
)

// MakeCronDue sets owner's cron id's next tick to a moment ago, as if
// its time had come, for tests that cannot wait for a minute of the
// schedule to pass.
func MakeCronDue(s *Server, owner, id string) error {
	_, err := s.rec.UpdateCron(context.Background(), owner, id, func(c *records.Cron) error {
		t := time.Now().Add(-time.Second).UTC()
		c.NextRunDate = &t
		return nil
	})
	return err
}

// FireCronAnswerLost fires a tick of owner's cron id, due a moment ago,
// as s's scheduler would (claimed, then its run made through newRun and
// launched), but as though the answer of the run's write were lost: the
// run is committed, and the tick is dealt with as a tick whose run failed
// for a reason that may pass, so given back to be tried again. It
// returns the run's id.
func FireCronAnswerLost(s *Server, owner, id string) (string, error) {
	ctx := context.Background()
	c, err := s.rec.UpdateCron(ctx, owner, id, func(c *records.Cron) error {
		t := time.Now().Add(-time.Second).UTC()
		c.NextRunDate = &t
		return nil
	})
	if err != nil {
		return "", err
	}
	sched, loc, err := cronSchedule(c.Schedule, c.Timezone)
	if err != nil {
		return "", err
	}
	next := nextTick(sched, loc, time.Now())
	if claimed, err := s.rec.ClaimCronTick(ctx, c.ID, *c.NextRunDate, next); err != nil || !claimed {
		return "", fmt.Errorf("claiming the tick: %v, %v", claimed, err)
	}
	req, err := cronRunRequest(c.Payload, c.AssistantID, c.ThreadID, c.OnRunCompleted)
	if err != nil {
		return "", err
	}
	req.cronTick = &records.CronTick{CronID: c.ID, Tick: *c.NextRunDate}
	r, err := http.NewRequestWithContext(auth.WithUser(ctx, c.Owner), http.MethodPost, "/runs/crons", nil)
	if err != nil {
		return "", err
	}
	lr, err := s.newRun(r, req, c.ThreadID)
	if err != nil {
		return "", err
	}
	s.runs.launch(lr)
	lost := &api.StatusError{Status: http.StatusServiceUnavailable, Message: "the answer of the run's write was lost"}
	sc := &cronScheduler{s: s, interval: time.Millisecond, retries: DefaultCronRetries}
	sc.failed(ctx, c, next, lost)
	if after, err := s.rec.GetCron(ctx, owner, id); err != nil || after.RetryTick == nil {
		return "", fmt.Errorf("the tick was not given back: %+v, %v", after, err)
	}
	return lr.rec.ID, nil
}

// CronRetry returns owner's cron id's next tick and, while that is a
// failed tick's retry, the tick and how many times its run failed.
func CronRetry(s *Server, owner, id string) (next, tick *time.Time, attempts int, err error) {
	c, err := s.rec.GetCron(context.Background(), owner, id)
	return c.NextRunDate, c.RetryTick, c.RetryAttempts, err
}

// ThreadStreamsOpen counts the thread streams (GET /threads/{id}/stream)
// s is serving; a stream counts until its followers stopped.
func ThreadStreamsOpen(s *Server) int { return s.runs.threads.open() }
