package run

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/verisim/verisim/internal/engine/model"
	"github.com/verisim/verisim/internal/task"
	"github.com/verisim/verisim/internal/train/data"
	"github.com/verisim/verisim/internal/trajectory"
)

func pretrainOptions(t *testing.T, mdl, corpus string) PretrainOptions {
	return PretrainOptions{
		ModelDir: mdl, CorpusDir: corpus, Out: filepath.Join(t.TempDir(), "out"),
		Corpus: data.CorpusOptions{SeqLen: 16, Exts: []string{".go"}, HeldOutFraction: 0.2, HeldOutSeqs: 2},
		Steps:  4, Batch: 2, EvalEvery: 1,
		Schedule: Schedule{LR: 1e-3, AutoWarmup: true, AutoDecay: true},
		Seed:     1,
	}
}

// metricsOf reads out's metrics with the wall time cleared.
func metricsOf(t *testing.T, out string) []Metric {
	t.Helper()
	ms, err := readMetrics(filepath.Join(out, MetricsFile), math.MaxInt)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ms {
		ms[i].Seconds = 0
	}
	return ms
}

// cancelAt is a progress writer that cancels when a line contains at.
type cancelAt struct {
	mu     sync.Mutex
	at     string
	cancel context.CancelFunc
	buf    bytes.Buffer
}

func (c *cancelAt) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if bytes.Contains(p, []byte(c.at)) {
		c.cancel()
	}
	return c.buf.Write(p)
}

// TestPretrainInterruptResume stops a run with its context after step 2,
// resumes it, and finds the metrics of one that never stopped.
func TestPretrainInterruptResume(t *testing.T) {
	mdl, corpus := microModel(t, 16), goCorpus(t, 12)

	full := pretrainOptions(t, mdl, corpus)
	var fullLog bytes.Buffer
	full.Progress = &fullLog
	s, err := Pretrain(t.Context(), full)
	if err != nil {
		t.Fatal(err)
	}
	if s.Steps != 4 || s.Tokens != 4*2*16 || math.IsNaN(s.HeldOutLoss) || math.IsNaN(s.Baseline) {
		t.Errorf("summary %+v", s)
	}
	want := metricsOf(t, full.Out)
	if len(want) != 5 || want[0].Step != 0 || want[0].HeldOutLoss == nil || want[4].HeldOutLoss == nil {
		t.Fatalf("metrics %+v, want step 0 and 4 steps, each with a held-out loss", want)
	}
	for _, f := range []string{LossPlotFile, RunStateFile, filepath.Join(CheckpointDir, TokenizerFile), filepath.Join(CheckpointDir, model.ConfigFile)} {
		if _, err := os.Stat(filepath.Join(full.Out, f)); err != nil {
			t.Error(err)
		}
	}

	split := pretrainOptions(t, mdl, corpus)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stop := &cancelAt{at: "step 2/4", cancel: cancel}
	split.Progress = stop
	_, err = Pretrain(ctx, split)
	if err == nil || !strings.Contains(err.Error(), "holds step 2: continue with --resume") || errors.Is(err, ErrUsage) {
		t.Fatalf("interrupted run: %v\n%s", err, stop.buf.String())
	}
	split.Resume = true
	var log bytes.Buffer
	split.Progress = &log
	if _, err := Pretrain(t.Context(), split); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "resumed at step 2") {
		t.Errorf("resumed run's progress:\n%s", log.String())
	}
	if got := metricsOf(t, split.Out); !reflect.DeepEqual(got, want) {
		t.Errorf("interrupted and resumed run's metrics differ:\n%+v\nwant\n%+v", got, want)
	}
}

func TestRefusals(t *testing.T) {
	mdl, corpus := microModel(t, 16), goCorpus(t, 12)
	done := pretrainOptions(t, mdl, corpus)
	done.Steps = 1
	if _, err := Pretrain(t.Context(), done); err != nil {
		t.Fatal(err)
	}
	metricsBefore, _ := os.ReadFile(filepath.Join(done.Out, MetricsFile))

	for _, tc := range []struct {
		name string
		edit func(o *PretrainOptions)
		want string
	}{
		{"no out", func(o *PretrainOptions) { o.Out = "" }, "--out DIR are required"},
		{"no steps", func(o *PretrainOptions) { o.Steps = 0 }, "--steps and --batch"},
		{"decay before warm-up", func(o *PretrainOptions) {
			o.Schedule = Schedule{LR: 1e-3, Warmup: 3, DecaySteps: 2}
		}, "--decay-steps 2 must exceed --warmup 3"},
		{"no seq-len", func(o *PretrainOptions) { o.Corpus.SeqLen = 0 }, "--seq-len must be at least 1"},
		{"seq-len over the context", func(o *PretrainOptions) { o.Corpus.SeqLen = 512 }, "the model's context is 512"},
		{"empty corpus", func(o *PretrainOptions) { o.CorpusDir = t.TempDir() }, "no readable text files"},
		{"not a model", func(o *PretrainOptions) { o.ModelDir = corpus }, "--model"},
		{"checkpoint exists", func(o *PretrainOptions) { o.Out = done.Out }, "already holds a checkpoint; pass --resume"},
		{"resume nothing", func(o *PretrainOptions) { o.Resume = true }, "holds no checkpoint"},
		{"resume other settings", func(o *PretrainOptions) { o.Out, o.Resume, o.Seed = done.Out, true, 2 }, "seed was 1, now 2"},
		{"resume past the end", func(o *PretrainOptions) { o.Out, o.Resume, o.Steps = done.Out, true, 1 }, "already holds step 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := pretrainOptions(t, mdl, corpus)
			tc.edit(&o)
			_, err := Pretrain(t.Context(), o)
			if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want ErrUsage with %q", err, tc.want)
			}
		})
	}
	if after, _ := os.ReadFile(filepath.Join(done.Out, MetricsFile)); !bytes.Equal(after, metricsBefore) {
		t.Error("a refused run changed metrics.jsonl")
	}

	_, err := SFT(t.Context(), SFTOptions{ModelDir: mdl, Out: t.TempDir(), FromSolutions: true, Tasks: filepath.Join(t.TempDir(), "none"), Epochs: 1, Batch: 1, MaxLen: 64, EvalSamples: 1, EvalMaxTokens: 1})
	if !errors.Is(err, ErrTasks) || errors.Is(err, ErrUsage) {
		t.Errorf("SFT on a missing task suite: %v, want ErrTasks", err)
	}
}

// TestSFTProgress trains on trajectories, which have no unigram baseline:
// none is shown.
func TestSFTProgress(t *testing.T) {
	mdl := microModel(t, 16)
	var b bytes.Buffer
	w := trajectory.NewWriter(&b)
	for i := range 4 {
		id := int32(10 + i)
		w.Write(&trajectory.Trajectory{
			Version: trajectory.Version, TaskID: "t", Status: trajectory.StatusOK, Started: time.Unix(0, 0), Finished: time.Unix(1, 0),
			Turns: []trajectory.Turn{{PromptTokenIDs: []int32{1, 2, id}, CompletionTokenIDs: []int32{id + 20, id + 21}}},
		})
	}
	trajs := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(trajs, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	o := SFTOptions{
		ModelDir: mdl, Out: filepath.Join(t.TempDir(), "sft"), Data: trajs, Epochs: 2, Batch: 2, MaxLen: 64,
		Schedule: Schedule{LR: 5e-4, AutoWarmup: true, AutoDecay: true}, EvalSamples: 1, EvalMaxTokens: 1, Seed: 1,
		Progress: &log,
	}
	s, err := SFT(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if s.Steps != 4 || s.Tokens != 4*2*2 || s.EvalTasks != 0 || !math.IsNaN(s.Baseline) {
		t.Errorf("summary %+v", s)
	}
	if strings.Contains(log.String(), "unigram") || strings.Contains(log.String(), "NaN") {
		t.Errorf("SFT progress shows a baseline it does not have:\n%s", log.String())
	}
	if !strings.Contains(log.String(), "trained 4 steps, 16 tokens; wrote") {
		t.Errorf("progress lacks the summary:\n%s", log.String())
	}
	if ms := metricsOf(t, o.Out); len(ms) != 4 || ms[3].Step != 4 {
		t.Errorf("metrics %+v", ms)
	}
	if _, err := model.Load(filepath.Join(o.Out, CheckpointDir)); err != nil {
		t.Error(err)
	}
}

func TestProgressLine(t *testing.T) {
	loss, held := 2.5, 3.25
	for _, tc := range []struct {
		name     string
		baseline float64
		m        Metric
		want     string
		absent   string
	}{
		{"baseline", 4, Metric{Step: 1, Loss: &loss, HeldOutLoss: &held, LR: 1e-3}, "loss 2.500  held-out 3.250 (unigram 4.000)  lr 0.001", ""},
		{"no baseline", math.NaN(), Metric{Step: 1, Loss: &loss, HeldOutLoss: &held}, "held-out 3.250  lr", "unigram"},
		{"nothing held out yet", math.NaN(), Metric{Step: 1, Loss: &loss}, "held-out -  lr", "unigram"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			p := newProgress(&b, false, 10, 0, tc.baseline)
			p.update(tc.m, 32)
			p.finish()
			out := b.String()
			if !strings.Contains(out, "step 1/10  ") || !strings.Contains(out, tc.want) || tc.absent != "" && strings.Contains(out, tc.absent) {
				t.Errorf("progress %q, want %q without %q", out, tc.want, tc.absent)
			}
		})
	}
	// On a terminal the line is rewritten in place and ended by finish.
	var b bytes.Buffer
	p := newProgress(&b, true, 10, 0, math.NaN())
	p.update(Metric{Step: 1, Loss: &loss}, 32)
	p.update(Metric{Step: 2, Loss: &loss}, 32)
	p.finish()
	p.finish()
	if out := b.String(); strings.Count(out, "\r\033[K") != 2 || strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
		t.Errorf("terminal progress %q", out)
	}
}

func TestMetricsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), MetricsFile)
	if ms, err := readMetrics(path, 10); err != nil || ms != nil {
		t.Fatalf("missing file: %v, %v", ms, err)
	}
	l0, l1, l2 := 3.0, 2.0, 1.0
	ms := []Metric{{Step: 0, HeldOutLoss: &l0}, {Step: 1, Loss: &l1, LR: 1e-3, Tokens: 8}}
	if err := writeMetrics(path, ms); err != nil {
		t.Fatal(err)
	}
	if err := appendMetric(path, Metric{Step: 2, Loss: &l2, Tokens: 16}); err != nil {
		t.Fatal(err)
	}
	got, err := readMetrics(path, 1)
	if err != nil || !reflect.DeepEqual(got, ms) {
		t.Errorf("up to step 1: %+v, %v; want %+v", got, err, ms)
	}
	if got, _ := readMetrics(path, 2); len(got) != 3 || *got[2].Loss != 1 {
		t.Errorf("up to step 2: %+v", got)
	}
	nan := math.NaN()
	if err := appendMetric(path, Metric{Step: 3, Loss: &nan}); err == nil {
		t.Error("a NaN loss was written")
	}
	os.WriteFile(path, []byte("{\"step\": 0}\nnot json\n"), 0o644)
	if _, err := readMetrics(path, 5); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("malformed line: %v", err)
	}
}

func TestSchedule(t *testing.T) {
	for _, tc := range []struct {
		s                Schedule
		steps, maxWarmup int
		want             Schedule
	}{
		{Schedule{LR: 1, AutoWarmup: true, AutoDecay: true}, 300, maxAutoWarmup, Schedule{LR: 1, Warmup: 20, DecaySteps: 300}},
		{Schedule{LR: 1, AutoWarmup: true, AutoDecay: true}, 50, maxAutoWarmup, Schedule{LR: 1, Warmup: 5, DecaySteps: 50}},
		{Schedule{LR: 1, AutoWarmup: true, AutoDecay: true}, 300, 300, Schedule{LR: 1, Warmup: 30, DecaySteps: 300}},
		{Schedule{LR: 1, Warmup: 7, AutoDecay: true}, 300, 300, Schedule{LR: 1, Warmup: 7, DecaySteps: 300}},
		{Schedule{LR: 1, AutoWarmup: true}, 300, 300, Schedule{LR: 1, Warmup: 30}},
	} {
		if got := tc.s.resolve(tc.steps, tc.maxWarmup); got != tc.want {
			t.Errorf("%+v.resolve(%d, %d) = %+v, want %+v", tc.s, tc.steps, tc.maxWarmup, got, tc.want)
		}
	}
}

func TestSplitTasks(t *testing.T) {
	var tasks []*task.Task
	for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
		tasks = append(tasks, &task.Task{ID: id})
	}
	trainSet, evalSet := splitTasks(tasks, 2)
	if len(trainSet) != 4 || len(evalSet) != 2 {
		t.Fatalf("%d train, %d eval", len(trainSet), len(evalSet))
	}
	// Removing a training task moves nothing across the split.
	var fewer []*task.Task
	for _, tk := range tasks {
		if tk != trainSet[0] {
			fewer = append(fewer, tk)
		}
	}
	if _, again := splitTasks(fewer, 2); !reflect.DeepEqual(again, evalSet) {
		t.Errorf("held-out set changed with another task removed: %v, want %v", ids(again), ids(evalSet))
	}
	if tr, ev := splitTasks(tasks, 10); len(tr) != 0 || len(ev) != 6 {
		t.Errorf("more held out than there are: %d train, %d eval", len(tr), len(ev))
	}
}

func ids(ts []*task.Task) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.ID)
	}
	return out
}
