package run

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/verisim/verisim/internal/atomicfile"
	"github.com/verisim/verisim/internal/engine/model"
	"github.com/verisim/verisim/internal/train"
	"github.com/verisim/verisim/internal/train/data"
)

// What a run writes in its output directory: the trainer's checkpoint in a
// directory of its own (Trainer.Save replaces that directory whole), and
// beside it the run's metrics, plot and data state.
const (
	CheckpointDir = "checkpoint"
	MetricsFile   = "metrics.jsonl"
	LossPlotFile  = "loss.png"
	RunStateFile  = "run-state.json"
)

// Metric is one line of metrics.jsonl. Seconds is wall time and differs
// from run to run; everything else is reproducible.
type Metric struct {
	Step        int      `json:"step"`
	Loss        *float64 `json:"loss,omitempty"`
	HeldOutLoss *float64 `json:"held_out_loss,omitempty"`
	LR          float64  `json:"lr,omitzero"`
	GradNorm    float64  `json:"grad_norm,omitzero"`
	Tokens      int      `json:"tokens"`
	Seconds     float64  `json:"seconds,omitzero"`
}

// runState is run-state.json: what a resumed run needs beyond the
// trainer's checkpoint, the settings that must not change and where the
// data order stood at the last saves. It lists the save in progress before
// the checkpoint is written and keeps the one before, so whichever
// checkpoint a crash leaves, its data state is here.
type runState struct {
	Settings settings    `json:"settings"`
	Saves    []savePoint `json:"saves"`
}

// savePoint is the data order after Step optimiser steps.
type savePoint struct {
	Step  int             `json:"step"`
	Order data.OrderState `json:"order"`
}

// settings must be equal for a run to be resumed.
type settings struct {
	Corpus      string  `json:"corpus"`
	Fingerprint string  `json:"corpus_fingerprint"`
	SeqLen      int     `json:"seq_len"`
	Batch       int     `json:"batch"`
	LR          float64 `json:"lr"`
	Warmup      int     `json:"warmup"`
	DecaySteps  int     `json:"decay_steps"`
	Seed        uint64  `json:"seed"`
}

// hasCheckpoint reports whether out holds a checkpoint.
func hasCheckpoint(out string) bool {
	_, err := os.Stat(filepath.Join(out, CheckpointDir, model.ConfigFile))
	return err == nil
}

// refuseCheckpoint refuses an out directory that holds a checkpoint
// already; hint says what to do instead.
func refuseCheckpoint(out, hint string) error {
	if hasCheckpoint(out) {
		return usageErr("%s already holds a checkpoint; %s", out, hint)
	}
	return nil
}

// checkResume checks that out holds a checkpoint of a model of config cfg
// and returns the run state and the checkpoint's step.
func checkResume(out string, cfg model.Config) (*runState, int, error) {
	ckpt := filepath.Join(out, CheckpointDir)
	if !hasCheckpoint(out) {
		return nil, 0, usageErr("--resume: %s holds no checkpoint (no %s)", out, filepath.Join(CheckpointDir, model.ConfigFile))
	}
	saved, err := model.LoadConfig(filepath.Join(ckpt, model.ConfigFile))
	if err != nil {
		return nil, 0, usageErr("--resume: %v", err)
	}
	if diff := jsonDiff(saved, cfg, "%s is %v in the checkpoint, %v in --model"); diff != "" {
		return nil, 0, usageErr("--resume: the checkpoint in %s is of a different model than --model: %s", out, diff)
	}
	var ts struct {
		Step int `json:"step"`
	}
	if err := readJSON(filepath.Join(ckpt, train.StateFile), &ts); err != nil {
		return nil, 0, usageErr("--resume: %v", err)
	}
	var st runState
	if err := readJSON(filepath.Join(out, RunStateFile), &st); err != nil {
		return nil, 0, usageErr("--resume: %v (was %s written by verisim pretrain?)", err, out)
	}
	return &st, ts.Step, nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// jsonDiff describes, with format, each field of two values' JSON forms
// that differs: field name, a's value, b's value. The storage dtype
// (torch_dtype) is not compared.
func jsonDiff(a, b any, format string) string {
	var ma, mb map[string]any
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	json.Unmarshal(ja, &ma)
	json.Unmarshal(jb, &mb)
	var diffs []string
	for _, k := range slices.Sorted(maps.Keys(ma)) {
		if k == "torch_dtype" {
			continue
		}
		if va, vb := ma[k], mb[k]; fmt.Sprint(va) != fmt.Sprint(vb) {
			diffs = append(diffs, fmt.Sprintf(format, k, va, vb))
		}
	}
	return strings.Join(diffs, "; ")
}

// readMetrics reads the metrics at path up to and including step upTo;
// a missing file holds none.
func readMetrics(path string, upTo int) ([]Metric, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Metric
	s := bufio.NewScanner(f)
	s.Buffer(nil, 1<<20)
	for n := 1; s.Scan(); n++ {
		var m Metric
		if err := json.Unmarshal(s.Bytes(), &m); err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", path, n, err)
		}
		if m.Step <= upTo {
			out = append(out, m)
		}
	}
	return out, s.Err()
}

// writeMetrics replaces the metrics file at path with ms.
func writeMetrics(path string, ms []Metric) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, m := range ms {
		if err := enc.Encode(m); err != nil {
			return fmt.Errorf("%s: step %d: %w", path, m.Step, err)
		}
	}
	return atomicfile.Write(path, b.Bytes(), 0o644)
}

// appendMetric appends m to the metrics file at path.
func appendMetric(path string, m Metric) error {
	line, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("%s: step %d: %w", path, m.Step, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(append(line, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
