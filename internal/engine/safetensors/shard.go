package safetensors

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/verisim/verisim/internal/lazyregexp"
)

// Names used in a checkpoint directory, as Hugging Face transformers uses
// them.
const (
	SingleFile = "model.safetensors"
	IndexFile  = "model.safetensors.index.json"
)

// shardName matches shard files and nothing else WriteSharded may delete.
var shardName = lazyregexp.New(`^model-[0-9]{5}-of-[0-9]{5}\.safetensors$`)

// index is the JSON of model.safetensors.index.json.
type index struct {
	Metadata  map[string]any    `json:"metadata"`
	WeightMap map[string]string `json:"weight_map"`
}

// WriteSharded writes a checkpoint into dir and returns the paths of the
// files it wrote, index last.
//
// If the tensors' data totals at most maxShardBytes (or maxShardBytes <= 0)
// they go into one file, model.safetensors. Otherwise they are packed in name
// order into shards model-0000K-of-0000M.safetensors of at most maxShardBytes
// of data each (a tensor larger than that gets a shard to itself), and
// model.safetensors.index.json maps each tensor to its shard. Every file
// carries metadata.
//
// All files are first written and fsynced in a temporary directory inside
// dir. Then any old index is removed, the new files are renamed into place,
// and, for a sharded checkpoint, the index is renamed last: it is the commit
// point. Finally files of the other layout, and shards the new index does not
// name, are removed. A crash therefore leaves either the complete new
// checkpoint or no index; ReadDir then finds the old model.safetensors if
// there was one, and otherwise no checkpoint, never a mix of old and new.
func WriteSharded(dir string, tensors []Tensor, metadata map[string]string, maxShardBytes int64) ([]string, error) {
	// Validate once, up front, so a bad tensor fails before anything is
	// written.
	if _, _, err := prepare(tensors, metadata); err != nil {
		return nil, fmt.Errorf("safetensors: write %s: %w", dir, err)
	}
	byName := slices.SortedFunc(slices.Values(tensors), func(a, b Tensor) int {
		return strings.Compare(a.Name, b.Name)
	})
	var shards [][]Tensor
	var total, cur int64
	for _, t := range byName {
		n := int64(len(t.Data))
		total += n
		if len(shards) == 0 || (maxShardBytes > 0 && cur+n > maxShardBytes && cur > 0) {
			shards = append(shards, nil)
			cur = 0
		}
		shards[len(shards)-1] = append(shards[len(shards)-1], t)
		cur += n
	}
	if maxShardBytes <= 0 || total <= maxShardBytes || len(shards) <= 1 {
		shards = [][]Tensor{byName}
	}

	tmp, err := os.MkdirTemp(dir, ".safetensors-tmp-*")
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	defer os.RemoveAll(tmp)

	var names, paths []string // final base names (index last), and their paths
	if len(shards) == 1 {
		if err := Write(filepath.Join(tmp, SingleFile), shards[0], metadata); err != nil {
			return nil, err
		}
		names = []string{SingleFile}
	} else {
		idx := index{
			Metadata:  map[string]any{"total_size": total},
			WeightMap: map[string]string{},
		}
		for k, shard := range shards {
			name := fmt.Sprintf("model-%05d-of-%05d.safetensors", k+1, len(shards))
			if err := Write(filepath.Join(tmp, name), shard, metadata); err != nil {
				return nil, err
			}
			for _, t := range shard {
				idx.WeightMap[t.Name] = name
			}
			names = append(names, name)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(idx); err != nil {
			return nil, fmt.Errorf("safetensors: encode index: %w", err)
		}
		err := writeAtomic(filepath.Join(tmp, IndexFile), func(w io.Writer) error {
			_, err := w.Write(buf.Bytes())
			return err
		})
		if err != nil {
			return nil, err
		}
		names = append(names, IndexFile)
	}

	// Uncommit whatever checkpoint is there before touching its files.
	if err := os.Remove(filepath.Join(dir, IndexFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return nil, err
	}
	for _, name := range names {
		if err := os.Rename(filepath.Join(tmp, name), filepath.Join(dir, name)); err != nil {
			return nil, fmt.Errorf("safetensors: %w", err)
		}
		paths = append(paths, filepath.Join(dir, name))
	}
	if err := syncDir(dir); err != nil {
		return nil, err
	}

	// Clean up what the new checkpoint does not use.
	keep := map[string]bool{}
	for _, n := range names {
		keep[n] = true
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return paths, fmt.Errorf("safetensors: %w", err)
	}
	for _, e := range ents {
		n := e.Name()
		if !keep[n] && (n == SingleFile || shardName.MatchString(n)) {
			if err := os.Remove(filepath.Join(dir, n)); err != nil {
				return paths, fmt.Errorf("safetensors: remove stale %s: %w", n, err)
			}
		}
	}
	return paths, syncDir(dir)
}

// ReadDir loads the checkpoint in dir: the sharded layout if
// model.safetensors.index.json is present, otherwise model.safetensors. For a
// sharded checkpoint it checks that the index names exactly the tensors the
// shards hold, each in the shard the index says, that total_size (if given)
// matches, and that the shards agree on metadata, which it returns merged.
func ReadDir(dir string) (map[string]Tensor, map[string]string, error) {
	indexPath := filepath.Join(dir, IndexFile)
	raw, err := os.ReadFile(indexPath)
	if errors.Is(err, fs.ErrNotExist) {
		f, err := Read(filepath.Join(dir, SingleFile))
		if err != nil {
			return nil, nil, err
		}
		return f.Tensors, f.Metadata, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("safetensors: %w", err)
	}
	bad := func(tensor, format string, args ...any) error {
		return &FormatError{Path: indexPath, Tensor: tensor, Msg: fmt.Sprintf(format, args...)}
	}
	var idx index
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&idx); err != nil {
		return nil, nil, bad("", "index JSON: %v", err)
	}
	if idx.WeightMap == nil {
		return nil, nil, bad("", "index has no weight_map")
	}

	tensors := map[string]Tensor{}
	var metadata map[string]string
	var total int64
	loaded := map[string]bool{}
	for _, shard := range slices.Sorted(maps.Values(idx.WeightMap)) {
		if loaded[shard] {
			continue
		}
		loaded[shard] = true
		if shard != filepath.Base(shard) || shard == "." || shard == ".." || filepath.IsAbs(shard) {
			return nil, nil, bad("", "shard %q is not a plain file name in the checkpoint directory", shard)
		}
		f, err := Read(filepath.Join(dir, shard))
		if err != nil {
			return nil, nil, err
		}
		for _, name := range f.Names {
			t := f.Tensors[name]
			switch want, ok := idx.WeightMap[name]; {
			case !ok:
				return nil, nil, bad(name, "in shard %s but not in the index", shard)
			case want != shard:
				return nil, nil, bad(name, "in shard %s but the index places it in %s", shard, want)
			}
			tensors[name] = t
			total += int64(len(t.Data))
		}
		for k, v := range f.Metadata {
			if metadata == nil {
				metadata = map[string]string{}
			}
			if old, ok := metadata[k]; ok && old != v {
				return nil, nil, bad("", "shards disagree on metadata %q: %q vs %q", k, old, v)
			}
			metadata[k] = v
		}
	}
	for _, name := range slices.Sorted(maps.Keys(idx.WeightMap)) {
		if _, ok := tensors[name]; !ok {
			return nil, nil, bad(name, "the index places it in %s, which does not hold it", idx.WeightMap[name])
		}
	}
	if ts, ok := idx.Metadata["total_size"]; ok {
		n, err := strconv.ParseInt(fmt.Sprint(ts), 10, 64)
		if err != nil || n != total {
			return nil, nil, bad("", "total_size %v, but the shards hold %d bytes of tensor data", ts, total)
		}
	}
	return tensors, metadata, nil
}
