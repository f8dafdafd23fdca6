package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/sqlite"
)

// BenchmarkPutFenced compares a checkpoint write with and without the
// lease check a run's writes carry.
func BenchmarkPutFenced(b *testing.B) {
	ctx := context.Background()
	d, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "weft.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	s := checkpoint.New(d)
	for _, fenced := range []bool{false, true} {
		b.Run(fmt.Sprintf("fenced=%v", fenced), func(b *testing.B) {
			thread := fmt.Sprintf("t-%v-%d", fenced, b.N)
			pctx := ctx
			if fenced {
				l, err := s.Acquire(ctx, thread, checkpoint.LeaseOptions{})
				if err != nil {
					b.Fatal(err)
				}
				defer l.Release(ctx)
				pctx = checkpoint.WithLease(ctx, l)
			}
			parent := ""
			v := int64(0)
			for b.Loop() {
				v++
				id := checkpoint.NewID()
				cp := &checkpoint.Checkpoint{V: checkpoint.FormatVersion, ID: id, Versions: map[string]int64{"a": v}, VersionsSeen: map[string]map[string]int64{}}
				if _, err := s.Put(pctx, checkpoint.Config{ThreadID: thread, CheckpointID: parent}, cp, checkpoint.Metadata{Source: "loop", Step: int(v)},
					[]checkpoint.Blob{{Channel: "a", Version: v, Value: json.RawMessage(`"value"`)}}); err != nil {
					b.Fatal(err)
				}
				parent = id
			}
		})
	}
}
