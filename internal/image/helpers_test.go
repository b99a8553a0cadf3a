package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// entry is one member of a tar stream a test builds.
type entry struct {
	name     string
	typ      byte // tar.TypeReg when zero
	body     string
	link     string
	mode     int64
	uid, gid int
	mtime    time.Time
	dev      [2]int64 // major, minor of a device
}

var testTime = time.Date(2023, 4, 5, 6, 7, 8, 0, time.UTC)

func makeTar(t testing.TB, entries []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{
			Name:     e.name,
			Typeflag: e.typ,
			Linkname: e.link,
			Mode:     e.mode,
			Uid:      e.uid,
			Gid:      e.gid,
			ModTime:  e.mtime,
			Devmajor: e.dev[0],
			Devminor: e.dev[1],
			Format:   tar.FormatPAX,
		}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Mode == 0 {
			h.Mode = 0o644
			if h.Typeflag == tar.TypeDir {
				h.Mode = 0o755
			}
		}
		if h.ModTime.IsZero() {
			h.ModTime = testTime
		}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatalf("tar header %s: %v", e.name, err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func gzipBytes(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// archiveForm says how writeArchive lays an image out.
type archiveForm struct {
	oci         bool // OCI layout; else docker save (legacy <id>/layer.tar)
	gzipLayers  bool
	gzipOuter   bool
	nestedIndex bool // OCI: index.json → image index → manifest
}

func (f archiveForm) String() string {
	s := "docker"
	if f.oci {
		s = "oci"
	}
	if f.nestedIndex {
		s += "-nested"
	}
	if f.gzipLayers {
		s += "/gzip-layers"
	}
	if f.gzipOuter {
		s += "/gzip-archive"
	}
	return s
}

// writeArchive writes an image archive made of the given uncompressed
// layers to path and returns path.
func writeArchive(t testing.TB, path string, layers [][]byte, form archiveForm) string {
	t.Helper()
	var members []entry
	var diffIDs, layerNames []string
	type desc struct {
		MediaType string `json:"mediaType"`
		Digest    string `json:"digest"`
		Size      int    `json:"size"`
		Platform  any    `json:"platform,omitempty"`
	}
	var layerDescs []desc
	for i, l := range layers {
		diffIDs = append(diffIDs, "sha256:"+sha(l))
		blob, mt := l, "application/vnd.oci.image.layer.v1.tar"
		if form.gzipLayers {
			blob, mt = gzipBytes(t, l), mt+"+gzip"
		}
		if form.oci {
			name := "blobs/sha256/" + sha(blob)
			members = append(members, entry{name: name, body: string(blob)})
			layerDescs = append(layerDescs, desc{MediaType: mt, Digest: "sha256:" + sha(blob), Size: len(blob)})
		} else {
			name := fmt.Sprintf("layer%d/layer.tar", i)
			members = append(members, entry{name: fmt.Sprintf("layer%d/", i), typ: tar.TypeDir}, entry{name: name, body: string(blob)})
			layerNames = append(layerNames, name)
		}
	}
	config := mustJSON(t, map[string]any{
		"architecture": "amd64",
		"os":           "linux",
		"rootfs":       map[string]any{"type": "layers", "diff_ids": diffIDs},
	})
	if form.oci {
		members = append(members, entry{name: "blobs/sha256/" + sha(config), body: string(config)})
		manifest := mustJSON(t, map[string]any{
			"schemaVersion": 2,
			"mediaType":     "application/vnd.oci.image.manifest.v1+json",
			"config":        desc{MediaType: "application/vnd.oci.image.config.v1+json", Digest: "sha256:" + sha(config), Size: len(config)},
			"layers":        layerDescs,
		})
		members = append(members, entry{name: "blobs/sha256/" + sha(manifest), body: string(manifest)})
		top := desc{MediaType: "application/vnd.oci.image.manifest.v1+json", Digest: "sha256:" + sha(manifest), Size: len(manifest)}
		if form.nestedIndex {
			idx := mustJSON(t, map[string]any{
				"schemaVersion": 2,
				"mediaType":     mediaOCIIndex,
				"manifests": []desc{
					{MediaType: top.MediaType, Digest: "sha256:" + sha([]byte("attestation")), Size: 11, Platform: map[string]string{"os": "unknown", "architecture": "unknown"}},
					{MediaType: top.MediaType, Digest: top.Digest, Size: top.Size, Platform: map[string]string{"os": "linux", "architecture": "amd64"}},
				},
			})
			members = append(members, entry{name: "blobs/sha256/" + sha(idx), body: string(idx)})
			top = desc{MediaType: mediaOCIIndex, Digest: "sha256:" + sha(idx), Size: len(idx)}
		}
		members = append(members,
			entry{name: "oci-layout", body: `{"imageLayoutVersion":"1.0.0"}`},
			entry{name: "index.json", body: string(mustJSON(t, map[string]any{"schemaVersion": 2, "manifests": []desc{top}}))},
		)
	} else {
		cname := sha(config) + ".json"
		members = append(members,
			entry{name: cname, body: string(config)},
			entry{name: "manifest.json", body: string(mustJSON(t, []map[string]any{{"Config": cname, "RepoTags": []string{"test:latest"}, "Layers": layerNames}}))},
		)
	}
	data := makeTar(t, members)
	if form.gzipOuter {
		data = gzipBytes(t, data)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writeFiles creates files (name → content; a name ending in "/" is a
// directory, content "->target" a symlink) under dir.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		switch {
		case name[len(name)-1] == '/':
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		case len(content) > 2 && content[:2] == "->":
			if err := os.Symlink(content[2:], p); err != nil {
				t.Fatal(err)
			}
		default:
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// dirNames lists dir, or nil when it does not exist.
func dirNames(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
