package importer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/verisim/verisim/internal/task"
)

// staging holds the task directories one import writes, in a hidden
// directory inside the output directory (so the final rename stays on one
// file system and task.LoadSuite never sees half-written tasks).
type staging struct {
	out     string
	tmp     string
	created bool // out did not exist before this import
	ids     []string
}

func newStaging(outDir string) (*staging, error) {
	out, err := filepath.Abs(outDir)
	if err != nil {
		return nil, err
	}
	s := &staging{out: out}
	if _, err := os.Stat(out); errors.Is(err, fs.ErrNotExist) {
		s.created = true
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	if s.tmp, err = os.MkdirTemp(out, ".import-*"); err != nil {
		s.abort()
		return nil, fmt.Errorf("output directory: %w", err)
	}
	return s, nil
}

// dir makes the staging directory of task id. It refuses an id that is
// already in the output directory or already staged, since renaming over a
// task would mix two tasks' files.
func (s *staging) dir(id string) (string, error) {
	for _, have := range s.ids {
		if have == id {
			return "", fmt.Errorf("task id %s comes twice in this import", id)
		}
	}
	if _, err := os.Lstat(filepath.Join(s.out, id)); err == nil {
		return "", fmt.Errorf("%s already exists; remove it or import into another directory", filepath.Join(s.out, id))
	}
	d := filepath.Join(s.tmp, id)
	if err := os.Mkdir(d, 0o755); err != nil {
		return "", err
	}
	s.ids = append(s.ids, id)
	return d, nil
}

// commit moves every staged task into place and returns their paths. If a
// rename fails, the tasks already moved are removed again.
func (s *staging) commit() ([]string, error) {
	var done []string
	for _, id := range s.ids {
		to := filepath.Join(s.out, id)
		if err := os.Rename(filepath.Join(s.tmp, id), to); err != nil {
			for _, d := range done {
				os.RemoveAll(d)
			}
			s.abort()
			return nil, fmt.Errorf("move task %s into place: %w", id, err)
		}
		done = append(done, to)
	}
	os.RemoveAll(s.tmp)
	return done, nil
}

// abort removes everything this import wrote, including the output
// directory when the import created it and nothing else is in it.
func (s *staging) abort() {
	if s.tmp != "" {
		os.RemoveAll(s.tmp)
	}
	if s.created {
		os.Remove(s.out) // fails, as it should, if someone else wrote there meanwhile
	}
}

const solveHeader = "#!/bin/bash\nset -euo pipefail\n"

// taskID is task.IDFrom with a fallback for names with nothing usable.
func taskID(name string) string {
	if id := task.IDFrom(name); id != "" {
		return id
	}
	return "task"
}
