package store

import (
	"context"
	"encoding/json"
	"time"
)

// Backend is what a storage engine implements; [Store] is what callers use.
// The split follows database/sql and database/sql/driver: the Store
// validates input, embeds text, applies defaults, ranks vectors and runs the
// sweeper, so a backend only stores and reads rows. Backends in this module:
// the in-memory one here, store/sqlite and store/postgres.
//
// Times passed in (now) come from the Store's clock, already in UTC and
// truncated to microseconds; backends compare expiry against them rather
// than their own clocks, so every backend agrees and tests need no sleeps.
// An item whose ExpiresAt is at or before now is expired: backends never
// return it, though it may stay stored until Sweep.
//
// Namespaces reach a backend validated; a backend may store them joined
// with [JoinNamespace] and match prefixes with [PrefixRange].
//
// Every method must be safe for concurrent use.
type Backend interface {
	// Put inserts or replaces each item in one transaction: all or none.
	// Replacing keeps the item's ID and CreatedAt, and replaces its vectors
	// with the Write's (none if empty).
	Put(ctx context.Context, writes []Write) error
	// Get returns the live item at ns and key, or nil if there is none.
	// When refresh is true and the item has a TTL, its expiry is first
	// moved to now+TTL.
	Get(ctx context.Context, ns []string, key string, now time.Time, refresh bool) (*Record, error)
	// Delete removes the item at ns and key with its vectors; a missing
	// item is not an error.
	Delete(ctx context.Context, ns []string, key string) error
	// Search returns the live items matching q, ordered by UpdatedAt
	// descending, then joined namespace and key ascending (byte order).
	Search(ctx context.Context, q *Query) ([]Record, error)
	// Refresh moves the expiry of the items with these IDs that have a TTL
	// and are still live to now+TTL.
	Refresh(ctx context.Context, ids []int64, now time.Time) error
	// Namespaces returns the distinct namespaces of live items at or under
	// prefix, in any order.
	Namespaces(ctx context.Context, prefix []string, now time.Time) ([][]string, error)
	// Sweep deletes the items expired at now and returns how many.
	Sweep(ctx context.Context, now time.Time) (int64, error)
	// Close releases what the backend owns.
	Close() error
}

// VectorSource is what a Backend implements so the Store can rank vectors
// exactly: it keeps every vector under a prefix in memory (a contiguous
// float32 slab) and reloads it when the generation changes.
type VectorSource interface {
	// Generation returns a number that changes whenever an item at or under
	// prefix is put, deleted or swept, in this process or any other sharing
	// the storage.
	Generation(ctx context.Context, prefix []string) (int64, error)
	// Vectors calls fn for every stored vector of dims dimensions of items at
	// or under prefix, expired or not, with all vectors of one item in
	// consecutive calls. vec is only valid during the call.
	Vectors(ctx context.Context, prefix []string, dims int, fn func(id int64, vec []float32) error) error
}

// VectorSearcher is implemented by a backend that ranks vectors itself (the
// PostgreSQL backend with pgvector). When a backend implements it and
// NativeVectorSearch reports true, the Store hands query searches to it.
type VectorSearcher interface {
	// NativeVectorSearch reports whether SearchVectors is usable for
	// vectors of dims dimensions.
	NativeVectorSearch(dims int) bool
	// SearchVectors returns the live items under q.Prefix matching
	// q.Filter, best first by the highest cosine similarity of any of their
	// vectors to query, with Score set, applying q.Limit and q.Offset.
	SearchVectors(ctx context.Context, q *Query, query []float32) ([]Record, error)
}

// Write is one item for Backend.Put.
type Write struct {
	Namespace []string
	Key       string
	// Value is a compact JSON object.
	Value json.RawMessage
	// Now is the write time: UpdatedAt, and CreatedAt for a new item.
	Now time.Time
	// TTL is the item's time to live, or 0 for none. ExpiresAt is Now+TTL.
	TTL time.Duration
	// Vectors replace the item's stored vectors.
	Vectors []Vector
}

// Vector is one embedding of an item: the text at Field embedded.
type Vector struct {
	// Field is the index field path the text came from.
	Field string
	// Embedding has the index's dimensions.
	Embedding []float32
}

// Record is a stored item as a backend returns it.
type Record struct {
	// ID is the backend's identifier for the item, stable while the item
	// exists (also across overwrites).
	ID        int64
	Namespace []string
	Key       string
	Value     json.RawMessage
	CreatedAt time.Time
	UpdatedAt time.Time
	// ExpiresAt is zero for an item without TTL.
	ExpiresAt time.Time
	// TTL is zero for an item without TTL.
	TTL time.Duration
	// Score is set by VectorSearcher.SearchVectors.
	Score *float64
}

// Query selects items for Backend.Search.
type Query struct {
	// Prefix restricts to items at or under this namespace (all if empty).
	Prefix []string
	// Filter conditions must all hold.
	Filter Filter
	// Now decides expiry.
	Now time.Time
	// Limit caps the result (no cap when negative); Offset skips first.
	Limit, Offset int
	// IDs, when non-nil, restricts to items with these IDs.
	IDs []int64
	// IDsOnly asks for records with only ID set (the Store uses it to get
	// the set of items a filter admits before ranking vectors).
	IDsOnly bool
}
