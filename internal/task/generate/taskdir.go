package generate

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/verisim/verisim/internal/task"
)

// exists reports whether outDir already has an entry named id.
func exists(outDir, id string) bool {
	_, err := os.Lstat(filepath.Join(outDir, id))
	return err == nil
}

// generated is a verified task ready to be written.
type generated struct {
	task *task.Task
	// repo is the module tree the agent starts from.
	repo edits
	// tests are the hidden test files, by module-relative path.
	tests map[string][]byte
	// solution are the original files solve.sh copies back.
	solution map[string][]byte
}

// write writes the task to outDir/<id>, whole or not at all: it is built
// under a temporary name in outDir and renamed into place.
func (m *module) write(outDir string, g *generated) (dir string, retErr error) {
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(outDir, ".generate-"+g.task.ID+"-*")
	if err != nil {
		return "", err
	}
	defer func() {
		if retErr != nil {
			os.RemoveAll(tmp)
		}
	}()
	if err := m.writeTree(filepath.Join(tmp, g.task.Repo.Dir), g.repo); err != nil {
		return "", fmt.Errorf("write repo: %w", err)
	}
	for rel, data := range g.tests {
		if err := writeFile(filepath.Join(tmp, task.TestsDir, filepath.FromSlash(rel)), data, 0o644); err != nil {
			return "", err
		}
	}
	var cp strings.Builder
	for rel, data := range g.solution {
		if err := writeFile(filepath.Join(tmp, task.SolutionDir, "files", filepath.FromSlash(rel)), data, 0o644); err != nil {
			return "", err
		}
		fmt.Fprintf(&cp, "cp \"$SOLUTION_DIR\"/files/%s %s\n", task.ShellQuote(rel), task.ShellQuote(rel))
	}
	solve := "#!/bin/bash\n# Put back the original code.\nset -euo pipefail\n" + cp.String()
	if err := os.WriteFile(filepath.Join(tmp, task.SolutionDir, task.SolveScript), []byte(solve), 0o755); err != nil {
		return "", err
	}
	if err := task.WriteFile(tmp, g.task); err != nil {
		return "", err
	}
	dir = filepath.Join(outDir, g.task.ID)
	if err := os.Rename(tmp, dir); err != nil {
		if exists(outDir, g.task.ID) {
			return "", fmt.Errorf("task %s appeared in %s meanwhile: %w", g.task.ID, outDir, fs.ErrExist)
		}
		return "", err
	}
	return dir, nil
}

// existingMeta returns the metadata of the tasks in outDir whose ids start
// with prefix, so that a run does not make again a task an earlier run
// made under another name.
func existingMeta(outDir, prefix string) []map[string]string {
	entries, err := os.ReadDir(outDir)
	if err != nil {
		return nil
	}
	var metas []map[string]string
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		t, err := task.Load(filepath.Join(outDir, e.Name()))
		if err != nil {
			continue
		}
		metas = append(metas, t.Meta)
	}
	return metas
}

// taskID is task.IDFrom with a fallback for names with nothing usable.
func taskID(name string) string {
	if id := task.IDFrom(name); id != "" {
		return id
	}
	return "x"
}
