package checkpoint_test

import (
	"testing"

	"github.com/weftlabs/weft/checkpoint"
	"github.com/weftlabs/weft/checkpoint/checkpointtest"
)

func TestMemoryConformance(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) *checkpoint.Saver { return checkpoint.NewMemory() })
}
