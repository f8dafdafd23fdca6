package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/pflag"

	"github.com/weftlabs/weft/server"
	"github.com/weftlabs/weft/server/apikey"
	"github.com/weftlabs/weft/server/ratelimit"
	"github.com/weftlabs/weft/telemetry"
)

// The environment variables of weft serve's operations.
const (
	// apiKeysFileEnv names a keys file, as --api-keys does.
	apiKeysFileEnv = "WEFT_API_KEYS_FILE"
	// redisEnv is the Redis that several weft serve processes share runs'
	// streams and rate limits through, as --redis says.
	redisEnv = "WEFT_REDIS_URL"
)

// opsConfig is what weft serve's users, limits and observability flags
// say.
type opsConfig struct {
	apiKeysFile string
	rateLimit   float64
	rateBurst   int
	maxBody     int64
	maxRuns     int
	maxUserRuns int
	logRequests bool
	redisURL    string
	redisPrefix string
	// pprofAddr serves net/http/pprof on a listener of its own.
	pprofAddr string
	// webhookHosts are the hosts runs' webhooks may name; noWebhooks
	// refuses every webhook.
	webhookHosts []string
	noWebhooks   bool
}

func addOpsFlags(f *pflag.FlagSet, c *opsConfig) {
	f.StringVar(&c.apiKeysFile, "api-keys", "", "a YAML or JSON file of API keys, each the key of a user (default $"+apiKeysFileEnv+"); $"+apikey.EnvVar+" may list more as USER:KEY,...")
	f.Float64Var(&c.rateLimit, "rate-limit", 0, "requests a second each user (each client address without keys) may make on average; 0 sets no limit. Shared through Redis when $"+redisEnv+" is set")
	f.IntVar(&c.rateBurst, "rate-burst", 0, "requests a user may make at once before --rate-limit applies (default: one second's worth, at least 1)")
	f.Int64Var(&c.maxBody, "max-body-bytes", server.DefaultMaxBodyBytes, "the largest request body taken, in bytes")
	f.IntVar(&c.maxUserRuns, "max-runs-per-user", 0, "the most runs one user holds in this process at once, waiting or executing; more are answered 429 (0: no bound)")
	f.IntVar(&c.maxRuns, "max-runs", 0, "the most runs this process holds at once, waiting or executing; more are answered 503 (0: no bound; --workers bounds those executing)")
	f.StringVar(&c.redisURL, "redis", "", "a Redis, redis://[user:password@]host:port/db, that several weft serve processes on one PostgreSQL database share runs' streams (and --rate-limit) through (default $"+redisEnv+"; none: each process streams the runs it executes)")
	f.StringVar(&c.redisPrefix, "redis-prefix", server.DefaultBrokerPrefix, "the prefix of the keys of runs' streams in --redis: the processes serving one database share one")
	f.BoolVar(&c.logRequests, "log-requests", true, "log one line per request: method, route, status, duration, user, thread, run")
	f.StringSliceVar(&c.webhookHosts, "webhook-hosts", nil, "the only hosts a run's webhook may name (host names, or *.domain for its subdomains); default any host: set it when users you do not trust reach the server, whose webhooks could otherwise make it call your own network")
	f.BoolVar(&c.noWebhooks, "no-webhooks", false, "refuse runs that name a webhook (400) instead of calling it when they end")
	f.StringVar(&c.pprofAddr, "pprof", "", "serve Go's profiles (net/http/pprof, under /debug/pprof/) on this loopback address, e.g. 127.0.0.1:6060, apart from --addr; none by default")
}

// servePprof serves net/http/pprof on addr, a loopback address of its
// own, until the returned stop is called.
func servePprof(addr string, log *slog.Logger) (stop func(), err error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof %q: %w; expected HOST:PORT on loopback, e.g. 127.0.0.1:6060", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("--pprof %q: profiles show the process's memory and code; expected a loopback address, e.g. 127.0.0.1:6060", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	log.Info("weft serve: profiles served", "url", "http://"+ln.Addr().String()+"/debug/pprof/")
	return func() { _ = hs.Close() }, nil
}

// ErrInsecureAddr means --addr listens beyond loopback without
// authentication.
var ErrInsecureAddr = errors.New("refusing to serve beyond loopback without authentication")

// checkAddr refuses an address reachable from other machines when no
// API keys are configured, unless --insecure-no-auth accepts that.
func checkAddr(addr string, authOn, insecure bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w; expected HOST:PORT, e.g. %s", addr, err, defaultAddr)
	}
	if authOn || insecure || host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	where := host
	if where == "" {
		where = "every interface"
	}
	return fmt.Errorf("%w: --addr %s listens on %s and no API keys are configured, so anyone who reaches it could read and run every thread; configure keys (--api-keys FILE or $%s), listen on 127.0.0.1, or pass --insecure-no-auth to accept that",
		ErrInsecureAddr, addr, where, apikey.EnvVar)
}

// loadKeys reads the API keys of --api-keys (or $WEFT_API_KEYS_FILE) and
// $WEFT_API_KEYS; nil when there are none.
func loadKeys(file string, getenv func(string) string) (*apikey.Set, error) {
	if file == "" {
		file = getenv(apiKeysFileEnv)
	}
	var keys []apikey.Key
	if file != "" {
		k, err := apikey.Load(file)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k...)
	}
	if v := getenv(apikey.EnvVar); v != "" {
		k, err := apikey.ParseList(v, "$"+apikey.EnvVar)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k...)
	}
	if len(keys) == 0 {
		return nil, nil
	}
	return apikey.New(keys...)
}

// serveOps builds the server options of c's users, limits and
// observability: the options to merge, the Telemetry (to wrap models
// with), and what to close at the end.
func serveOps(ctx context.Context, c serveConfig, log *slog.Logger) (server.Options, *telemetry.Telemetry, func(), error) {
	var opts server.Options
	closers := []func(){}
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	fail := func(err error) (server.Options, *telemetry.Telemetry, func(), error) {
		closeAll()
		return server.Options{}, nil, nil, err
	}
	o := c.ops
	keys, err := loadKeys(o.apiKeysFile, os.Getenv)
	if err != nil {
		return fail(err)
	}
	if keys != nil && c.insecure {
		return fail(errors.New("--insecure-no-auth and API keys contradict each other: with keys every request needs one; drop one of them"))
	}
	if err := checkAddr(c.addr, keys != nil, c.insecure); err != nil {
		return fail(err)
	}
	if keys != nil {
		opts.Auth = keys
		log.Info("weft serve: API keys required", "keys", keys.Len(), "users", keys.Users())
	} else {
		log.Warn("weft serve: no API keys: every request acts for the same user; configure --api-keys or $" + apikey.EnvVar + " to keep users apart")
	}
	if o.maxBody <= 0 || o.maxRuns < 0 || o.maxUserRuns < 0 || o.rateLimit < 0 || o.rateBurst < 0 {
		return fail(fmt.Errorf("--max-body-bytes %d, --max-runs %d, --max-runs-per-user %d, --rate-limit %v, --rate-burst %d: want a positive body bound, and no negative limit", o.maxBody, o.maxRuns, o.maxUserRuns, o.rateLimit, o.rateBurst))
	}
	opts.MaxBodyBytes, opts.MaxRuns, opts.MaxRunsPerUser, opts.LogRequests = o.maxBody, o.maxRuns, o.maxUserRuns, o.logRequests
	opts.Webhooks = &server.WebhookOptions{AllowedHosts: o.webhookHosts, Disabled: o.noWebhooks}
	if keys != nil && len(o.webhookHosts) == 0 && !o.noWebhooks {
		log.Warn("weft serve: runs' webhooks may name any host, so a user can make the server POST to addresses of its own network; limit them with --webhook-hosts, or refuse them with --no-webhooks")
	}

	tel, err := telemetry.New(ctx, telemetry.Options{ServiceVersion: versionString(c.version), Logger: log})
	if err != nil {
		return fail(err)
	}
	closers = append(closers, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tel.Shutdown(sctx); err != nil {
			log.Warn("weft serve: spans not exported at exit are lost", "err", err)
		}
	})
	opts.Telemetry = tel

	redisURL, redisFrom := o.redisURL, "--redis"
	if redisURL == "" {
		redisURL, redisFrom = os.Getenv(redisEnv), "$"+redisEnv
	}
	if redisURL != "" {
		bc, err := openBrokerRedis(ctx, redisURL, redisFrom, log)
		if err != nil {
			return fail(err)
		}
		closers = append(closers, func() { _ = bc.Close() })
		opts.Broker = server.NewRedisBroker(bc, &server.RedisBrokerOptions{Prefix: o.redisPrefix, Logger: log})
		log.Info("weft serve: runs' streams shared through Redis: any process sharing the database and the Redis streams any run", "prefix", o.redisPrefix)
	}
	if o.rateLimit > 0 {
		burst := o.rateBurst
		if burst == 0 {
			burst = max(1, int(math.Ceil(o.rateLimit)))
		}
		lim := ratelimit.Limit{Rate: o.rateLimit, Burst: burst}
		if redisURL != "" {
			rc, err := openRedis(ctx, redisURL, redisFrom, log)
			if err != nil {
				return fail(err)
			}
			closers = append(closers, func() { _ = rc.Close() })
			r, err := ratelimit.NewRedis(rc, lim, ratelimit.RedisOptions{Logger: log, OnFallback: tel.RateLimitFallback})
			if err != nil {
				return fail(fmt.Errorf("--rate-limit: %w", err))
			}
			opts.RateLimit = r
			log.Info("weft serve: rate limits shared through Redis", "rate", o.rateLimit, "burst", burst)
		} else {
			m, err := ratelimit.NewMemory(lim)
			if err != nil {
				return fail(fmt.Errorf("--rate-limit: %w", err))
			}
			opts.RateLimit = m
			log.Info("weft serve: rate limits kept in this process", "rate", o.rateLimit, "burst", burst)
		}
	}
	return opts, tel, closeAll, nil
}

// openRedis connects to url with short timeouts: a rate limit check must
// never hold a request up for long. A Redis that does not answer now is
// reported, not fatal: the limiter decides in process until it answers.
func openRedis(ctx context.Context, url, from string, log *slog.Logger) (*redis.Client, error) {
	ro, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("%s: %w; expected redis://[user:password@]host:port/db", from, err)
	}
	ro.DialTimeout = time.Second
	ro.ReadTimeout = ratelimit.DefaultRedisTimeout
	ro.WriteTimeout = ratelimit.DefaultRedisTimeout
	ro.PoolTimeout = ratelimit.DefaultRedisTimeout
	ro.MaxRetries = -1 // the limiter falls back instead of retrying
	rc := redis.NewClient(ro)
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := rc.Ping(pctx).Err(); err != nil {
		log.Warn("weft serve: Redis does not answer; rate limits are kept in this process until it does", "err", err)
	}
	return rc, nil
}

// openBrokerRedis connects to the Redis that runs' streams go through:
// every call is bounded by its context (the broker's timeouts), a reader
// whose client went away stops at once, and each streaming request may
// hold a connection while it waits for events. A Redis that does not
// answer now is reported, not fatal: the runs execute, and their streams
// tell the failure.
func openBrokerRedis(ctx context.Context, url, from string, log *slog.Logger) (*redis.Client, error) {
	ro, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("%s: %w; expected redis://[user:password@]host:port/db", from, err)
	}
	ro.DialTimeout = 2 * time.Second
	ro.ContextTimeoutEnabled = true
	ro.PoolSize = max(ro.PoolSize, brokerPoolSize)
	ro.PoolTimeout = server.DefaultBrokerTimeout
	ro.MaxRetries = -1 // a stream tells the failure; its client resumes with Last-Event-ID
	rc := redis.NewClient(ro)
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := rc.Ping(pctx).Err(); err != nil {
		log.Warn("weft serve: Redis does not answer; runs execute, but streams through it fail until it does", "err", err)
	}
	return rc, nil
}

// brokerPoolSize bounds the connections to Redis of runs' streams: each
// stream waiting for events holds one.
const brokerPoolSize = 1000
