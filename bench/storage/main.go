// Command storage measures what the durable checkpoint savers store for a
// long conversation, and how long a checkpoint write takes.
//
// For each saver (SQLite, PostgreSQL) and each length (200 and 1,000 turns)
// it runs a ReAct-style thread through the graph runtime: every turn is a
// human message, an AI message with a tool call, a tool message of about
// 2 KB and an AI answer, one Invoke per turn with durability "sync". It
// prints one JSON line per saver and length:
//
//	{"backend","turns","checkpoints","stored_bytes","raw_bytes","whole_value_bytes","write_p50_ms","write_p99_ms"}
//
// whole_value_bytes is what a whole-value layout (LangGraph's savers, which
// store a changed channel whole at every checkpoint) would store for the
// same checkpoints, counted from the same puts: the peer of stored_bytes.
//
// raw_bytes is the JSON size of the final message list; stored_bytes is
// what the saver's tables hold for the thread: the sum of the stored sizes
// of every column of its rows (octet lengths and integer sizes in SQLite,
// pg_column_size in PostgreSQL, which measures after compression), indexes
// and free pages not counted. write_p50_ms and write_p99_ms are percentiles
// of the time Saver.Put takes. More detail goes to stderr.
//
// Usage:
//
//	go run ./bench/storage [--turns 200,1000] [--backends sqlite,postgres] [--postgres URL]
//
// PostgreSQL runs on a database the command creates and drops on the server
// at --postgres (default: $WEFT_DATABASE_URL, else
// postgres://postgres@127.0.0.1:5432/postgres); without a server it is
// skipped with a note on stderr.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/postgres"
	"github.com/weftlabs/weft/checkpoint/sqlite"
	"github.com/weftlabs/weft/graph"
	"github.com/weftlabs/weft/internal/pgtest"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// result is one output line.
type result struct {
	Backend     string `json:"backend"`
	Turns       int    `json:"turns"`
	Checkpoints int64  `json:"checkpoints"`
	StoredBytes int64  `json:"stored_bytes"`
	RawBytes    int64  `json:"raw_bytes"`
	// WholeValueBytes is what a whole-value layout (LangGraph's savers)
	// would store for the same checkpoints: the peer of stored_bytes.
	WholeValueBytes int64   `json:"whole_value_bytes"`
	WriteP50MS      float64 `json:"write_p50_ms"`
	WriteP99MS      float64 `json:"write_p99_ms"`
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("storage", flag.ContinueOnError)
	fs.SetOutput(stderr)
	turnsFlag := fs.String("turns", "200,1000", "comma-separated thread lengths, in turns")
	backendsFlag := fs.String("backends", "sqlite,postgres", "comma-separated savers to measure: sqlite, postgres")
	pgURL := fs.String("postgres", defaultPostgres(), "PostgreSQL server to create the benchmark database on")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var lengths []int
	for _, s := range strings.Split(*turnsFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fmt.Fprintf(stderr, "storage: --turns takes positive integers, got %q\n", s)
			return 2
		}
		lengths = append(lengths, n)
	}
	code := 0
	for _, backend := range strings.Split(*backendsFlag, ",") {
		backend = strings.TrimSpace(backend)
		for _, turns := range lengths {
			var (
				d       checkpoint.Driver
				cleanup func()
				err     error
			)
			switch backend {
			case "sqlite":
				d, cleanup, err = openSQLite(ctx)
			case "postgres":
				d, cleanup, err = openPostgres(ctx, *pgURL)
				if err != nil {
					fmt.Fprintf(stderr, "storage: skipping postgres: %v\n", err)
					continue
				}
			default:
				fmt.Fprintf(stderr, "storage: unknown backend %q (known: sqlite, postgres)\n", backend)
				return 2
			}
			if err != nil {
				fmt.Fprintf(stderr, "storage: %s: %v\n", backend, err)
				return 1
			}
			res, err := measure(ctx, backend, d, turns, stderr)
			cleanup()
			if err != nil {
				fmt.Fprintf(stderr, "storage: %s, %d turns: %v\n", backend, turns, err)
				code = 1
				continue
			}
			line, _ := json.Marshal(res)
			fmt.Fprintln(stdout, string(line))
		}
	}
	return code
}

func defaultPostgres() string {
	if u := os.Getenv("WEFT_DATABASE_URL"); u != "" {
		return u
	}
	return pgtest.DefaultURL
}

type statser interface {
	Stats(ctx context.Context, threadID string) (sqlite.Stats, error)
}

func openSQLite(ctx context.Context) (checkpoint.Driver, func(), error) {
	dir, err := os.MkdirTemp("", "weft-bench-storage-")
	if err != nil {
		return nil, nil, err
	}
	d, err := sqlite.Open(ctx, filepath.Join(dir, "weft.db"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return d, func() { d.Close(); os.RemoveAll(dir) }, nil
}

// openPostgres creates a database for the run on the server at admin.
func openPostgres(ctx context.Context, admin string) (checkpoint.Driver, func(), error) {
	conn, err := pgtest.Connect(ctx, admin)
	if err != nil {
		return nil, nil, err
	}
	defer conn.Close(ctx)
	var b [6]byte
	rand.Read(b[:])
	name := "weft_bench_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return nil, nil, err
	}
	drop := func() {
		c, err := pgtest.Connect(context.Background(), admin)
		if err == nil {
			c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			c.Close(context.Background())
		}
	}
	u, err := url.Parse(admin)
	if err != nil {
		drop()
		return nil, nil, err
	}
	u.Path = "/" + name
	d, err := postgres.Open(ctx, u.String())
	if err != nil {
		drop()
		return nil, nil, err
	}
	return d, func() { d.Close(); drop() }, nil
}

// connect opens a connection without prepared statements, so the command
// also runs through PgBouncer in transaction mode.
// timed measures the time of every Put, and counts what a whole-value
// layout (LangGraph's savers: every changed channel stored whole at each
// checkpoint) would store for the same puts.
type timed struct {
	checkpoint.Driver
	mu  sync.Mutex
	put []time.Duration
	// whole is the bytes a whole-value layout stores; full tracks each
	// channel's current JSON length and item count to size appended values.
	whole int64
	full  map[string][2]int64
}

func (t *timed) countWhole(blobs []checkpoint.Blob) {
	if t.full == nil {
		t.full = map[string][2]int64{}
	}
	for _, b := range blobs {
		switch {
		case b.Empty:
			t.full[b.Channel] = [2]int64{0, 0}
		case b.Value != nil:
			n := int64(-1)
			var items []json.RawMessage
			if json.Unmarshal(b.Value, &items) == nil {
				n = int64(len(items))
			}
			t.full[b.Channel] = [2]int64{int64(len(b.Value)), n}
		default:
			prev := t.full[b.Channel]
			size, n := prev[0], prev[1]
			if size == 0 || n < 0 {
				size, n = 2, 0
			}
			for _, it := range b.Appended {
				if n > 0 {
					size++
				}
				size += int64(len(it))
				n++
			}
			t.full[b.Channel] = [2]int64{size, n}
		}
		t.whole += t.full[b.Channel][0]
	}
}

func (t *timed) Put(ctx context.Context, cfg checkpoint.Config, cp *checkpoint.Checkpoint, meta checkpoint.Metadata, blobs []checkpoint.Blob) (checkpoint.Config, error) {
	start := time.Now()
	out, err := t.Driver.Put(ctx, cfg, cp, meta, blobs)
	d := time.Since(start)
	t.mu.Lock()
	t.put = append(t.put, d)
	t.countWhole(blobs)
	t.mu.Unlock()
	return out, err
}

func measure(ctx context.Context, backend string, d checkpoint.Driver, turns int, stderr io.Writer) (result, error) {
	td := &timed{Driver: d}
	g, err := newAgent(checkpoint.New(td))
	if err != nil {
		return result{}, err
	}
	thread := fmt.Sprintf("bench-%s-%d", backend, turns)
	opts := graph.RunOptions{ThreadID: thread, Durability: graph.DurabilitySync}
	start := time.Now()
	var st graph.State
	for turn := range turns {
		st, err = g.Invoke(ctx, messages.Write(Message{Role: "human", Content: fmt.Sprintf("Turn %d: what is the status of order %d, and when will it ship?", turn, 10000+turn)}), opts)
		if err != nil {
			return result{}, fmt.Errorf("turn %d: %w", turn, err)
		}
	}
	elapsed := time.Since(start)
	final := messages.Get(st)
	if len(final) != 4*turns {
		return result{}, fmt.Errorf("the thread has %d messages after %d turns; want %d", len(final), turns, 4*turns)
	}
	raw, err := json.Marshal(final)
	if err != nil {
		return result{}, err
	}
	stats, err := d.(statser).Stats(ctx, thread)
	if err != nil {
		return result{}, err
	}
	res := result{
		Backend:         backend,
		Turns:           turns,
		Checkpoints:     stats.Checkpoints,
		StoredBytes:     stats.Bytes + stats.ThreadIDBytes,
		RawBytes:        int64(len(raw)),
		WholeValueBytes: td.whole,
		WriteP50MS:      percentile(td.put, 0.50),
		WriteP99MS:      percentile(td.put, 0.99),
	}
	fmt.Fprintf(stderr, "storage: %s %d turns: %.2fx raw; rows: %d checkpoints, %d blobs, %d logs, %d chunks, %d writes; %d puts, max %.2f ms; %.1f s in all\n",
		backend, turns, float64(res.StoredBytes)/float64(res.RawBytes), stats.Checkpoints, stats.Blobs, stats.Logs, stats.Chunks, stats.Writes,
		len(td.put), percentile(td.put, 1), elapsed.Seconds())
	tb, _ := json.Marshal(stats.TableBytes)
	fmt.Fprintf(stderr, "storage: %s %d turns: bytes by table (thread id column excluded, %d bytes): %s\n", backend, turns, stats.ThreadIDBytes, tb)
	return res, nil
}

func percentile(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	i = max(0, min(i, len(s)-1))
	return math.Round(float64(s[i].Microseconds())) / 1000
}

// ---------------------------------------------------------------- the agent

// Message is a chat message shaped like LangChain's.
type Message struct {
	ID         string     `json:"id,omitempty"`
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Name       string     `json:"name,omitempty"`
}

// ToolCall is a model's request to run a tool.
type ToolCall struct {
	ID   string         `json:"id"`
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
}

// MessageID implements graph.MessageLike.
func (m Message) MessageID() string { return m.ID }

// WithMessageID implements graph.MessageLike.
func (m Message) WithMessageID(id string) Message { m.ID = id; return m }

var messages = graph.Messages[Message]("messages")

// newAgent builds START -> agent -> (tools -> agent)* -> END with a scripted
// model: a human message gets a tool call, a tool result gets an answer.
func newAgent(saver *checkpoint.Saver) (*graph.Graph, error) {
	rnd := mrand.New(mrand.NewPCG(7, 11))
	agent := func(ctx context.Context, s graph.State) (graph.Update, error) {
		msgs := messages.Get(s)
		last := msgs[len(msgs)-1]
		n := len(msgs)
		if last.Role == "human" {
			return messages.Write(Message{
				ID:      fmt.Sprintf("ai-%d", n),
				Role:    "ai",
				Content: "Let me look that order up.",
				ToolCalls: []ToolCall{{
					ID:   fmt.Sprintf("call-%d", n),
					Name: "lookup_order",
					Args: map[string]any{"order_id": 10000 + n/4, "fields": []string{"status", "items", "shipping"}},
				}},
			}), nil
		}
		return messages.Write(Message{
			ID:   fmt.Sprintf("ai-%d", n),
			Role: "ai",
			Content: fmt.Sprintf("Order %d is packed and ships on day %d by ground freight. It holds %d items; the tracking number will be sent by email once the carrier scans the parcel. Anything else I can help with?",
				10000+n/4, 1+n%28, 1+n%9),
		}), nil
	}
	tools := func(ctx context.Context, s graph.State) (graph.Update, error) {
		msgs := messages.Get(s)
		call := msgs[len(msgs)-1].ToolCalls[0]
		return messages.Write(Message{
			ID:         "tool-" + call.ID,
			Role:       "tool",
			Name:       call.Name,
			ToolCallID: call.ID,
			Content:    toolOutput(rnd, 2048),
		}), nil
	}
	route := func(ctx context.Context, s graph.State) (graph.Route, error) {
		msgs := messages.Get(s)
		if len(msgs[len(msgs)-1].ToolCalls) > 0 {
			return graph.To("tools"), nil
		}
		return graph.To(graph.END), nil
	}
	return graph.New(messages).
		AddNode("agent", agent).
		AddNode("tools", tools).
		AddEdge(graph.START, "agent").
		AddConditionalEdges("agent", route).
		AddEdge("tools", "agent").
		Compile(graph.CompileOptions{Checkpointer: saver})
}

var words = strings.Fields(`order status shipped packed warehouse carrier parcel tracking delivery address
customer item quantity price total discount invoice payment pending confirmed returned refund weight
dimensions box pallet route depot scan label express ground freight region north south east west
city street postal code estimate window morning afternoon evening signature required contact phone
email note fragile handling priority standard backorder supplier batch lot serial warranty`)

// toolOutput makes about n bytes of JSON-ish tool output: records of words
// and numbers, varied the way real tool results are.
func toolOutput(rnd *mrand.Rand, n int) string {
	var b strings.Builder
	b.WriteString(`{"results":[`)
	for i := 0; b.Len() < n-40; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"sku":"%c%c-%05d","name":"%s %s","qty":%d,"price":%d.%02d,"note":"%s %s %s %s"}`,
			'A'+rune(rnd.IntN(26)), 'A'+rune(rnd.IntN(26)), rnd.IntN(100000),
			words[rnd.IntN(len(words))], words[rnd.IntN(len(words))], 1+rnd.IntN(20), rnd.IntN(500), rnd.IntN(100),
			words[rnd.IntN(len(words))], words[rnd.IntN(len(words))], words[rnd.IntN(len(words))], words[rnd.IntN(len(words))])
	}
	b.WriteString(`]}`)
	return b.String()
}
