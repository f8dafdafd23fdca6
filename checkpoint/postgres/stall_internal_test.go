package postgres

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weftlabs/weft/checkpoint/internal/sqlstore"
	"github.com/weftlabs/weft/internal/pgtest"
)

// freezer forwards TCP connections to a server until frozen; then it
// passes nothing on, in either direction, as a network that stopped
// answering.
type freezer struct {
	ln     net.Listener
	frozen atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
}

func newFreezer(t *testing.T, target string) *freezer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &freezer{ln: ln}
	t.Cleanup(f.cut)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			f.mu.Lock()
			f.conns = append(f.conns, c, s)
			f.mu.Unlock()
			go f.pipe(c, s)
			go f.pipe(s, c)
		}
	}()
	return f
}

// cut closes the listener and every connection.
func (f *freezer) cut() {
	f.ln.Close()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.conns {
		c.Close()
	}
}

func (f *freezer) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if err != nil {
			dst.Close()
			return
		}
		if f.frozen.Load() {
			// Swallow everything from now on.
			io.Copy(io.Discard, src)
			return
		}
		if _, err := dst.Write(buf[:n]); err != nil {
			return
		}
	}
}

// A write whose work fails while the connection stops answering returns:
// its rollback is bounded, though the caller's context has no deadline,
// and the connection is dropped.
func TestRollbackOnStalledConnectionIsBounded(t *testing.T) {
	ctx := context.Background()
	dbURL := pgtest.NewDatabase(t, "weft_test_")
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	f := newFreezer(t, u.Host)
	u.Host = f.ln.Addr().String()
	d, err := Open(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		// The network comes back broken, so the pool's other connections
		// close at once.
		f.cut()
		d.Close()
	}()
	db := pgDB{pool: d.pool, what: "test", cleanup: 100 * time.Millisecond}
	failure := errors.New("test: the write's work failed")
	done := make(chan error, 1)
	go func() {
		done <- db.Write(ctx, []string{"t"}, func(tx sqlstore.Tx) error {
			// A statement begins the transaction, which must then be
			// rolled back.
			if _, err := tx.Exec(ctx, "SELECT 1"); err != nil {
				return err
			}
			f.frozen.Store(true)
			return failure
		})
	}()
	select {
	case err := <-done:
		if !errors.Is(err, failure) {
			t.Fatalf("Write = %v; want the work's error", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Write did not return: its rollback waits for a connection that stopped answering")
	}
}
