package server

import (
	"context"
	"time"

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

// CronRetry returns owner's cron id's next tick and, while that is a
// failed tick's retry, the tick and how many times its run failed.
func CronRetry(s *Server, owner, id string) (next, tick *time.Time, attempts int, err error) {
	c, err := s.rec.GetCron(context.Background(), owner, id)
	return c.NextRunDate, c.RetryTick, c.RetryAttempts, err
}

// ThreadStreamsOpen counts the thread streams (GET /threads/{id}/stream)
// s is serving; a stream counts until its followers stopped.
func ThreadStreamsOpen(s *Server) int { return s.runs.threads.open() }
