package safetensors

import (
	"encoding/json"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestWriteShardedReadDirRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	tensors := randomTensors(r)
	meta := map[string]string{"format": "pt"}
	var total int64
	for _, tn := range tensors {
		total += int64(len(tn.Data))
	}
	tests := []struct {
		name       string
		max        int64
		wantShards bool
	}{
		{"max=none/single", 0, false},
		{"max=total/single", total, false},
		{"max=64/sharded", 64, true},
		{"max=1/one tensor a shard", 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			paths, err := WriteSharded(dir, tensors, meta, tt.max)
			if err != nil {
				t.Fatal(err)
			}
			got, gotMeta, err := ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			sameTensors(t, got, tensors)
			if !mapsEqual(gotMeta, meta) {
				t.Errorf("metadata = %v, want %v", gotMeta, meta)
			}
			ents, _ := os.ReadDir(dir)
			if len(ents) != len(paths) {
				t.Errorf("dir holds %d entries, WriteSharded reported %d paths (temp files left?)", len(ents), len(paths))
			}
			if !tt.wantShards {
				if len(paths) != 1 || filepath.Base(paths[0]) != SingleFile {
					t.Fatalf("paths = %v, want just %s", paths, SingleFile)
				}
				return
			}
			if len(paths) < 3 || filepath.Base(paths[len(paths)-1]) != IndexFile {
				t.Fatalf("paths = %v, want several shards then the index", paths)
			}
			var idx struct {
				Metadata struct {
					TotalSize int64 `json:"total_size"`
				} `json:"metadata"`
				WeightMap map[string]string `json:"weight_map"`
			}
			raw, _ := os.ReadFile(paths[len(paths)-1])
			if err := json.Unmarshal(raw, &idx); err != nil {
				t.Fatal(err)
			}
			if idx.Metadata.TotalSize != total || len(idx.WeightMap) != len(tensors) {
				t.Errorf("index total_size %d, %d entries; want %d, %d", idx.Metadata.TotalSize, len(idx.WeightMap), total, len(tensors))
			}
			for i, p := range paths[:len(paths)-1] {
				if !shardName.MatchString(filepath.Base(p)) {
					t.Errorf("shard %d named %s", i, p)
				}
				h, err := ReadHeader(p)
				if err != nil {
					t.Fatal(err)
				}
				var data int64
				for _, ti := range h.Tensors {
					data += ti.End - ti.Begin
				}
				if data > tt.max && len(h.Tensors) > 1 {
					t.Errorf("%s holds %d bytes of data in %d tensors, over the %d limit", p, data, len(h.Tensors), tt.max)
				}
			}
		})
	}
}

// Rewriting a checkpoint in the other layout leaves only the new one, and the
// states a crash can leave behind read as the old checkpoint or as none.
func TestWriteShardedReplacesLayouts(t *testing.T) {
	dir := t.TempDir()
	mk := func(tag string, n int) []Tensor {
		var ts []Tensor
		for i := range n {
			tn, _ := FromFloat32(tag+"."+string(rune('a'+i)), []int{4}, []float32{float32(i), 1, 2, 3}, F32)
			ts = append(ts, tn)
		}
		return ts
	}
	steps := []struct {
		tag        string
		n          int
		max        int64
		wantFiles  int
		wantSingle bool
	}{
		{"v1", 6, 32, 4, false}, // 3 shards + index
		{"v2", 2, 0, 1, true},
		{"v3", 6, 16, 7, false}, // 6 shards + index
		{"v4", 6, 48, 3, false}, // 2 shards + index: v3's extra shards must go
	}
	for _, s := range steps {
		want := mk(s.tag, s.n)
		if _, err := WriteSharded(dir, want, nil, s.max); err != nil {
			t.Fatalf("%s: %v", s.tag, err)
		}
		got, _, err := ReadDir(dir)
		if err != nil {
			t.Fatalf("%s: %v", s.tag, err)
		}
		sameTensors(t, got, want)
		ents, _ := os.ReadDir(dir)
		if len(ents) != s.wantFiles {
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			t.Errorf("%s: dir holds %v, want %d files", s.tag, names, s.wantFiles)
		}
	}

	// A crash after the old index was removed but before the new one was
	// renamed in: shards without an index are not a checkpoint.
	if err := os.Remove(filepath.Join(dir, IndexFile)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadDir(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("shards without index: err = %v, want ErrNotExist", err)
	}
	// An old single file beside uncommitted shards is what is read.
	old := mk("old", 1)
	if err := Write(filepath.Join(dir, SingleFile), old, nil); err != nil {
		t.Fatal(err)
	}
	got, _, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	sameTensors(t, got, old)
}

func TestReadDirRejects(t *testing.T) {
	shardA := []Tensor{{Name: "a", DType: U8, Shape: []int{2}, Data: []byte{1, 2}}}
	shardB := []Tensor{{Name: "b", DType: U8, Shape: []int{1}, Data: []byte{3}}, {Name: "c", DType: U8, Shape: []int{1}, Data: []byte{4}}}
	const a, b = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
	tests := []struct {
		name   string
		index  string
		tensor string
		want   string
	}{
		{"index names a missing tensor", `{"weight_map":{"a":"` + a + `","b":"` + b + `","c":"` + b + `","d":"` + b + `"}}`, "d", "the index places it in " + b + ", which does not hold it"},
		{"shard holds an unindexed tensor", `{"weight_map":{"a":"` + a + `","b":"` + b + `"}}`, "c", "in shard " + b + " but not in the index"},
		{"tensor in the wrong shard", `{"weight_map":{"a":"` + b + `","b":"` + b + `","c":"` + a + `"}}`, "a", "in shard " + a + " but the index places it in " + b},
		{"missing shard file", `{"weight_map":{"a":"` + a + `","b":"` + b + `","c":"` + b + `","d":"model-00003-of-00003.safetensors"}}`, "", "no such file"},
		{"shard path escapes", `{"weight_map":{"a":"../` + a + `"}}`, "", "not a plain file name"},
		{"wrong total_size", `{"metadata":{"total_size":5},"weight_map":{"a":"` + a + `","b":"` + b + `","c":"` + b + `"}}`, "", "total_size 5, but the shards hold 4 bytes"},
		{"no weight_map", `{"metadata":{}}`, "", "index has no weight_map"},
		{"bad index json", `{"weight_map":`, "", "index JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := Write(filepath.Join(dir, a), shardA, nil); err != nil {
				t.Fatal(err)
			}
			if err := Write(filepath.Join(dir, b), shardB, nil); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, IndexFile), []byte(tt.index), 0o644); err != nil {
				t.Fatal(err)
			}
			_, _, err := ReadDir(dir)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
			var fe *FormatError
			if tt.tensor != "" && (!errors.As(err, &fe) || fe.Tensor != tt.tensor || !strings.HasSuffix(fe.Path, IndexFile)) {
				t.Errorf("err = %#v, want a FormatError on %s naming tensor %q", err, IndexFile, tt.tensor)
			}
		})
	}

	t.Run("shards disagree on metadata", func(t *testing.T) {
		dir := t.TempDir()
		Write(filepath.Join(dir, a), shardA, map[string]string{"step": "1"})
		Write(filepath.Join(dir, b), shardB, map[string]string{"step": "2"})
		os.WriteFile(filepath.Join(dir, IndexFile), []byte(`{"weight_map":{"a":"`+a+`","b":"`+b+`","c":"`+b+`"}}`), 0o644)
		if _, _, err := ReadDir(dir); err == nil || !strings.Contains(err.Error(), `shards disagree on metadata "step"`) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("valid base", func(t *testing.T) {
		dir := t.TempDir()
		Write(filepath.Join(dir, a), shardA, nil)
		Write(filepath.Join(dir, b), shardB, nil)
		os.WriteFile(filepath.Join(dir, IndexFile), []byte(`{"metadata":{"total_size":4},"weight_map":{"a":"`+a+`","b":"`+b+`","c":"`+b+`"}}`), 0o644)
		got, _, err := ReadDir(dir)
		if err != nil {
			t.Fatalf("the base of the table is itself rejected: %v", err)
		}
		if names := slices.Sorted(func(yield func(string) bool) {
			for k := range got {
				if !yield(k) {
					return
				}
			}
		}); !slices.Equal(names, []string{"a", "b", "c"}) {
			t.Errorf("tensors %v", names)
		}
	})
}
