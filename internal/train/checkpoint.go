package train

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/verisim/verisim/internal/atomicfile"
	"github.com/verisim/verisim/internal/engine/model"
	"github.com/verisim/verisim/internal/engine/safetensors"
)

// Files a checkpoint directory holds besides the model's own.
const (
	// OptimizerFile holds AdamW's moments per tensor, "<name>.exp_avg" and
	// "<name>.exp_avg_sq", in F32, and, when the weights are published in
	// a narrower dtype, the fp32 master weights as "<name>.master".
	OptimizerFile = "optimizer.safetensors"
	// StateFile is the JSON trainerState: step, version, options and the
	// fingerprint of the model config.
	StateFile = "trainer_state.json"
)

// trainerState is StateFile's content.
type trainerState struct {
	Version string  `json:"version"`
	Step    int     `json:"step"`
	Options Options `json:"options"`
	// ConfigSHA256 is the SHA-256 of the model config as JSON, torch_dtype
	// left out (it says how the weights are stored, not what they are).
	ConfigSHA256 string `json:"config_sha256"`
}

func configFingerprint(c model.Config) string {
	c.TorchDType = ""
	b, _ := json.Marshal(c)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// configDiff names the fields (by their config.json names) in which got,
// the checkpoint's config, differs from want, the trainer's; torch_dtype
// is not compared.
func configDiff(want, got model.Config) string {
	var diffs []string
	wv, gv := reflect.ValueOf(want), reflect.ValueOf(got)
	for i := range wv.NumField() {
		f := wv.Type().Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "torch_dtype" || reflect.DeepEqual(wv.Field(i).Interface(), gv.Field(i).Interface()) {
			continue
		}
		diffs = append(diffs, fmt.Sprintf("%s is %v in the checkpoint, %v in the trainer", name, gv.Field(i).Interface(), wv.Field(i).Interface()))
	}
	return strings.Join(diffs, "; ")
}

// Save implements Trainer. It writes the Hugging Face checkpoint (weights
// in Options.PublishDType), OptimizerFile and StateFile into a fresh
// directory beside dir and then renames it into place, so dir never holds
// a half-written checkpoint: it is the old one, the new one, or (after a
// crash between the two renames) absent, with the old one beside it under
// a ".<name>.old-*" name. dir must not exist, be empty, or hold an earlier
// Save (a StateFile), which is replaced whole. A gradient accumulated
// since the last OptimStep is not saved.
func (b *Builtin) Save(ctx context.Context, dir, version string) (retErr error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("save %s: %w", dir, err)
	}
	dir = filepath.Clean(dir)
	parent, base := filepath.Dir(dir), filepath.Base(dir)
	exists, err := replaceable(dir)
	if err != nil {
		return fmt.Errorf("save %s: %w", dir, err)
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("save %s: %w", dir, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+base+".saving-*")
	if err != nil {
		return fmt.Errorf("save %s: %w", dir, err)
	}
	defer func() {
		if retErr != nil {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("save %s: %w", dir, err)
	}
	if err := b.writeCheckpoint(tmp, version); err != nil {
		return fmt.Errorf("save %s: %w", dir, err)
	}
	if err := swapInto(tmp, dir, exists); err != nil {
		return fmt.Errorf("save %s: %w", dir, err)
	}
	return nil
}

// replaceable reports whether dir exists, and refuses one Save must not
// replace.
func replaceable(dir string) (bool, error) {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, err
	case len(entries) == 0:
		return true, nil
	}
	if _, err := os.Stat(filepath.Join(dir, StateFile)); err != nil {
		return false, fmt.Errorf("directory exists and holds no %s: refusing to replace it", StateFile)
	}
	return true, nil
}

// swapInto renames the finished directory tmp to dir, moving an existing
// dir aside first and removing it afterwards.
func swapInto(tmp, dir string, exists bool) error {
	parent := filepath.Dir(dir)
	if !exists {
		if err := os.Rename(tmp, dir); err != nil {
			return err
		}
		return syncDir(parent)
	}
	// The old checkpoint moves into a fresh directory of its own, so the
	// name it moves to cannot be taken.
	aside, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".old-*")
	if err != nil {
		return err
	}
	old := filepath.Join(aside, filepath.Base(dir))
	if err := os.Rename(dir, old); err != nil {
		os.Remove(aside)
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		if rerr := os.Rename(old, dir); rerr != nil {
			return fmt.Errorf("%w (and restoring the previous checkpoint from %s: %v)", err, old, rerr)
		}
		os.Remove(aside)
		return err
	}
	if err := syncDir(parent); err != nil {
		return err
	}
	return os.RemoveAll(aside)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func (b *Builtin) writeCheckpoint(dir, version string) error {
	if err := b.model.Save(dir, b.opts.PublishDType); err != nil {
		return err
	}
	for name, content := range b.opts.Files {
		if err := atomicfile.Write(filepath.Join(dir, name), content, 0o644); err != nil {
			return err
		}
	}
	var opt []safetensors.Tensor
	for i, p := range b.params {
		sets := []struct {
			suffix string
			data   []float32
		}{{".exp_avg", *b.avgT[i].data}, {".exp_avg_sq", *b.avgSqT[i].data}}
		if b.opts.PublishDType != safetensors.F32 {
			sets = append(sets, struct {
				suffix string
				data   []float32
			}{".master", *p.data})
		}
		for _, s := range sets {
			t, err := safetensors.FromFloat32(p.name+s.suffix, p.shape, s.data, safetensors.F32)
			if err != nil {
				return err
			}
			opt = append(opt, t)
		}
	}
	if err := safetensors.Write(filepath.Join(dir, OptimizerFile), opt, map[string]string{"format": "verisim-adamw"}); err != nil {
		return err
	}
	state, err := json.MarshalIndent(trainerState{
		Version:      version,
		Step:         b.step,
		Options:      b.opts,
		ConfigSHA256: configFingerprint(b.model.Config),
	}, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, StateFile), append(state, '\n'), 0o644)
}

// Load implements Trainer. It refuses, changing nothing, a checkpoint
// whose config differs from the trainer's model (naming the fields), whose
// StateFile was written for another config, or whose optimiser state
// lacks a tensor, has one of the wrong shape or dtype, or has one the
// model does not call for. It restores the weights (the fp32 master
// weights when the checkpoint has them), AdamW's moments and the step
// count, so training resumes exactly where Save left it, and clears any
// accumulated gradient. The trainer keeps its own Options.
func (b *Builtin) Load(ctx context.Context, dir string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("load %s: %w", dir, err)
	}
	ck, err := model.Load(dir)
	if err != nil {
		return fmt.Errorf("load %s: %w", dir, err)
	}
	if d := configDiff(b.model.Config, ck.Config); d != "" {
		return fmt.Errorf("load %s: checkpoint config differs from the trainer's model: %s", dir, d)
	}
	raw, err := os.ReadFile(filepath.Join(dir, StateFile))
	if err != nil {
		return fmt.Errorf("load %s: %w", dir, err)
	}
	var state trainerState
	if err := json.Unmarshal(raw, &state); err != nil {
		return fmt.Errorf("load %s: %s: %w", dir, StateFile, err)
	}
	if state.ConfigSHA256 != configFingerprint(ck.Config) {
		return fmt.Errorf("load %s: %s was written for another model config (fingerprint %.12s, config.json has %.12s)",
			dir, StateFile, state.ConfigSHA256, configFingerprint(ck.Config))
	}
	if state.Step < 0 {
		return fmt.Errorf("load %s: %s: step %d", dir, StateFile, state.Step)
	}
	f, err := safetensors.Read(filepath.Join(dir, OptimizerFile))
	if err != nil {
		return fmt.Errorf("load %s: %w", dir, err)
	}
	master := ck.Config.TorchDType != "float32"
	take := func(p tensor, suffix string) ([]float32, error) {
		name := p.name + suffix
		t, ok := f.Tensors[name]
		switch {
		case !ok:
			return nil, fmt.Errorf("%s: missing tensor %s", OptimizerFile, name)
		case t.DType != safetensors.F32:
			return nil, fmt.Errorf("%s: tensor %s is %s, want F32", OptimizerFile, name, t.DType)
		case !slices.Equal(t.Shape, p.shape):
			return nil, fmt.Errorf("%s: tensor %s has shape %v, want %v", OptimizerFile, name, t.Shape, p.shape)
		}
		delete(f.Tensors, name)
		return t.Float32s()
	}
	ckT := tensors(ck)
	weights := make([][]float32, len(b.params))
	avg := make([][]float32, len(b.params))
	avgSq := make([][]float32, len(b.params))
	for i, p := range b.params {
		if avg[i], err = take(p, ".exp_avg"); err != nil {
			return fmt.Errorf("load %s: %w", dir, err)
		}
		if avgSq[i], err = take(p, ".exp_avg_sq"); err != nil {
			return fmt.Errorf("load %s: %w", dir, err)
		}
		weights[i] = *ckT[i].data
		if master {
			if weights[i], err = take(p, ".master"); err != nil {
				return fmt.Errorf("load %s: %w (the weights are %s, so the fp32 master weights must be there)", dir, err, ck.Config.TorchDType)
			}
		}
	}
	if len(f.Tensors) > 0 {
		extra := slices.Sorted(maps.Keys(f.Tensors))
		return fmt.Errorf("load %s: %s: unexpected tensor %s (%d not used by the model)", dir, OptimizerFile, extra[0], len(extra))
	}
	for i, p := range b.params {
		copy(*p.data, weights[i])
		copy(*b.avgT[i].data, avg[i])
		copy(*b.avgSqT[i].data, avgSq[i])
	}
	b.step, b.pending, b.sumW = state.Step, false, 0
	return nil
}
