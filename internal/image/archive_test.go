package image

import (
	"archive/tar"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// twoLayers is an image whose second layer whites out a file, makes a
// directory opaque, and adds a symlink and a hard link. With opqLast the
// opaque marker comes after an entry of the same directory, which must
// survive it.
func twoLayers(t testing.TB, opqLast bool) [][]byte {
	lower := makeTar(t, []entry{
		{name: "etc/", typ: tar.TypeDir},
		{name: "etc/passwd", body: "root:x:0:0:root:/root:/bin/bash\n"},
		{name: "etc/old", body: "old"},
		{name: "bin", typ: tar.TypeSymlink, link: "usr/bin"},
		{name: "usr/", typ: tar.TypeDir},
		{name: "usr/bin/", typ: tar.TypeDir},
		{name: "usr/bin/tool", body: "#!/bin/sh\necho tool\n", mode: 0o755},
		{name: "usr/bin/su", body: "su", mode: 0o4755},
		{name: "opt/app/", typ: tar.TypeDir},
		{name: "opt/app/a", body: "a"},
		{name: "opt/app/b", body: "b"},
		{name: "opt/app/sub/deep", body: "deep"},
		{name: "keep/x", body: "x"},
	})
	upperEntries := []entry{
		{name: "etc/.wh.old"},
		{name: "opt/app/c", body: "c"},
		{name: "usr/bin/link", typ: tar.TypeSymlink, link: "tool"},
		{name: "usr/bin/tool2", typ: tar.TypeLink, link: "usr/bin/tool"},
		{name: "home/user/", typ: tar.TypeDir, uid: 1000, gid: 1000, mode: 0o750},
		{name: "home/user/notes.txt", body: "notes", uid: 1000, gid: 1000},
		{name: "keep/y", body: "y"},
	}
	opq := entry{name: "opt/app/.wh..wh..opq"}
	if opqLast {
		upperEntries = append(upperEntries, opq)
	} else {
		upperEntries = append([]entry{opq}, upperEntries...)
	}
	return [][]byte{lower, makeTar(t, upperEntries)}
}

func TestResolveArchive(t *testing.T) {
	forms := []archiveForm{
		{},
		{gzipOuter: true},
		{gzipLayers: true},
		{oci: true},
		{oci: true, gzipLayers: true},
		{oci: true, gzipLayers: true, gzipOuter: true},
		{oci: true, nestedIndex: true},
	}
	for i, form := range forms {
		t.Run(form.String(), func(t *testing.T) {
			dir := t.TempDir()
			ext := ".tar"
			if form.gzipOuter {
				ext = ".tar.gz"
				if i%2 == 1 {
					ext = ".tgz"
				}
			}
			ar := writeArchive(t, filepath.Join(dir, "image"+ext), twoLayers(t, i%2 == 0), form)
			s := NewStore(filepath.Join(dir, "store"))
			im, err := s.Resolve(t.Context(), ar)
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if len(im.Layers) != 1 || im.Ref != ar || len(im.Binds) != 0 {
				t.Fatalf("image = %+v", im)
			}
			root := im.Layers[0]
			checkFlattened(t, root)

			for path, want := range map[string]string{
				"/etc/passwd":           "root:x:0:0:root:/root:/bin/bash\n",
				"/bin/tool":             "#!/bin/sh\necho tool\n",
				"/usr/bin/link":         "#!/bin/sh\necho tool\n",
				"/opt/app/c":            "c",
				"/home/user/notes.txt":  "notes",
				"/usr/bin/../../keep/y": "y",
			} {
				got, err := im.ReadFile(path)
				if err != nil || string(got) != want {
					t.Errorf("ReadFile(%s) = %q, %v; want %q", path, got, err, want)
				}
			}
			if _, err := im.ReadFile("/etc/old"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("ReadFile(/etc/old) error = %v, want fs.ErrNotExist", err)
			}
		})
	}
}

// checkFlattened checks the tree twoLayers makes.
func checkFlattened(t *testing.T, root string) {
	t.Helper()
	for _, gone := range []string{"etc/old", "etc/.wh.old", "opt/app/a", "opt/app/b", "opt/app/sub", "opt/app/.wh..wh..opq"} {
		if _, err := os.Lstat(filepath.Join(root, gone)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s should not exist (err %v)", gone, err)
		}
	}
	for name, want := range map[string]string{"opt/app/c": "c", "keep/x": "x", "keep/y": "y", "etc/passwd": "root:x:0:0:root:/root:/bin/bash\n"} {
		got, err := os.ReadFile(filepath.Join(root, name))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", name, got, err, want)
		}
	}
	if got, err := os.Readlink(filepath.Join(root, "usr/bin/link")); err != nil || got != "tool" {
		t.Errorf("usr/bin/link -> %q, %v; want tool", got, err)
	}
	if got, err := os.Readlink(filepath.Join(root, "bin")); err != nil || got != "usr/bin" {
		t.Errorf("bin -> %q, %v; want usr/bin", got, err)
	}
	tool, err := os.Stat(filepath.Join(root, "usr/bin/tool"))
	if err != nil {
		t.Fatal(err)
	}
	tool2, err := os.Stat(filepath.Join(root, "usr/bin/tool2"))
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(tool, tool2) {
		t.Error("usr/bin/tool2 is not a hard link to usr/bin/tool")
	}
	if tool.Mode().Perm() != 0o755 {
		t.Errorf("usr/bin/tool mode = %v, want 0755", tool.Mode())
	}
	if !tool.ModTime().Equal(testTime) {
		t.Errorf("usr/bin/tool mtime = %v, want %v", tool.ModTime(), testTime)
	}
	if su, err := os.Stat(filepath.Join(root, "usr/bin/su")); err != nil || su.Mode()&fs.ModeSetuid == 0 {
		t.Errorf("usr/bin/su lost its setuid bit: %v %v", su.Mode(), err)
	}
	home, err := os.Stat(filepath.Join(root, "home/user"))
	if err != nil {
		t.Fatal(err)
	}
	if home.Mode().Perm() != 0o750 || !home.ModTime().Equal(testTime) {
		t.Errorf("home/user mode %v mtime %v, want 0750 %v", home.Mode(), home.ModTime(), testTime)
	}
	if os.Geteuid() == 0 {
		notes, err := os.Stat(filepath.Join(root, "home/user/notes.txt"))
		if err != nil {
			t.Fatal(err)
		}
		if uid, gid := fileOwner(notes); uid != 1000 || gid != 1000 {
			t.Errorf("home/user/notes.txt owned by %d:%d, want 1000:1000", uid, gid)
		}
	}
}

// checkNothingLeft checks that a failed resolve left no entry or temporary
// file in the store.
func checkNothingLeft(t *testing.T, store string) {
	t.Helper()
	for _, sub := range []string{KindArchive, "tmp"} {
		if names := dirNames(t, filepath.Join(store, sub)); len(names) > 0 {
			t.Errorf("%s/ holds %v after a failed resolve", sub, names)
		}
	}
}

func TestResolveArchiveUnsafe(t *testing.T) {
	ok := makeTar(t, []entry{{name: "etc/passwd", body: "root"}, {name: "usr/bin/", typ: tar.TypeDir}})
	cases := []struct {
		name  string
		layer []entry
		want  string
	}{
		{"dotdot", []entry{{name: "../escape", body: "x"}}, `"../escape" escapes the root`},
		{"inner dotdot", []entry{{name: "a/../../escape", body: "x"}}, "escapes the root"},
		{"absolute dotdot", []entry{{name: "/../escape", body: "x"}}, "escapes the root"},
		{"hardlink out", []entry{{name: "pw", typ: tar.TypeLink, link: "../../etc/passwd"}}, "escapes the root"},
		{"hardlink missing", []entry{{name: "pw", typ: tar.TypeLink, link: "nope"}}, "missing"},
		{"whiteout dotdot", []entry{{name: "etc/.wh..."}}, "bad whiteout"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ar := writeArchive(t, filepath.Join(dir, "bad.tar"), [][]byte{ok, makeTar(t, tc.layer)}, archiveForm{oci: true})
			store := filepath.Join(dir, "store")
			_, err := NewStore(store).Resolve(t.Context(), ar)
			if !errors.Is(err, ErrBadArchive) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), ar) {
				t.Fatalf("Resolve error = %v; want ErrBadArchive naming %s and saying %q", err, ar, tc.want)
			}
			if _, err := os.Lstat(filepath.Join(dir, "escape")); err == nil {
				t.Error("an entry was written outside the root")
			}
			checkNothingLeft(t, store)
		})
	}
}

// Symlinks in the archive may point anywhere, but writing through them must
// stay inside the root, as if the root were "/".
func TestResolveArchiveSymlinkEscape(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(dir, "outside")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	unique := filepath.Base(dir) // a name no one else uses
	layer := makeTar(t, []entry{
		{name: "etc/passwd", body: "root"},
		{name: "usr/bin/", typ: tar.TypeDir},
		{name: "abs", typ: tar.TypeSymlink, link: outside},
		{name: "root", typ: tar.TypeSymlink, link: "/"},
		{name: "up", typ: tar.TypeSymlink, link: "../../../../../../../.."},
		{name: "abs/a", body: "a"},
		{name: "root/tmp/" + unique, body: "b"},
		{name: "up/" + unique + "-c", body: "c"},
		{name: "up/etc/passwd", body: "overwritten"},
	})
	ar := writeArchive(t, filepath.Join(dir, "links.tar"), [][]byte{layer}, archiveForm{})
	im, err := NewStore(filepath.Join(dir, "store")).Resolve(t.Context(), ar)
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	root := im.Layers[0]
	if names := dirNames(t, outside); len(names) > 0 {
		t.Errorf("wrote %v outside the root", names)
	}
	for _, p := range []string{"/tmp/" + unique, "/" + unique + "-c"} {
		if _, err := os.Lstat(p); err == nil {
			os.Remove(p)
			t.Errorf("wrote %s on the host", p)
		}
	}
	for name, want := range map[string]string{
		filepath.Join(outside[1:], "a"): "a",
		"tmp/" + unique:                 "b",
		unique + "-c":                   "c",
		"etc/passwd":                    "overwritten",
	} {
		if got, err := os.ReadFile(filepath.Join(root, name)); err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q inside the root", name, got, err, want)
		}
	}
}

func TestResolveArchiveCorrupt(t *testing.T) {
	good := twoLayers(t, false)
	truncate := func(t *testing.T, path string) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data[:len(data)*2/3], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name  string
		make  func(t *testing.T, path string)
		want  string
		isErr error // also wrapped, besides ErrBadArchive
	}{
		{name: "missing file", make: func(*testing.T, string) {}, want: "no such file", isErr: fs.ErrNotExist},
		{name: "empty", make: func(t *testing.T, p string) { os.WriteFile(p, nil, 0o644) }, want: "no files"},
		{name: "garbage", make: func(t *testing.T, p string) { os.WriteFile(p, []byte(strings.Repeat("not a tar file ", 100)), 0o644) }, want: "read tar"},
		{name: "bad gzip", make: func(t *testing.T, p string) { os.WriteFile(p, []byte{0x1f, 0x8b, 8, 0, 1, 2, 3}, 0o644) }, want: "decompress"},
		{name: "zstd", make: func(t *testing.T, p string) { os.WriteFile(p, []byte{0x28, 0xb5, 0x2f, 0xfd, 0}, 0o644) }, want: "zstd"},
		{name: "no manifest", make: func(t *testing.T, p string) {
			os.WriteFile(p, makeTar(t, []entry{{name: "etc/passwd", body: "x"}}), 0o644)
		}, want: "neither an OCI layout"},
		{name: "bad manifest json", make: func(t *testing.T, p string) {
			os.WriteFile(p, makeTar(t, []entry{{name: "manifest.json", body: "[{"}}), 0o644)
		}, want: "parse manifest.json"},
		{name: "manifest names missing layer", make: func(t *testing.T, p string) {
			cfg := `{"rootfs":{"diff_ids":["sha256:` + strings.Repeat("0", 64) + `"]}}`
			os.WriteFile(p, makeTar(t, []entry{
				{name: "c.json", body: cfg},
				{name: "manifest.json", body: `[{"Config":"c.json","Layers":["nope/layer.tar"]}]`},
			}), 0o644)
		}, want: "missing nope/layer.tar"},
		{name: "diff id mismatch", make: func(t *testing.T, p string) {
			cfg := `{"rootfs":{"diff_ids":["sha256:` + strings.Repeat("0", 64) + `"]}}`
			os.WriteFile(p, makeTar(t, []entry{
				{name: "c.json", body: cfg},
				{name: "l/layer.tar", body: string(good[0])},
				{name: "manifest.json", body: `[{"Config":"c.json","Layers":["l/layer.tar"]}]`},
			}), 0o644)
		}, want: "does not match diff ID"},
		{name: "no diff ids", make: func(t *testing.T, p string) {
			os.WriteFile(p, makeTar(t, []entry{
				{name: "c.json", body: `{}`},
				{name: "l/layer.tar", body: string(good[0])},
				{name: "manifest.json", body: `[{"Config":"c.json","Layers":["l/layer.tar"]}]`},
			}), 0o644)
		}, want: "lists 0 layers, manifest 1"},
		{name: "oci blob digest mismatch", make: func(t *testing.T, p string) {
			writeArchive(t, p, good, archiveForm{oci: true, gzipLayers: true})
			data, _ := os.ReadFile(p)
			// Flip a byte inside the first layer's compressed data, which
			// starts a few blocks into the archive.
			data[3*512+100] ^= 0xff
			os.WriteFile(p, data, 0o644)
		}, want: "layer blobs/sha256/"},
		{name: "truncated", make: func(t *testing.T, p string) {
			writeArchive(t, p, good, archiveForm{})
			truncate(t, p)
		}, want: "read tar"},
		{name: "truncated gzip", make: func(t *testing.T, p string) {
			writeArchive(t, p, good, archiveForm{oci: true, gzipOuter: true})
			truncate(t, p)
		}, want: "decompress"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ar := filepath.Join(dir, "image.tar")
			tc.make(t, ar)
			store := filepath.Join(dir, "store")
			_, err := NewStore(store).Resolve(t.Context(), ar)
			if !errors.Is(err, ErrBadArchive) || !strings.Contains(err.Error(), ar) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Resolve error = %v; want ErrBadArchive naming %s and saying %q", err, ar, tc.want)
			}
			if tc.isErr != nil && !errors.Is(err, tc.isErr) {
				t.Errorf("error %v does not wrap %v", err, tc.isErr)
			}
			checkNothingLeft(t, store)
		})
	}
}

func TestResolveArchiveCache(t *testing.T) {
	dir := t.TempDir()
	ar := writeArchive(t, filepath.Join(dir, "a.tar.gz"), twoLayers(t, false), archiveForm{oci: true, gzipOuter: true})
	s := NewStore(filepath.Join(dir, "store"))
	first, err := s.Resolve(t.Context(), ar)
	if err != nil {
		t.Fatal(err)
	}
	// A file an unpack would not make shows whether it ran again.
	marker := filepath.Join(first.Layers[0], "marker")
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(ar)
	if err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(dir, "copy.tar.gz")
	if err := os.WriteFile(copyPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{ar, copyPath} { // the memo, then the digest
		again, err := s.Resolve(t.Context(), ref)
		if err != nil {
			t.Fatal(err)
		}
		if again.Layers[0] != first.Layers[0] {
			t.Errorf("Resolve(%s) layer = %s, want the cached %s", ref, again.Layers[0], first.Layers[0])
		}
		if _, err := os.Stat(marker); err != nil {
			t.Errorf("Resolve(%s) unpacked again: %v", ref, err)
		}
	}
	if got := dirNames(t, filepath.Join(s.dir, KindArchive)); len(got) != 1 {
		t.Errorf("oci/ holds %v, want one entry", got)
	}
}

func TestResolveArchiveConcurrent(t *testing.T) {
	dir := t.TempDir()
	ar := writeArchive(t, filepath.Join(dir, "a.tar"), twoLayers(t, true), archiveForm{oci: true, gzipLayers: true})
	s := NewStore(filepath.Join(dir, "store"))
	const n = 6
	layers := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			// Separate stores share the directory, like separate processes.
			im, err := NewStore(s.dir).Resolve(t.Context(), ar)
			errs[i] = err
			if err == nil {
				layers[i] = im.Layers[0]
			}
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || layers[i] != layers[0] {
			t.Errorf("resolve %d: %s, %v; want %s", i, layers[i], errs[i], layers[0])
		}
	}
	checkFlattened(t, layers[0])
	if got := dirNames(t, filepath.Join(s.dir, "tmp")); len(got) > 0 {
		t.Errorf("tmp/ holds %v", got)
	}
}

func TestUnpackDevices(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making device nodes needs root")
	}
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"gone": "lower"})
	layer := makeTar(t, []entry{
		{name: "dev/null", typ: tar.TypeChar, mode: 0o666, dev: [2]int64{1, 3}},
		{name: "fifo", typ: tar.TypeFifo, mode: 0o600},
		{name: "gone", typ: tar.TypeChar}, // an overlayfs whiteout: 0/0
	})
	if err := unpackLayer(t.Context(), root, strings.NewReader(string(layer))); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(root, "fifo")); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("fifo: %v %v", fi, err)
	}
	fi, err := os.Lstat(filepath.Join(root, "dev/null"))
	if err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
		t.Fatalf("dev/null: %v %v", fi, err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Rdev != 0x103 {
		t.Errorf("dev/null rdev = %#x, want 1:3 as in the archive", st.Rdev)
	}
	if _, err := os.Lstat(filepath.Join(root, "gone")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a 0/0 character device in a layer should delete gone: %v", err)
	}
}
