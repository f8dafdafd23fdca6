package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/weftlabs/weft/server/internal/api"
)

// WebhookOptions configure the webhooks runs ask for: a run request's
// "webhook", a URL the server POSTs the run to once it ends, as LangGraph
// Platform does.
type WebhookOptions struct {
	// Client sends them; nil means one that does not follow redirects.
	// Each attempt has DefaultWebhookTimeout, whichever client sends it.
	Client *http.Client
	// AllowedHosts, when set, are the only hosts a webhook may name: a
	// host name ("hooks.example.com"), or "*." and a domain for its
	// subdomains ("*.example.com"). A run naming another host is refused
	// with a 400 naming webhook. Empty allows any host: set it on a server
	// that users you do not trust reach, whose webhooks could otherwise
	// make it call addresses of its own network.
	AllowedHosts []string
	// Attempts bounds the tries of one webhook (0: 3). A try that fails
	// to connect, times out, or is answered 429 or 5xx is made again;
	// another answer ends it.
	Attempts int
	// Backoff is the wait before the second try, doubled before each
	// later one (0: 1 s).
	Backoff time.Duration
	// Disabled refuses every run that names a webhook (400), rather than
	// running it without calling the webhook.
	Disabled bool
}

// DefaultWebhookTimeout bounds one attempt of a webhook's call.
const DefaultWebhookTimeout = 10 * time.Second

// maxWebhookURL bounds the length of a webhook's URL.
const maxWebhookURL = 2048

// webhooks sends the webhooks of the runs this process ends.
type webhooks struct {
	opts   WebhookOptions
	client *http.Client
	log    *slog.Logger
	wg     sync.WaitGroup
	// stop ends the waits between attempts at shutdown; stopped (under
	// mu) refuses webhooks sent after it, so that none is added to wg
	// while shutdown waits for it.
	stop    chan struct{}
	mu      sync.Mutex
	stopped bool
}

func newWebhooks(opts *WebhookOptions, log *slog.Logger) *webhooks {
	w := &webhooks{log: log, stop: make(chan struct{})}
	if opts != nil {
		w.opts = *opts
	}
	if w.opts.Attempts <= 0 {
		w.opts.Attempts = 3
	}
	if w.opts.Backoff <= 0 {
		w.opts.Backoff = time.Second
	}
	w.client = w.opts.Client
	if w.client == nil {
		w.client = &http.Client{
			// A redirect could lead the server where AllowedHosts does not
			// let the webhook go.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	return w
}

// check refuses a webhook URL the server will not call: not an absolute
// http or https URL, too long, or to a host AllowedHosts does not allow.
func (w *webhooks) check(raw string) error {
	if raw == "" {
		return nil
	}
	bad := func(why string) error {
		return api.Invalid(api.Field("Invalid webhook: "+why, "webhook"))
	}
	if w.opts.Disabled {
		return bad("this server does not call webhooks")
	}
	if len(raw) > maxWebhookURL {
		return bad(fmt.Sprintf("the URL has %d characters; at most %d", len(raw), maxWebhookURL))
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return bad("want an absolute http or https URL without user information, like https://example.com/hook")
	}
	if len(w.opts.AllowedHosts) > 0 && !hostAllowed(u.Hostname(), w.opts.AllowedHosts) {
		return bad(fmt.Sprintf("host %q is not among the hosts this server calls", u.Hostname()))
	}
	return nil
}

// hostAllowed reports whether host is one of allowed, or a subdomain of
// an allowed "*.domain".
func hostAllowed(host string, allowed []string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, a := range allowed {
		a = strings.ToLower(a)
		if domain, ok := strings.CutPrefix(a, "*."); ok {
			if strings.HasSuffix(host, "."+domain) {
				return true
			}
		} else if host == a {
			return true
		}
	}
	return false
}

// webhookJSON is what a webhook receives: the run as GET
// /threads/{id}/runs/{run_id} shows it, with its final status, then its
// last values, or its error.
type webhookJSON struct {
	runJSON
	Values        json.RawMessage `json:"values,omitempty"`
	Error         json.RawMessage `json:"error,omitempty"`
	WebhookSentAt apiTime         `json:"webhook_sent_at"`
}

// send POSTs an ended run to its webhook in the background, trying again
// as WebhookOptions says; every failure is logged, with the run and the
// webhook's host and path (never its query, which may hold a token).
func (w *webhooks) send(lr *liveRun, status string, values json.RawMessage, runErr error) {
	raw := lr.kw.Webhook
	u, err := url.Parse(raw)
	if err != nil {
		w.log.Error("server: a run's webhook is not a URL; not called", "run_id", lr.rec.ID, "err", err)
		return
	}
	where := u.Scheme + "://" + u.Host + u.Path
	run := runOut(lr.rec)
	run.Status = status
	now := time.Now()
	run.UpdatedAt = apiTime(now)
	msg := webhookJSON{runJSON: run, WebhookSentAt: apiTime(now)}
	if runErr != nil && status == "error" {
		msg.Error = errorEvent(runErr)
	} else if len(values) > 0 {
		msg.Values = values
	}
	body, err := json.Marshal(msg)
	if err != nil {
		w.log.Error("server: encoding a run's webhook; not called", "run_id", lr.rec.ID, "webhook", where, "err", err)
		return
	}
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		w.log.Error("server: a run ended after the shutdown's webhooks were sent; its webhook is not called", "run_id", lr.rec.ID, "webhook", where)
		return
	}
	w.wg.Add(1)
	w.mu.Unlock()
	go func() {
		defer w.wg.Done()
		w.deliver(raw, where, lr.rec.ID, body)
	}()
}

// deliver makes the attempts of one webhook.
func (w *webhooks) deliver(raw, where, runID string, body []byte) {
	wait := w.opts.Backoff
	for attempt := 1; ; attempt++ {
		status, err := w.post(raw, body)
		if err == nil && status < 300 {
			return
		}
		again := err != nil || status == http.StatusTooManyRequests || status >= 500
		why := any(err)
		if err == nil {
			why = fmt.Sprintf("answered %d", status)
		}
		if !again || attempt == w.opts.Attempts {
			w.log.Error("server: a run's webhook failed; giving up", "run_id", runID, "webhook", where, "attempts", attempt, "err", why)
			return
		}
		w.log.Warn("server: a run's webhook failed; trying again", "run_id", runID, "webhook", where, "attempt", attempt, "in", wait, "err", why)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-w.stop:
			t.Stop()
			w.log.Error("server: a run's webhook failed and the server shuts down; giving up", "run_id", runID, "webhook", where, "attempts", attempt)
			return
		}
		wait *= 2
	}
}

// post makes one attempt, and returns the status of the answer.
func (w *webhooks) post(raw string, body []byte) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultWebhookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, raw, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := w.client.Do(req)
	if err != nil {
		return 0, err
	}
	// Read a little of the answer, so the connection can be used again.
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	return res.StatusCode, nil
}

// shutdown stops the waits between attempts and waits, until ctx ends,
// for the webhooks being sent.
func (w *webhooks) shutdown(ctx context.Context) error {
	w.mu.Lock()
	if !w.stopped {
		w.stopped = true
		close(w.stop)
	}
	w.mu.Unlock()
	done := make(chan struct{})
	go func() {
		w.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return errors.New("server: webhooks still being sent at the shutdown's deadline")
	}
}
