package image

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
)

var (
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// archive is an image archive indexed for random access to its members.
type archive struct {
	name    string // the archive's path, for messages
	f       *os.File
	members map[string]member
}

type member struct {
	off, size int64
	link      string // a symlink or hard link member: the member it names
}

func (a *archive) Close() error { return a.f.Close() }

// bad makes an error wrapping ErrBadArchive that names the archive.
func (a *archive) bad(format string, args ...any) error {
	return fmt.Errorf("%w %s: %s", ErrBadArchive, a.name, fmt.Sprintf(format, args...))
}

// openArchive opens and indexes the archive at name. A gzip-compressed
// archive is first decompressed into an unlinked file under tmpDir.
func openArchive(name, tmpDir string) (_ *archive, retErr error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrBadArchive, name, err)
	}
	defer func() {
		if retErr != nil {
			f.Close()
		}
	}()
	a := &archive{name: name, f: f, members: map[string]member{}}
	magic := make([]byte, 4)
	n, _ := io.ReadFull(f, magic)
	magic = magic[:n]
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	switch {
	case bytes.HasPrefix(magic, zstdMagic):
		return nil, a.bad("zstd compression is not supported; use plain tar or gzip")
	case bytes.HasPrefix(magic, gzipMagic):
		plain, err := gunzipToTemp(f, tmpDir)
		if err != nil {
			return nil, a.bad("%v", err)
		}
		f.Close()
		f, a.f = plain, plain
	}
	if err := a.index(); err != nil {
		return nil, err
	}
	return a, nil
}

func gunzipToTemp(r io.Reader, tmpDir string) (*os.File, error) {
	zr, err := gzip.NewReader(bufio.NewReader(r))
	if err != nil {
		return nil, fmt.Errorf("decompress: %w", err)
	}
	if err := os.MkdirAll(tmpDir, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(tmpDir, "archive-*.tar")
	if err != nil {
		return nil, err
	}
	// Unlinked at once: the open file is all we need, and nothing lingers
	// if the process dies.
	os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, zr); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("decompress: %w", err)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		tmp.Close()
		return nil, err
	}
	return tmp, nil
}

// index records where each member's data lies. archive/tar reads exactly
// the header blocks and seeks over data, so after Next the file offset is
// where the member's data starts.
func (a *archive) index() error {
	tr := tar.NewReader(a.f)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return a.bad("read tar: %v", err)
		}
		name := path.Clean("/" + hdr.Name)[1:]
		switch hdr.Typeflag {
		case tar.TypeReg: // the reader reports old-style regular files (TypeRegA) as TypeReg
			off, err := a.f.Seek(0, io.SeekCurrent)
			if err != nil {
				return err
			}
			a.members[name] = member{off: off, size: hdr.Size}
		case tar.TypeSymlink:
			target := hdr.Linkname
			if !path.IsAbs(target) {
				target = path.Join(path.Dir(name), target)
			}
			a.members[name] = member{link: path.Clean("/" + target)[1:]}
		case tar.TypeLink:
			a.members[name] = member{link: path.Clean("/" + hdr.Linkname)[1:]}
		}
	}
	if len(a.members) == 0 {
		return a.bad("no files in the archive")
	}
	return nil
}

// open returns the data of the member called name.
func (a *archive) open(name string) (*io.SectionReader, error) {
	for range maxSymlinks {
		m, ok := a.members[name]
		if !ok {
			return nil, a.bad("missing %s", name)
		}
		if m.link == "" {
			return io.NewSectionReader(a.f, m.off, m.size), nil
		}
		name = m.link
	}
	return nil, a.bad("too many links to %s", name)
}

// readAll reads a small member (a manifest or config), verifying its digest
// when one is given.
func (a *archive) readAll(name, digest string) ([]byte, error) {
	sr, err := a.open(name)
	if err != nil {
		return nil, err
	}
	const maxJSON = 64 << 20
	if sr.Size() > maxJSON {
		return nil, a.bad("%s is %d bytes, too large for metadata", name, sr.Size())
	}
	data, err := io.ReadAll(sr)
	if err != nil {
		return nil, a.bad("read %s: %v", name, err)
	}
	if digest != "" {
		h, want, err := newDigester(digest)
		if err != nil {
			return nil, a.bad("%s: %v", name, err)
		}
		h.Write(data)
		if got := hex.EncodeToString(h.Sum(nil)); got != want {
			return nil, a.bad("%s does not match its digest %s", name, digest)
		}
	}
	return data, nil
}

func (a *archive) readJSON(name, digest string, v any) error {
	data, err := a.readAll(name, digest)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return a.bad("parse %s: %v", name, err)
	}
	return nil
}

// newDigester returns a hash for an OCI digest ("sha256:<hex>") and the hex
// it must produce.
func newDigester(digest string) (hash.Hash, string, error) {
	alg, want, ok := strings.Cut(digest, ":")
	if !ok {
		return nil, "", fmt.Errorf("malformed digest %q", digest)
	}
	var h hash.Hash
	size := 0
	switch alg {
	case "sha256":
		h, size = sha256.New(), 64
	case "sha512":
		h, size = sha512.New(), 128
	default:
		return nil, "", fmt.Errorf("unsupported digest algorithm in %q", digest)
	}
	if len(want) != size || strings.Trim(want, "0123456789abcdef") != "" {
		return nil, "", fmt.Errorf("malformed digest %q", digest)
	}
	return h, want, nil
}

// blobName is where an OCI layout keeps the blob with digest.
func blobName(digest string) (string, error) {
	if _, _, err := newDigester(digest); err != nil {
		return "", err
	}
	alg, hexPart, _ := strings.Cut(digest, ":")
	return "blobs/" + alg + "/" + hexPart, nil
}

// imageSource is what an archive says the image is made of.
type imageSource struct {
	config []byte // the image config, verified
	layers []layerSource
}

type layerSource struct {
	member string // the archive member holding the layer
	digest string // the stored blob's digest, "" when the format has none
	diffID string // the uncompressed tar's digest, from the config
}

type descriptor struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Platform  *struct {
		Architecture string `json:"architecture"`
		OS           string `json:"os"`
	} `json:"platform,omitempty"`
}

type ociIndex struct {
	Manifests []descriptor `json:"manifests"`
}

type ociManifest struct {
	MediaType string       `json:"mediaType"`
	Config    descriptor   `json:"config"`
	Layers    []descriptor `json:"layers"`
	Manifests []descriptor `json:"manifests"` // set when this is an index
}

type imageConfig struct {
	RootFS struct {
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

// source reads the archive's manifests: an OCI layout (oci-layout +
// index.json) when there is one, else docker save's manifest.json.
func (a *archive) source() (*imageSource, error) {
	var src *imageSource
	var err error
	if _, ok := a.members["oci-layout"]; ok {
		src, err = a.ociSource()
	} else if _, ok := a.members["manifest.json"]; ok {
		src, err = a.dockerSource()
	} else {
		return nil, a.bad("neither an OCI layout (oci-layout, index.json) nor docker save output (manifest.json)")
	}
	if err != nil {
		return nil, err
	}
	var cfg imageConfig
	if err := json.Unmarshal(src.config, &cfg); err != nil {
		return nil, a.bad("parse image config: %v", err)
	}
	// The diff IDs pin every layer's content, which makes the config's
	// digest a sound cache key; an archive without them cannot be trusted.
	if len(cfg.RootFS.DiffIDs) != len(src.layers) {
		return nil, a.bad("image config lists %d layers, manifest %d", len(cfg.RootFS.DiffIDs), len(src.layers))
	}
	for i, id := range cfg.RootFS.DiffIDs {
		if _, _, err := newDigester(id); err != nil {
			return nil, a.bad("image config: %v", err)
		}
		src.layers[i].diffID = id
	}
	return src, nil
}

func (a *archive) dockerSource() (*imageSource, error) {
	var manifests []struct {
		Config string   `json:"Config"`
		Layers []string `json:"Layers"`
	}
	if err := a.readJSON("manifest.json", "", &manifests); err != nil {
		return nil, err
	}
	if len(manifests) == 0 || manifests[0].Config == "" {
		return nil, a.bad("manifest.json lists no image")
	}
	m := manifests[0]
	config, err := a.readAll(path.Clean("/" + m.Config)[1:], digestOfBlobName(m.Config))
	if err != nil {
		return nil, err
	}
	src := &imageSource{config: config}
	for _, l := range m.Layers {
		name := path.Clean("/" + l)[1:]
		src.layers = append(src.layers, layerSource{member: name, digest: digestOfBlobName(name)})
	}
	return src, nil
}

// digestOfBlobName recovers the digest from a name like blobs/sha256/<hex>,
// which newer docker save output uses.
func digestOfBlobName(name string) string {
	parts := strings.Split(path.Clean("/" + name)[1:], "/")
	if len(parts) != 3 || parts[0] != "blobs" {
		return ""
	}
	d := parts[1] + ":" + parts[2]
	if _, _, err := newDigester(d); err != nil {
		return ""
	}
	return d
}

const (
	mediaOCIIndex    = "application/vnd.oci.image.index.v1+json"
	mediaDockerIndex = "application/vnd.docker.distribution.manifest.list.v2+json"
)

func (a *archive) ociSource() (*imageSource, error) {
	var layout struct {
		Version string `json:"imageLayoutVersion"`
	}
	if err := a.readJSON("oci-layout", "", &layout); err != nil {
		return nil, err
	}
	if layout.Version == "" {
		return nil, a.bad("oci-layout has no imageLayoutVersion")
	}
	var idx ociIndex
	if err := a.readJSON("index.json", "", &idx); err != nil {
		return nil, err
	}
	descs := idx.Manifests
	// Follow nested indexes (multi-platform images) to one manifest.
	for depth := 0; ; depth++ {
		d, ok := pickManifest(descs)
		if !ok {
			return nil, a.bad("no image manifest in index.json")
		}
		if depth > 4 {
			return nil, a.bad("image indexes nest too deep")
		}
		name, err := blobName(d.Digest)
		if err != nil {
			return nil, a.bad("index: %v", err)
		}
		var m ociManifest
		if err := a.readJSON(name, d.Digest, &m); err != nil {
			return nil, err
		}
		if d.MediaType == mediaOCIIndex || d.MediaType == mediaDockerIndex || m.MediaType == mediaOCIIndex || m.MediaType == mediaDockerIndex || len(m.Manifests) > 0 {
			descs = m.Manifests
			continue
		}
		return a.manifestSource(m)
	}
}

func (a *archive) manifestSource(m ociManifest) (*imageSource, error) {
	cname, err := blobName(m.Config.Digest)
	if err != nil {
		return nil, a.bad("manifest config: %v", err)
	}
	config, err := a.readAll(cname, m.Config.Digest)
	if err != nil {
		return nil, err
	}
	src := &imageSource{config: config}
	for _, l := range m.Layers {
		name, err := blobName(l.Digest)
		if err != nil {
			return nil, a.bad("manifest layer: %v", err)
		}
		src.layers = append(src.layers, layerSource{member: name, digest: l.Digest})
	}
	return src, nil
}

// pickManifest prefers this machine's platform, then a manifest that names
// none, then the first; attestation manifests ("unknown") are skipped.
func pickManifest(descs []descriptor) (descriptor, bool) {
	var noPlatform, first *descriptor
	for i := range descs {
		d := &descs[i]
		if d.Platform == nil {
			if noPlatform == nil {
				noPlatform = d
			}
			continue
		}
		if d.Platform.OS == "linux" && d.Platform.Architecture == runtime.GOARCH {
			return *d, true
		}
		if first == nil && d.Platform.OS != "unknown" {
			first = d
		}
	}
	if noPlatform != nil {
		return *noPlatform, true
	}
	if first != nil {
		return *first, true
	}
	return descriptor{}, false
}

// unpackLayerFrom applies one layer of the archive onto root, checking the
// stored and uncompressed digests as the data streams past.
func (a *archive) unpackLayerFrom(ctx context.Context, root string, l layerSource) error {
	sr, err := a.open(l.member)
	if err != nil {
		return err
	}
	var blobHash hash.Hash
	var blobWant string
	var r io.Reader = sr
	if l.digest != "" {
		if blobHash, blobWant, err = newDigester(l.digest); err != nil {
			return a.bad("%s: %v", l.member, err)
		}
		r = io.TeeReader(sr, blobHash)
	}
	br := bufio.NewReaderSize(r, 1<<20)
	magic, _ := br.Peek(4)
	var data io.Reader = br
	switch {
	case bytes.HasPrefix(magic, zstdMagic):
		return a.bad("layer %s is zstd-compressed, which is not supported", l.member)
	case bytes.HasPrefix(magic, gzipMagic):
		zr, err := gzip.NewReader(br)
		if err != nil {
			return a.bad("layer %s: %v", l.member, err)
		}
		data = zr
	}
	diffHash, diffWant, err := newDigester(l.diffID)
	if err != nil {
		return a.bad("layer %s: %v", l.member, err)
	}
	tee := io.TeeReader(data, diffHash)
	if err := unpackLayer(ctx, root, tee); err != nil {
		if errors.Is(err, ErrBadArchive) {
			return a.bad("layer %s: %s", l.member, strings.TrimPrefix(err.Error(), ErrBadArchive.Error()+": "))
		}
		return fmt.Errorf("unpack layer %s of %s: %w", l.member, a.name, err)
	}
	// Hash what the tar reader did not need (end blocks, padding).
	if _, err := io.Copy(io.Discard, tee); err != nil {
		return a.bad("layer %s: %v", l.member, err)
	}
	if _, err := io.Copy(io.Discard, br); err != nil {
		return a.bad("layer %s: %v", l.member, err)
	}
	if got := hex.EncodeToString(diffHash.Sum(nil)); got != diffWant {
		return a.bad("layer %s does not match diff ID %s", l.member, l.diffID)
	}
	if blobHash != nil {
		if got := hex.EncodeToString(blobHash.Sum(nil)); got != blobWant {
			return a.bad("layer %s does not match its digest %s", l.member, l.digest)
		}
	}
	return nil
}

// resolveArchive unpacks an image archive into one flattened layer, cached
// by its config's digest.
func (s *Store) resolveArchive(ctx context.Context, ref string) (*Image, error) {
	abs, err := filepath.Abs(ref)
	if err != nil {
		return nil, err
	}
	if rootfs, ok := s.rememberedArchive(abs); ok {
		return &Image{Ref: abs, Layers: []string{rootfs}}, nil
	}
	a, err := openArchive(abs, filepath.Join(s.dir, "tmp"))
	if err != nil {
		return nil, err
	}
	defer a.Close()
	src, err := a.source()
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(src.config)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	id := "sha256-" + hex.EncodeToString(sum[:])
	rootfs, err := s.publish(ctx, publishOptions{
		kind: KindArchive,
		id:   id,
		meta: meta{Ref: abs, Digest: digest},
		fill: func(ctx context.Context, rootfs string) error {
			for _, l := range src.layers {
				if err := a.unpackLayerFrom(ctx, rootfs, l); err != nil {
					return err
				}
			}
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	s.rememberArchive(abs, id)
	return &Image{Ref: abs, Layers: []string{rootfs}}, nil
}

// Reading a large gzip-compressed archive only to learn its digest is slow,
// so the store remembers which entry an unchanged archive file unpacked to,
// keyed by the file's path, size, mtime and inode.
func (s *Store) archiveMemo(abs string) (string, bool) {
	fi, err := os.Stat(abs)
	if err != nil {
		return "", false
	}
	_, ino, _ := inode(fi)
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%d\x00%d\x00%d", abs, fi.Size(), fi.ModTime().UnixNano(), ino, changeTime(fi)))
	return filepath.Join(s.dir, KindArchive+"-refs", hex.EncodeToString(sum[:16])), true
}

func (s *Store) rememberedArchive(abs string) (string, bool) {
	memo, ok := s.archiveMemo(abs)
	if !ok {
		return "", false
	}
	id, err := os.ReadFile(memo)
	if err != nil || !strings.HasPrefix(string(id), "sha256-") || strings.ContainsAny(string(id), "/\n") {
		return "", false
	}
	rootfs := filepath.Join(s.entryDir(KindArchive, string(id)), "rootfs")
	return rootfs, isDir(rootfs)
}

func (s *Store) rememberArchive(abs, id string) {
	memo, ok := s.archiveMemo(abs)
	if !ok {
		return
	}
	// A lost memo only costs a re-read, so errors are ignored.
	if err := os.MkdirAll(filepath.Dir(memo), 0o755); err != nil {
		return
	}
	f, err := os.CreateTemp(filepath.Dir(memo), "memo-*")
	if err != nil {
		return
	}
	_, err = f.WriteString(id)
	if cerr := f.Close(); err == nil && cerr == nil && os.Rename(f.Name(), memo) == nil {
		return
	}
	os.Remove(f.Name())
}
