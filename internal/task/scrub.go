package task

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Artefacts that can hold code a task removed or a fix it expects, and that
// a model could mine instead of writing the code: byte-compiled Python,
// type-checker and test-runner caches, compiled objects and binaries,
// coverage data, editor and patch backups. Directories are removed whole.
var (
	scrubDirs = map[string]bool{
		"__pycache__": true, ".mypy_cache": true, ".pytest_cache": true, ".ruff_cache": true,
		".hypothesis": true, ".tox": true, ".nox": true, "htmlcov": true, ".gocache": true,
		".pyre": true, ".pytype": true, ".eggs": true, ".cache": true, ".git": true,
	}
	scrubSuffixes = []string{
		".pyc", ".pyo", ".class", ".o", ".a", ".so", ".dylib", ".dll", ".exe", ".test",
		".coverprofile", ".orig", ".rej", ".bak", ".swp", ".swo", "~",
	}
	scrubNames = map[string]bool{
		".coverage": true, "coverage.out": true, "coverage.xml": true, "cover.out": true,
		"c.out": true, ".DS_Store": true, "nohup.out": true,
	}
	// binaryMagic are the first bytes of compiled executables and objects.
	binaryMagic = [][]byte{
		[]byte("\x7fELF"), {0xfe, 0xed, 0xfa, 0xce}, {0xfe, 0xed, 0xfa, 0xcf},
		{0xcf, 0xfa, 0xed, 0xfe}, {0xce, 0xfa, 0xed, 0xfe}, []byte("MZ"),
		{0xca, 0xfe, 0xba, 0xbe}, []byte("!<arch>\n"),
	}
)

// Scrub removes from the tree at root every artefact that could hold code
// beyond the tree's sources (see the lists above), including nested .git
// directories, and returns the removed paths relative to root, sorted.
// Symlinks are removed when their name matches, never followed.
func Scrub(root string) ([]string, error) {
	var removed []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		name := d.Name()
		if d.IsDir() {
			if scrubDirs[name] {
				removed = append(removed, filepath.ToSlash(rel)+"/")
				if err := os.RemoveAll(p); err != nil {
					return err
				}
				return filepath.SkipDir
			}
			return nil
		}
		if !artefact(p, name, d) {
			return nil
		}
		removed = append(removed, filepath.ToSlash(rel))
		return os.Remove(p)
	})
	if err != nil {
		return removed, fmt.Errorf("scrub %s: %w", root, err)
	}
	sort.Strings(removed)
	return removed, nil
}

func artefact(p, name string, d fs.DirEntry) bool {
	if scrubNames[name] || strings.HasPrefix(name, ".coverage.") || strings.HasPrefix(name, "#") && strings.HasSuffix(name, "#") {
		return true
	}
	for _, s := range scrubSuffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	if !d.Type().IsRegular() {
		return false
	}
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 8)
	n, _ := f.Read(head)
	head = head[:n]
	for _, m := range binaryMagic {
		if bytes.HasPrefix(head, m) {
			// "MZ" and 0xcafebabe also begin text by chance; an
			// executable's header is followed by binary bytes.
			if len(m) < 4 && !binaryTail(head) {
				continue
			}
			return true
		}
	}
	return false
}

func binaryTail(head []byte) bool {
	for _, b := range head {
		if b == 0 || b > 0x7e {
			return true
		}
	}
	return false
}
