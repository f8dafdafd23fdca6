package postgres_test

import (
	"context"
	"testing"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/checkpointtest"
	"github.com/weftlabs/weft/checkpoint/internal/sqlstore/sqlstoretest"
	"github.com/weftlabs/weft/checkpoint/postgres"
)

func openShared(t testing.TB, url string) *checkpoint.Saver {
	d, err := postgres.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return checkpoint.New(d)
}

// 100 runs on one thread from 4 processes at once: no turn is lost.
func TestOwnershipAcrossProcesses(t *testing.T) {
	checkpointtest.OwnershipAcrossProcesses(t, newDatabase, openShared)
}

// A run killed with SIGKILL while it owns a thread blocks it only until
// its lease expires.
func TestKilledHolder(t *testing.T) {
	checkpointtest.KilledHolder(t, newDatabase, openShared)
}

// A task's writes made in a batch are checked against the lease by the
// batch's next fenced write, or before it commits.
func TestBatchWritesLeaseChecked(t *testing.T) {
	sqlstoretest.BatchWritesLeaseChecked(t, newSaver(t), nil)
}
