package image

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// FuzzUnpackLayer feeds tar streams to the unpacker over a root whose lower
// layer already holds symlinks pointing out of it. raw is used as it is;
// script describes entries that are written as a well-formed tar, so that
// mutations explore names and links rather than header checksums. Whatever
// the input, the unpacker must not panic and must not touch anything
// outside the root.
func FuzzUnpackLayer(f *testing.F) {
	seeds := []string{
		"d|etc/||\nf|etc/passwd||root\nl|bin|usr/bin|",
		"f|../escape||x",
		"f|out/pwned||x\nf|abs/pwned||x",
		"l|new|../..|\nf|new/pwned||x",
		"l|new|/|\nf|new/outside/pwned||x\nf|new/abs/x||y",
		"d|out||\nf|out/.wh.sentinel||\nf|out/.wh..wh..opq||",
		"f|.wh.out||\nf|abs/.wh..wh..opq||",
		"h|hl|out/sentinel|\nf|hl||overwrite",
		"h|hl|../outside/sentinel|",
		"h|hl|abs/sentinel|\nh|hl2|/out/sentinel|",
		"f|out||replace the link\np|x/y/z||",
		"l|loop|loop/a|\nf|loop/a/b||x",
		"l|a|b|\nl|b|a|\nf|a/x||y",
		"c|dev/null|1:3|\nc|gone||",
	}
	for _, s := range seeds {
		f.Add(scriptTar(s), s)
	}
	f.Fuzz(func(t *testing.T, raw []byte, script string) {
		for _, data := range [][]byte{raw, scriptTar(script)} {
			base := t.TempDir()
			root := filepath.Join(base, "root")
			outside := filepath.Join(base, "outside")
			writeFiles(t, base, map[string]string{
				"outside/sentinel": "keep",
				"root/out":         "->../outside",
				"root/abs":         "->" + outside,
			})
			_ = unpackLayer(t.Context(), root, bytes.NewReader(data))
			if got := dirNames(t, base); !slices.Equal(got, []string{"outside", "root"}) {
				t.Fatalf("the directory around the root holds %v", got)
			}
			if got := dirNames(t, outside); !slices.Equal(got, []string{"sentinel"}) {
				t.Fatalf("outside holds %v", got)
			}
			fi, err := os.Lstat(filepath.Join(outside, "sentinel"))
			if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 {
				t.Fatalf("sentinel changed: %v %v", fi, err)
			}
			if got, err := os.ReadFile(filepath.Join(outside, "sentinel")); err != nil || string(got) != "keep" {
				t.Fatalf("sentinel = %q, %v", got, err)
			}
			if _, _, nlink := inode(fi); nlink != 1 {
				t.Fatalf("sentinel has %d links; one was made from inside the root", nlink)
			}
		}
	})
}

// scriptTar writes a tar stream from lines "type|name|link|body", type
// being one of f(ile) d(ir) l(symlink) h(ardlink) c(har device, link
// "major:minor") p(fifo). Entries the tar writer refuses are left out.
func scriptTar(script string) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, line := range strings.Split(script, "\n") {
		fields := strings.SplitN(line, "|", 4)
		if len(fields) < 2 {
			continue
		}
		for len(fields) < 4 {
			fields = append(fields, "")
		}
		h := &tar.Header{Name: fields[1], Linkname: fields[2], Mode: 0o644, ModTime: testTime}
		switch fields[0] {
		case "d":
			h.Typeflag, h.Mode = tar.TypeDir, 0o755
		case "l":
			h.Typeflag = tar.TypeSymlink
		case "h":
			h.Typeflag = tar.TypeLink
		case "c":
			h.Typeflag, h.Linkname = tar.TypeChar, ""
			major, minor, _ := strings.Cut(fields[2], ":")
			h.Devmajor, _ = strconv.ParseInt(major, 10, 16)
			h.Devminor, _ = strconv.ParseInt(minor, 10, 16)
		case "p":
			h.Typeflag, h.Linkname = tar.TypeFifo, ""
		default:
			h.Typeflag, h.Linkname, h.Size = tar.TypeReg, "", int64(len(fields[3]))
		}
		if tw.WriteHeader(h) != nil {
			continue
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte(fields[3]))
		}
	}
	tw.Close()
	return buf.Bytes()
}
