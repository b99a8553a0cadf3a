package run

import (
	"testing"

	"github.com/verisim/verisim/internal/train/traintest"
)

// microModel is a two-layer model of width hidden that trains in seconds.
func microModel(t *testing.T, hidden int) string { return traintest.MicroModel(t, hidden, 512) }

func goCorpus(t *testing.T, n int) string { return traintest.GoCorpus(t, n) }
