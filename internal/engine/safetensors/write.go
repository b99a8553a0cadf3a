package safetensors

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Write stores tensors and metadata at path in the safetensors format,
// atomically: the file appears whole, with its data fsynced, or not at all.
// The bytes are those the reference implementation would write for the same
// tensors (metadata keys, which it leaves in hash order, are sorted).
// A nil or empty metadata writes no "__metadata__" entry.
func Write(path string, tensors []Tensor, metadata map[string]string) error {
	hdr, ordered, err := prepare(tensors, metadata)
	if err != nil {
		return fmt.Errorf("safetensors: write %s: %w", path, err)
	}
	return writeAtomic(path, func(w io.Writer) error { return encode(w, hdr, ordered) })
}

// marshal is Write into memory.
func marshal(tensors []Tensor, metadata map[string]string) ([]byte, error) {
	hdr, ordered, err := prepare(tensors, metadata)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	err = encode(&buf, hdr, ordered)
	return buf.Bytes(), err
}

func encode(w io.Writer, hdr []byte, ordered []Tensor) error {
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(hdr)))
	if _, err := w.Write(n[:]); err != nil {
		return err
	}
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	for _, t := range ordered {
		if _, err := w.Write(t.Data); err != nil {
			return err
		}
	}
	return nil
}

// prepare checks the tensors, puts them in the reference layout order
// (falling dtype rank, then name) and builds the padded JSON header.
func prepare(tensors []Tensor, metadata map[string]string) ([]byte, []Tensor, error) {
	ordered := slices.Clone(tensors)
	seen := make(map[string]bool, len(tensors))
	for _, t := range ordered {
		if err := t.check(); err != nil {
			return nil, nil, err
		}
		switch {
		case t.Name == metadataKey:
			return nil, nil, fmt.Errorf("tensor name %q is reserved", metadataKey)
		case !utf8.ValidString(t.Name):
			return nil, nil, fmt.Errorf("tensor name %q is not valid UTF-8", t.Name)
		case seen[t.Name]:
			return nil, nil, fmt.Errorf("tensor %q appears twice", t.Name)
		}
		seen[t.Name] = true
	}
	slices.SortFunc(ordered, func(a, b Tensor) int {
		_, ra, _ := a.DType.info()
		_, rb, _ := b.DType.info()
		return cmp.Or(cmp.Compare(rb, ra), cmp.Compare(a.Name, b.Name))
	})

	hdr := []byte{'{'}
	if len(metadata) > 0 {
		hdr = appendJSONString(hdr, metadataKey)
		hdr = append(hdr, ":{"...)
		for i, k := range slices.Sorted(maps.Keys(metadata)) {
			v := metadata[k]
			if !utf8.ValidString(k) || !utf8.ValidString(v) {
				return nil, nil, fmt.Errorf("metadata %q: not valid UTF-8", k)
			}
			if i > 0 {
				hdr = append(hdr, ',')
			}
			hdr = appendJSONString(hdr, k)
			hdr = append(hdr, ':')
			hdr = appendJSONString(hdr, v)
		}
		hdr = append(hdr, '}')
	}
	var off int64
	for i, t := range ordered {
		if i > 0 || len(metadata) > 0 {
			hdr = append(hdr, ',')
		}
		hdr = appendJSONString(hdr, t.Name)
		hdr = append(hdr, `:{"dtype":`...)
		hdr = appendJSONString(hdr, string(t.DType))
		hdr = append(hdr, `,"shape":[`...)
		for j, d := range t.Shape {
			if j > 0 {
				hdr = append(hdr, ',')
			}
			hdr = strconv.AppendInt(hdr, int64(d), 10)
		}
		hdr = append(hdr, `],"data_offsets":[`...)
		hdr = strconv.AppendInt(hdr, off, 10)
		off += int64(len(t.Data))
		hdr = append(hdr, ',')
		hdr = strconv.AppendInt(hdr, off, 10)
		hdr = append(hdr, "]}"...)
	}
	hdr = append(hdr, '}')
	for len(hdr)%8 != 0 {
		hdr = append(hdr, ' ')
	}
	if len(hdr) > MaxHeaderSize {
		return nil, nil, fmt.Errorf("header of %d bytes exceeds the %d-byte limit", len(hdr), MaxHeaderSize)
	}
	return hdr, ordered, nil
}

// appendJSONString quotes s the way serde_json does, so headers match the
// reference byte for byte: only '"', '\\' and control characters are escaped
// (encoding/json would also escape <, >, & and U+2028/9).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\b':
			b = append(b, `\b`...)
		case c == '\f':
			b = append(b, `\f`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '\r':
			b = append(b, `\r`...)
		case c == '\t':
			b = append(b, `\t`...)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// writeAtomic creates path with the bytes fill writes: into a temporary file
// in the same directory, fsynced, then renamed over path, and the directory
// fsynced so the rename itself survives a crash.
func writeAtomic(path string, fill func(io.Writer) error) (retErr error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	defer func() {
		if retErr != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	w := bufio.NewWriterSize(f, 1<<20)
	if err := fill(w); err != nil {
		return fmt.Errorf("safetensors: write %s: %w", f.Name(), err)
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("safetensors: write %s: %w", f.Name(), err)
	}
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("safetensors: fsync %s: %w", f.Name(), err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("safetensors: close %s: %w", f.Name(), err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	return syncDir(dir)
}

// syncDir makes renames and removals in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("safetensors: fsync %s: %w", dir, err)
	}
	return nil
}
