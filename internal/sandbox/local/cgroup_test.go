package local

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCgroupCreateErrors: a failed create reports its error (it used to
// panic cleaning up), and mkdirIn never reports a directory it did not
// make.
func TestCgroupCreateErrors(t *testing.T) {
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cs := &cgroupSetup{v1: map[string]string{"pids": notDir}}
	if cg, err := cs.create("0123456789ab", false); err == nil || cg != nil {
		t.Fatalf("create under a file: %v, %v; want an error", cg, err)
	}

	// A parent that vanishes again after every prepare.
	dir := filepath.Join(t.TempDir(), "parent", "child")
	calls := 0
	err := mkdirIn(dir, func() error { calls++; return nil })
	if err == nil {
		t.Fatal("mkdirIn reported success for a directory it could not make")
	}
	if calls != 2 {
		t.Errorf("prepare ran %d times, want 2 (three tries)", calls)
	}
	// One that prepare makes.
	err = mkdirIn(dir, func() error { return os.MkdirAll(filepath.Dir(dir), 0o755) })
	if fi, serr := os.Stat(dir); err != nil || serr != nil || !fi.IsDir() {
		t.Errorf("mkdirIn with a working prepare: %v, %v", err, serr)
	}
}
