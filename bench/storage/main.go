// Command storage measures what the durable checkpoint savers store for a
// long conversation, and how long a checkpoint write takes.
//
// For each saver (SQLite, PostgreSQL) and each length (200 and 1,000 turns)
// it runs a ReAct-style thread through the graph runtime: every turn is a
// human message, an AI message with a tool call, a tool message of about
// 2 KB and an AI answer, one Invoke per turn with durability "sync". The
// text is generated prose over a vocabulary of 20,000 words drawn with
// Zipf's law (as word frequencies in natural language follow it), from a
// fixed seed, so every run writes the same thread. It prints one JSON line
// per saver and length:
//
//	{"backend","turns","checkpoints","disk_bytes","stored_bytes","raw_bytes","whole_value_bytes","write_p50_ms","write_p99_ms"}
//
// disk_bytes is the database's size on disk, with indexes, page overhead
// and free space: the SQLite file after its WAL is checkpointed into it
// (PRAGMA wal_checkpoint(TRUNCATE)), or pg_total_relation_size (tables,
// TOAST and indexes) summed over weft's tables on PostgreSQL. Each run has
// a database of its own, so that is the thread's cost.
//
// whole_value_bytes is what a whole-value layout (LangGraph's savers, which
// store a changed channel whole at every checkpoint) would store for the
// same checkpoints, counted from the same puts: the peer of stored_bytes.
//
// raw_bytes is the JSON size of the final message list; stored_bytes is
// the part of disk_bytes that is column data: the sum of the stored sizes
// of every column of the thread's rows (octet lengths and integer sizes in
// SQLite, pg_column_size in PostgreSQL, which measures after compression). write_p50_ms and write_p99_ms are percentiles
// of the time Saver.Put takes. More detail goes to stderr.
//
// Usage:
//
//	go run ./bench/storage [--turns 200,1000] [--backends sqlite,postgres] [--postgres URL] [--keep]
//
// PostgreSQL runs on a database the command creates and drops on the server
// at --postgres (default: $WEFT_DATABASE_URL, else
// postgres://postgres@127.0.0.1:5432/postgres); without a server it is
// skipped with a note on stderr.
package main

import (
	"bytes"
	"compress/flate"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

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
	// DiskBytes is the database's size on disk: pages, indexes and all.
	DiskBytes   int64 `json:"disk_bytes"`
	StoredBytes int64 `json:"stored_bytes"`
	RawBytes    int64 `json:"raw_bytes"`
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
	keep := fs.Bool("keep", false, "leave each run's database (SQLite file or PostgreSQL database) in place, for inspection, and print where it is")
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
				disk    diskSizer
				cleanup func()
				err     error
			)
			switch backend {
			case "sqlite":
				d, disk, cleanup, err = openSQLite(ctx, *keep, stderr)
			case "postgres":
				d, disk, cleanup, err = openPostgres(ctx, *pgURL, *keep, stderr)
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
			res, err := measure(ctx, backend, d, disk, turns, stderr)
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

// diskSizer returns the size on disk of the database a run wrote, and
// where it goes: bytes by table and index.
type diskSizer func(ctx context.Context) (int64, map[string]int64, error)

func openSQLite(ctx context.Context, keep bool, stderr io.Writer) (checkpoint.Driver, diskSizer, func(), error) {
	dir, err := os.MkdirTemp("", "weft-bench-storage-")
	if err != nil {
		return nil, nil, nil, err
	}
	path := filepath.Join(dir, "weft.db")
	d, err := sqlite.Open(ctx, path)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, nil, err
	}
	cleanup := func() {
		d.Close()
		if keep {
			fmt.Fprintf(stderr, "storage: kept the database %s\n", path)
			return
		}
		os.RemoveAll(dir)
	}
	return d, func(ctx context.Context) (int64, map[string]int64, error) { return sqliteDiskBytes(ctx, path) }, cleanup, nil
}

// sqliteDiskBytes moves the WAL's pages into the database file, through a
// connection of its own, and returns the size of the file and what is left
// of the WAL (nothing, unless a reader held it), with the pages of each
// table and index (SQLite's dbstat table) and the unused part of them.
func sqliteDiskBytes(ctx context.Context, path string) (int64, map[string]int64, error) {
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return 0, nil, err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var busy, logPages, moved int64
	if err := db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logPages, &moved); err != nil {
		return 0, nil, fmt.Errorf("checkpointing the WAL: %w", err)
	}
	if busy != 0 {
		return 0, nil, fmt.Errorf("checkpointing the WAL: the database was busy")
	}
	by := map[string]int64{}
	rows, err := db.QueryContext(ctx, `SELECT name, SUM(pgsize), SUM(unused) FROM dbstat GROUP BY name`)
	if err != nil {
		return 0, nil, fmt.Errorf("reading dbstat: %w", err)
	}
	for rows.Next() {
		var name string
		var size, unused int64
		if err := rows.Scan(&name, &size, &unused); err != nil {
			rows.Close()
			return 0, nil, err
		}
		by[name] = size
		by["unused in pages"] += unused
	}
	if err := rows.Close(); err != nil {
		return 0, nil, err
	}
	var free, pageSize int64
	if err := db.QueryRowContext(ctx, "PRAGMA freelist_count").Scan(&free); err != nil {
		return 0, nil, err
	}
	if err := db.QueryRowContext(ctx, "PRAGMA page_size").Scan(&pageSize); err != nil {
		return 0, nil, err
	}
	by["free pages"] = free * pageSize
	var n int64
	for _, f := range []string{path, path + "-wal"} {
		fi, err := os.Stat(f)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, nil, err
		}
		n += fi.Size()
	}
	return n, by, nil
}

// postgresDiskBytes sums pg_total_relation_size (table, TOAST, indexes)
// over weft's tables in the database at dbURL. The breakdown names each
// table's heap, its TOAST table (with the TOAST index), each index, and
// the dead tuples the statistics collector counts, which only a vacuum
// makes reusable.
func postgresDiskBytes(ctx context.Context, dbURL string) (int64, map[string]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return 0, nil, err
	}
	defer conn.Close(context.Background())
	// The counters of the statistics collector lag the writes a little;
	// this makes the backend read them afresh.
	if _, err := conn.Exec(ctx, `SELECT pg_stat_clear_snapshot()`); err != nil {
		return 0, nil, err
	}
	rows, err := conn.Query(ctx, `SELECT c.relname, pg_total_relation_size(c.oid), pg_relation_size(c.oid),
		COALESCE(pg_total_relation_size(NULLIF(c.reltoastrelid, 0)), 0),
		COALESCE(s.n_live_tup, 0), COALESCE(s.n_dead_tup, 0),
		COALESCE((SELECT json_object_agg(i.relname, pg_relation_size(i.oid)) FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid WHERE x.indrelid = c.oid), '{}')
		FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
		LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
		WHERE c.relkind = 'r' AND c.relname LIKE 'weft\_%' AND ns.nspname = current_schema()`)
	if err != nil {
		return 0, nil, err
	}
	defer rows.Close()
	var n int64
	by := map[string]int64{}
	for rows.Next() {
		var name string
		var total, heap, toast, live, dead int64
		var indexes map[string]int64
		if err := rows.Scan(&name, &total, &heap, &toast, &live, &dead, &indexes); err != nil {
			return 0, nil, err
		}
		by[name] = heap
		by[name+" toast"] = toast
		for idx, size := range indexes {
			by[name+" index "+idx] = size
		}
		by[name+" live tuples"] = live
		by[name+" dead tuples"] = dead
		n += total
	}
	return n, by, rows.Err()
}

// openPostgres creates a database for the run on the server at admin.
func openPostgres(ctx context.Context, admin string, keep bool, stderr io.Writer) (checkpoint.Driver, diskSizer, func(), error) {
	dbURL, drop, err := pgtest.CreateDatabase(ctx, admin, "weft_bench_")
	if err != nil {
		return nil, nil, nil, err
	}
	d, err := postgres.Open(ctx, dbURL)
	if err != nil {
		drop()
		return nil, nil, nil, err
	}
	cleanup := func() {
		d.Close()
		if keep {
			fmt.Fprintf(stderr, "storage: kept the database %s\n", dbURL)
			return
		}
		drop()
	}
	return d, func(ctx context.Context) (int64, map[string]int64, error) { return postgresDiskBytes(ctx, dbURL) }, cleanup, nil
}

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

func measure(ctx context.Context, backend string, d checkpoint.Driver, disk diskSizer, turns int, stderr io.Writer) (result, error) {
	td := &timed{Driver: d}
	text := newProse(7)
	g, err := newAgent(checkpoint.New(td), text)
	if err != nil {
		return result{}, err
	}
	thread := fmt.Sprintf("bench-%s-%d", backend, turns)
	opts := graph.RunOptions{ThreadID: thread, Durability: graph.DurabilitySync}
	start := time.Now()
	var st graph.State
	for turn := range turns {
		st, err = g.Invoke(ctx, messages.Write(Message{Role: "human", Content: text.question()}), &opts)
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
	diskBytes, diskBy, err := disk(ctx)
	if err != nil {
		return result{}, fmt.Errorf("measuring the database on disk: %w", err)
	}
	res := result{
		Backend:         backend,
		Turns:           turns,
		Checkpoints:     stats.Checkpoints,
		DiskBytes:       diskBytes,
		StoredBytes:     stats.Bytes + stats.ThreadIDBytes,
		RawBytes:        int64(len(raw)),
		WholeValueBytes: td.whole,
		WriteP50MS:      percentile(td.put, 0.50),
		WriteP99MS:      percentile(td.put, 0.99),
	}
	fmt.Fprintf(stderr, "storage: %s %d turns: %.2fx raw on disk, %.2fx in columns; the raw JSON deflates %.2fx; rows: %d checkpoints, %d blobs, %d logs, %d chunks, %d writes; %d puts, max %.2f ms; %.1f s in all\n",
		backend, turns, float64(res.DiskBytes)/float64(res.RawBytes), float64(res.StoredBytes)/float64(res.RawBytes), deflateRatio(raw), stats.Checkpoints, stats.Blobs, stats.Logs, stats.Chunks, stats.Writes,
		len(td.put), percentile(td.put, 1), elapsed.Seconds())
	tb, _ := json.Marshal(stats.TableBytes)
	fmt.Fprintf(stderr, "storage: %s %d turns: bytes by table (thread id column excluded, %d bytes): %s\n", backend, turns, stats.ThreadIDBytes, tb)
	db, _ := json.Marshal(diskBy)
	fmt.Fprintf(stderr, "storage: %s %d turns: on disk (bytes, and tuple counts where named): %s\n", backend, turns, db)
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
func newAgent(saver *checkpoint.Saver, text *prose) (*graph.Graph, error) {
	agent := func(ctx context.Context, s graph.State) (graph.Update, error) {
		msgs := messages.Get(s)
		last := msgs[len(msgs)-1]
		n := len(msgs)
		if last.Role == "human" {
			return messages.Write(Message{
				ID:      fmt.Sprintf("ai-%d", n),
				Role:    "ai",
				Content: text.sentence(),
				ToolCalls: []ToolCall{{
					ID:   fmt.Sprintf("call-%d", n),
					Name: "lookup_order",
					Args: map[string]any{"order_id": 10000 + n/4, "fields": []string{"status", "items", "shipping"}},
				}},
			}), nil
		}
		return messages.Write(Message{
			ID:      fmt.Sprintf("ai-%d", n),
			Role:    "ai",
			Content: text.paragraph(2 + text.rnd.IntN(4)),
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
			Content:    text.toolOutput(2048),
		}), nil
	}
	route := func(ctx context.Context, s graph.State) (graph.Route, error) {
		msgs := messages.Get(s)
		if len(msgs[len(msgs)-1].ToolCalls) > 0 {
			return graph.To("tools"), nil
		}
		return graph.To(graph.END), nil
	}
	return graph.New(messages).AddNode(
		"agent", agent, nil).AddNode(

		"tools", tools, nil).
		AddEdge(graph.START, "agent").AddConditionalEdges(

		"agent", route, nil).
		AddEdge("tools", "agent").Compile(&graph.CompileOptions{Checkpointer: saver})

}

// ---------------------------------------------------------------- the text

// prose generates varied text, deterministically from its seed: words of a
// vocabulary of vocabSize made-up words, drawn by Zipf's law (a word's
// frequency falls as 1/rank, as in natural language), frequent words short,
// in sentences of varied length with commas and the odd number. Text drawn
// from a few dozen words compresses far better than conversation does.
type prose struct {
	rnd   *mrand.Rand
	zipf  *zipf
	vocab []string
}

const vocabSize = 20000

func newProse(seed uint64) *prose {
	rnd := mrand.New(mrand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	p := &prose{rnd: rnd, zipf: newZipf(rnd, 1.07, vocabSize)}
	onsets := strings.Fields("b c d f g h j k l m n p r s t v w y z br cr dr fr gr pr tr bl cl fl gl pl sl ch sh th st sp sc sk sm sn qu wh str")
	vowels := strings.Fields("a e i o u a e i o ea ou ai ee oo ie")
	codas := strings.Fields("_ _ _ n r s t l d m ng nd st nt rt ck sh ch rd ll ss")
	seen := map[string]bool{}
	for len(p.vocab) < vocabSize {
		// Rank decides length: the common words are short.
		rank := len(p.vocab)
		syl := 1
		switch {
		case rank > 5000:
			syl = 2 + rnd.IntN(3)
		case rank > 300:
			syl = 1 + rnd.IntN(3)
		case rank > 50:
			syl = 1 + rnd.IntN(2)
		}
		var b strings.Builder
		for range syl {
			if rnd.IntN(4) > 0 {
				b.WriteString(onsets[rnd.IntN(len(onsets))])
			}
			b.WriteString(vowels[rnd.IntN(len(vowels))])
			if c := codas[rnd.IntN(len(codas))]; c != "_" {
				b.WriteString(c)
			}
		}
		w := b.String()
		if !seen[w] {
			seen[w] = true
			p.vocab = append(p.vocab, w)
		}
	}
	return p
}

func (p *prose) word() string { return p.vocab[p.zipf.next()] }

// sentence is 4 to 28 words, capitalised, with the odd comma and number.
func (p *prose) sentence() string {
	n := 4 + p.rnd.IntN(12) + p.rnd.IntN(13)
	var b strings.Builder
	for i := range n {
		if i > 0 {
			if p.rnd.IntN(9) == 0 {
				b.WriteByte(',')
			}
			b.WriteByte(' ')
		}
		w := p.word()
		if p.rnd.IntN(30) == 0 {
			w = strconv.Itoa(p.rnd.IntN(10000))
		}
		if i == 0 {
			w = strings.ToUpper(w[:1]) + w[1:]
		}
		b.WriteString(w)
	}
	if p.rnd.IntN(5) == 0 {
		b.WriteByte('?')
	} else {
		b.WriteByte('.')
	}
	return b.String()
}

func (p *prose) paragraph(sentences int) string {
	s := make([]string, sentences)
	for i := range s {
		s[i] = p.sentence()
	}
	return strings.Join(s, " ")
}

// question is a user's message: one to three sentences.
func (p *prose) question() string { return p.paragraph(1 + p.rnd.IntN(3)) }

// toolOutput makes about n bytes of JSON tool output: records with codes,
// numbers, names and notes in prose.
func (p *prose) toolOutput(n int) string {
	var b strings.Builder
	b.WriteString(`{"results":[`)
	for i := 0; b.Len() < n-60; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		note, _ := json.Marshal(p.sentence())
		fmt.Fprintf(&b, `{"sku":"%c%c-%05d","name":"%s %s","qty":%d,"price":%d.%02d,"note":%s}`,
			'A'+rune(p.rnd.IntN(26)), 'A'+rune(p.rnd.IntN(26)), p.rnd.IntN(100000),
			p.word(), p.word(), 1+p.rnd.IntN(20), p.rnd.IntN(500), p.rnd.IntN(100), note)
	}
	b.WriteString(`]}`)
	return b.String()
}

// zipf draws ranks 0..n-1 with P(k) proportional to 1/(k+1)^s, by binary
// search over the cumulative weights (math/rand/v2's Zipf needs s > 1 and
// a shift; this is the plain law).
type zipf struct {
	rnd *mrand.Rand
	cum []float64
}

func newZipf(rnd *mrand.Rand, s float64, n int) *zipf {
	z := &zipf{rnd: rnd, cum: make([]float64, n)}
	total := 0.0
	for k := range n {
		total += 1 / math.Pow(float64(k+1), s)
		z.cum[k] = total
	}
	for k := range z.cum {
		z.cum[k] /= total
	}
	return z
}

func (z *zipf) next() int {
	i, _ := slices.BinarySearch(z.cum, z.rnd.Float64())
	return min(i, len(z.cum)-1)
}

// deflateRatio is how much DEFLATE (the saver's compression) shrinks b.
func deflateRatio(b []byte) float64 {
	var out bytes.Buffer
	w, _ := flate.NewWriter(&out, flate.DefaultCompression)
	w.Write(b)
	w.Close()
	if out.Len() == 0 {
		return 0
	}
	return float64(len(b)) / float64(out.Len())
}
