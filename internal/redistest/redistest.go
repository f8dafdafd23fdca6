// Package redistest gives tests a Redis key prefix of their own.
//
// Tests that need Redis call New: it connects to the test server and
// returns a client and a key prefix no other test uses, and deletes every
// key under that prefix when the test ends. Without a reachable server the
// test is skipped locally, but fails when the environment variable CI is
// "true": in CI those tests must run.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// EnvVar names the URL of the test server.
const EnvVar = "WEFT_TEST_REDIS_URL"

// DefaultURL is the server used when EnvVar is not set: the one every
// development and CI machine runs.
const DefaultURL = "redis://127.0.0.1:6379/0"

// ServerURL returns the URL of the test server.
func ServerURL() string {
	if u := os.Getenv(EnvVar); u != "" {
		return u
	}
	return DefaultURL
}

// New connects to the test server and returns a client and a unique key
// prefix ending in ':'. The keys under the prefix are deleted, and the
// client closed, when the test ends.
func New(t testing.TB) (*redis.Client, string) {
	t.Helper()
	opts, err := redis.ParseURL(ServerURL())
	if err != nil {
		t.Fatalf("%s must be a redis:// URL: %v", EnvVar, err)
	}
	opts.DialTimeout = 2 * time.Second
	opts.ReadTimeout = 2 * time.Second
	opts.WriteTimeout = 2 * time.Second
	c := redis.NewClient(opts)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		if os.Getenv("CI") == "true" {
			t.Fatalf("Redis is required in CI: cannot reach %s: %v", ServerURL(), err)
		}
		t.Skipf("no Redis server at %s (%v); set %s to run these tests", ServerURL(), err, EnvVar)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	prefix := "weft-test:" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() {
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var keys []string
		iter := c.Scan(ctx, 0, prefix+"*", 100).Iterator()
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if err := iter.Err(); err != nil {
			t.Errorf("listing the test's Redis keys under %s: %v", prefix, err)
			return
		}
		if len(keys) > 0 {
			if err := c.Del(ctx, keys...).Err(); err != nil {
				t.Errorf("deleting the test's Redis keys under %s: %v", prefix, err)
			}
		}
	})
	return c, prefix
}
