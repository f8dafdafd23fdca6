package server_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/weftlabs/weft/internal/redistest"
	"github.com/weftlabs/weft/server"
)

// redisProxy forwards TCP connections to the test Redis until it is cut:
// Redis going away, as the processes behind it see it.
type redisProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	cut   bool
}

func newRedisProxy(t *testing.T) *redisProxy {
	t.Helper()
	opts, err := redis.ParseURL(redistest.ServerURL())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &redisProxy{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", opts.Addr)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			if p.cut {
				c.Close()
				up.Close()
				p.mu.Unlock()
				continue
			}
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
	t.Cleanup(p.Cut)
	return p
}

// Cut closes the proxy and every connection through it.
func (p *redisProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	p.ln.Close()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// client is a Redis client through the proxy, as weft serve makes one.
func (p *redisProxy) client(t *testing.T) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{
		Addr: p.ln.Addr().String(), DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
		ContextTimeoutEnabled: true, MaxRetries: -1,
	})
	t.Cleanup(func() { c.Close() })
	return c
}

// newRedisBroker makes a broker over the test Redis, under prefix.
func newRedisBroker(t *testing.T, c redis.UniversalClient, prefix string, o *server.RedisBrokerOptions) server.Broker {
	t.Helper()
	opts := server.RedisBrokerOptions{Prefix: prefix, Block: 200 * time.Millisecond, Logger: testLogger(t)}
	if o != nil {
		opts = *o
		opts.Prefix, opts.Logger = prefix, testLogger(t)
	}
	return server.NewRedisBroker(c, &opts)
}

// readAll reads a subscription to its end, returning the ids and names
// read and the error it ended with.
func readAll(t *testing.T, b server.Broker, run string, after int) ([]int, []string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	evs, ok := b.Subscribe(ctx, run, after)
	if !ok {
		t.Fatalf("no stream for %s", run)
	}
	var ids []int
	var names []string
	for batch, err := range evs {
		if err != nil {
			return ids, names, err
		}
		for _, e := range batch {
			ids = append(ids, e.ID)
			names = append(names, e.Name)
		}
	}
	return ids, names, nil
}

func publish(t *testing.T, b server.Broker, run string, names ...string) {
	t.Helper()
	for _, n := range names {
		if err := b.Publish(run, server.Event{Name: n, Data: []byte(`{"n":"` + n + `"}`)}); err != nil {
			t.Fatal(err)
		}
	}
}

// Two brokers on one Redis are two processes: what one publishes the
// other reads, from the start, after an event id, or from now on.
func TestRedisBroker(t *testing.T) {
	c, prefix := redistest.New(t)
	a := newRedisBroker(t, c, prefix, nil)
	b := newRedisBroker(t, c, prefix, nil)
	if _, ok := b.Subscribe(context.Background(), "r", -1); ok {
		t.Fatal("a stream before it was opened")
	}
	if err := a.Open("r"); err != nil {
		t.Fatal(err)
	}
	if err := a.Open("r"); err == nil {
		t.Error("a stream opened twice in one process")
	}
	live, ok := b.Subscribe(context.Background(), "r", server.FromNow)
	if !ok {
		t.Fatal("an open stream without events is not found")
	}
	got := make(chan []int)
	go func() {
		var ids []int
		for batch, err := range live {
			if err != nil {
				t.Errorf("live reader: %v", err)
				break
			}
			for _, e := range batch {
				ids = append(ids, e.ID)
			}
		}
		got <- ids
	}()
	publish(t, a, "r", "metadata", "values", "values", "updates")
	if err := a.Close("r", time.Minute); err != nil {
		t.Fatal(err)
	}
	if ids := <-got; !cmp.Equal(ids, []int{0, 1, 2, 3}) {
		// From now is when it subscribed, whenever it starts reading.
		t.Errorf("live reader read %v; want [0 1 2 3]", ids)
	}
	ids, names, err := readAll(t, b, "r", -1)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{0, 1, 2, 3}, ids); diff != "" {
		t.Errorf("ids from the start (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"metadata", "values", "values", "updates"}, names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	if ids, _, err := readAll(t, b, "r", 1); err != nil || !cmp.Equal(ids, []int{2, 3}) {
		t.Errorf("after event 1: %v, %v; want [2 3]", ids, err)
	}
	if ids, _, err := readAll(t, b, "r", 3); err != nil || len(ids) != 0 {
		t.Errorf("after the last event: %v, %v; want none", ids, err)
	}
	// A Last-Event-ID past the end of an ended stream: the end, not a
	// wait for events that never come.
	if ids, _, err := readAll(t, b, "r", 99); err != nil || len(ids) != 0 {
		t.Errorf("after an id past the end: %v, %v; want none", ids, err)
	}
}

// A run taken over by another process goes on numbering its events after
// the last one kept, whether its first process died or stopped.
func TestRedisBrokerTakeover(t *testing.T) {
	c, prefix := redistest.New(t)
	first := newRedisBroker(t, c, prefix, nil)
	if err := first.Open("died"); err != nil {
		t.Fatal(err)
	}
	publish(t, first, "died", "metadata", "values")
	if err := first.Open("stopped"); err != nil {
		t.Fatal(err)
	}
	publish(t, first, "stopped", "metadata", "values")
	if err := first.Close("stopped", time.Minute); err != nil {
		t.Fatal(err)
	}
	next := newRedisBroker(t, c, prefix, nil)
	for _, run := range []string{"died", "stopped"} {
		if err := next.Open(run); err != nil {
			t.Fatal(err)
		}
		publish(t, next, run, "metadata", "values")
		if err := next.Close(run, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if ids, _, err := readAll(t, first, "died", -1); err != nil || !cmp.Equal(ids, []int{0, 1, 2, 3}) {
		t.Errorf("died: %v, %v; want [0 1 2 3]", ids, err)
	}
	// 2 is the first process's end, never sent.
	if ids, _, err := readAll(t, first, "stopped", -1); err != nil || !cmp.Equal(ids, []int{0, 1, 3, 4}) {
		t.Errorf("stopped: %v, %v; want [0 1 3 4]", ids, err)
	}
	if ids, _, err := readAll(t, first, "stopped", 1); err != nil || !cmp.Equal(ids, []int{3, 4}) {
		t.Errorf("stopped after 1: %v, %v; want [3 4]", ids, err)
	}
}

// A run's stream keeps about MaxStreamBytes: a reader resuming before
// what was trimmed is told so. The streams of ended runs keep about
// MaxRetainedBytes between them: the oldest go.
func TestRedisBrokerBounds(t *testing.T) {
	c, prefix := redistest.New(t)
	b := newRedisBroker(t, c, prefix, &server.RedisBrokerOptions{MaxStreamBytes: 1000, MaxRetainedBytes: 2500})
	if err := b.Open("big"); err != nil {
		t.Fatal(err)
	}
	for range 1000 {
		publish(t, b, "big", "values") // 6 + 14 bytes
	}
	if err := b.Close("big", time.Minute); err != nil {
		t.Fatal(err)
	}
	n, err := c.XLen(context.Background(), prefix+"run:big").Result()
	if err != nil {
		t.Fatal(err)
	}
	if n >= 1000 || n < 50 {
		t.Errorf("%d events kept of 1000 of 20 bytes with a bound of 1000 bytes; want about 50 (approximate trimming keeps some more)", n)
	}
	if _, _, err := readAll(t, b, "big", 0); !errors.Is(err, server.ErrStreamTrimmed) {
		t.Errorf("resuming after a trimmed event: %v; want ErrStreamTrimmed", err)
	}
	if ids, _, err := readAll(t, b, "big", -1); err != nil || ids[len(ids)-1] != 999 {
		t.Errorf("reading from the first kept: last %v, %v; want 999", ids[len(ids)-1:], err)
	}
	// "big" holds 1000 bytes, as does each next run: past 2500 bytes the
	// oldest go.
	for _, run := range []string{"r1", "r2", "r3"} {
		if err := b.Open(run); err != nil {
			t.Fatal(err)
		}
		for range 50 {
			publish(t, b, run, "values")
		}
		if err := b.Close(run, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	for run, want := range map[string]bool{"big": false, "r1": false, "r2": true, "r3": true} {
		if _, ok := b.Subscribe(context.Background(), run, -1); ok != want {
			t.Errorf("stream %s kept = %v, want %v", run, ok, want)
		}
	}
}

// Redis going away: a reader is told, at once rather than never, and a
// run's publishes fail without holding it up.
func TestRedisBrokerDown(t *testing.T) {
	c, prefix := redistest.New(t)
	p := newRedisProxy(t)
	a := newRedisBroker(t, c, prefix, nil)
	b := newRedisBroker(t, p.client(t), prefix, nil)
	if err := a.Open("r"); err != nil {
		t.Fatal(err)
	}
	publish(t, a, "r", "metadata")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	evs, ok := b.Subscribe(ctx, "r", -1)
	if !ok {
		t.Fatal("no stream")
	}
	var ids []int
	var end error
	for batch, err := range evs {
		if err != nil {
			end = err
			break
		}
		for _, e := range batch {
			ids = append(ids, e.ID)
		}
		p.Cut()
	}
	if !errors.Is(end, server.ErrBrokerUnavailable) || ctx.Err() != nil {
		t.Errorf("reading while Redis is gone ended with %v; want ErrBrokerUnavailable", end)
	}
	if !cmp.Equal(ids, []int{0}) {
		t.Errorf("read %v before Redis went; want [0]", ids)
	}
	if err := b.Open("s"); err != nil {
		t.Fatalf("Open without Redis: %v; want nil (logged): the run goes on", err)
	}
	if err := b.Publish("s", server.Event{Name: "values", Data: []byte("{}")}); !errors.Is(err, server.ErrBrokerUnavailable) {
		t.Errorf("Publish without Redis: %v; want ErrBrokerUnavailable", err)
	}
	// The next publishes leave Redis alone for a while: a Redis that
	// hangs does not cost the run a timeout per event.
	if err := b.Publish("s", server.Event{Name: "values", Data: []byte("{}")}); !errors.Is(err, server.ErrBrokerUnavailable) || !strings.Contains(err.Error(), "skipped") {
		t.Errorf("Publish right after a failed one: %v; want ErrBrokerUnavailable, skipped", err)
	}
	if err := b.Close("s", 0); !errors.Is(err, server.ErrBrokerUnavailable) {
		t.Errorf("Close without Redis: %v; want ErrBrokerUnavailable", err)
	}
	evs, ok = b.Subscribe(ctx, "r", -1)
	if !ok {
		t.Fatal("Subscribe without Redis: no stream; want one that tells the failure")
	}
	for _, err := range evs {
		if !errors.Is(err, server.ErrBrokerUnavailable) || !strings.Contains(err.Error(), "finding the stream") {
			t.Errorf("Subscribe without Redis yields %v", err)
		}
	}
}
