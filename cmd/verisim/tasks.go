package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/verisim/verisim/internal/image"
	"github.com/verisim/verisim/internal/machine"
	"github.com/verisim/verisim/internal/persona"
	"github.com/verisim/verisim/internal/reward"
	"github.com/verisim/verisim/internal/rollout"
	"github.com/verisim/verisim/internal/sandbox"
	"github.com/verisim/verisim/internal/task"
	"github.com/verisim/verisim/internal/task/generate"
	"github.com/verisim/verisim/internal/task/importer"
)

// suiteFlags choose tasks from a suite directory.
type suiteFlags struct {
	dir  string
	ids  []string
	tags []string
}

func (s *suiteFlags) register(c *cobra.Command) {
	f := c.Flags()
	f.StringVar(&s.dir, "tasks", "tasks", "task suite directory (a task directory, or a directory of them)")
	f.StringSliceVar(&s.ids, "task", nil, "only these task ids (repeatable, or comma-separated)")
	f.StringSliceVar(&s.tags, "tag", nil, "only tasks with one of these tags")
}

// load reads the suite and applies the filters.
func (s *suiteFlags) load() ([]*task.Task, error) {
	all, err := task.LoadSuite(s.dir)
	if err != nil {
		return nil, withCode(exitTask, err)
	}
	var out []*task.Task
	for _, t := range all {
		if len(s.ids) > 0 && !slices.Contains(s.ids, t.ID) {
			continue
		}
		if len(s.tags) > 0 && !slices.ContainsFunc(t.Tags, func(tag string) bool { return slices.Contains(s.tags, tag) }) {
			continue
		}
		out = append(out, t)
	}
	for _, id := range s.ids {
		if !slices.ContainsFunc(all, func(t *task.Task) bool { return t.ID == id }) {
			return nil, withCode(exitTask, fmt.Errorf("no task %q in %s; see verisim tasks ls --tasks %s", id, s.dir, s.dir))
		}
	}
	if len(out) == 0 {
		return nil, withCode(exitTask, fmt.Errorf("no task in %s matches --task/--tag", s.dir))
	}
	return out, nil
}

// envFlags describe the machines tasks run on.
type envFlags struct {
	image   string
	persona string
}

func (e *envFlags) register(c *cobra.Command) {
	f := c.Flags()
	f.StringVar(&e.image, "image", "host", `root filesystem: "host", a directory, an OCI archive (.tar) or a name from "verisim image build"`)
	f.StringVar(&e.persona, "persona", "", "persona YAML file (default: the built-in developer)")
}

// setup resolves what preparing tasks' machines needs.
func (a *app) taskSetup(ctx context.Context, e *envFlags) (rollout.Setup, error) {
	rt, err := a.runtime()
	if err != nil {
		return rollout.Setup{}, err
	}
	var p *persona.Persona
	if e.persona != "" {
		if p, err = persona.Load(e.persona); err != nil {
			return rollout.Setup{}, withCode(exitPersona, err)
		}
	}
	img, err := image.NewStore(filepath.Join(a.cfg.StateDir, "images")).Resolve(ctx, e.image)
	if err != nil {
		return rollout.Setup{}, withCode(exitImage, err)
	}
	lim, err := sandbox.ParseLimits(a.defaultLimits())
	if err != nil {
		return rollout.Setup{}, err
	}
	return rollout.Setup{
		Runtime:  rt,
		Machines: machine.NewBuilder(filepath.Join(a.cfg.StateDir, "layers")),
		Image:    img,
		Persona:  p,
		CacheDir: filepath.Join(a.cfg.StateDir, "repos"),
		Limits:   lim,
	}, nil
}

func (a *app) tasksCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "tasks",
		Short: "List, show, validate, import and generate tasks",
		Long: `A task is a directory: task.yaml (what the developer asks, where the code
comes from, how it is graded), the repository, hidden tests and a reference
solution. docs/task-format.md specifies it. The bundled suite is ./tasks.`,
	}
	c.AddCommand(a.tasksLsCmd(), a.tasksShowCmd(), a.tasksValidateCmd(), a.tasksGenCmd(), a.tasksImportCmd())
	return c
}

func (a *app) tasksLsCmd() *cobra.Command {
	var s suiteFlags
	c := &cobra.Command{
		Use:   "ls",
		Short: "List the tasks of a suite",
		Example: `  verisim tasks ls
  verisim tasks ls --tasks ~/suites/backend --tag go`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ts, err := s.load()
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tTAGS\tGRADE\tINSTRUCTION")
			for _, t := range ts {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", t.ID, strings.Join(t.Tags, ","), t.Grade.Format, clipLine(t.Instruction, 60))
			}
			return w.Flush()
		},
	}
	s.register(c)
	return c
}

func (a *app) tasksShowCmd() *cobra.Command {
	var s suiteFlags
	c := &cobra.Command{
		Use:   "show ID",
		Short: "Show one task",
		Example: `  verisim tasks show go-fix-duration-parse
  verisim tasks show --tasks ./my-task my-task`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErr("give one task id")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			s.ids = []string{args[0]}
			ts, err := s.load()
			if err != nil {
				return err
			}
			t := ts[0]
			data, err := task.Encode(t)
			if err != nil {
				return err
			}
			fmt.Printf("# %s\n%s", filepath.Join(t.Dir, task.FileName), data)
			fmt.Printf("# hidden tests: %d files; reference solution: %v\n", countFiles(t.TestsPath()), t.HasSolution())
			return nil
		},
	}
	s.register(c)
	return c
}

func countFiles(dir string) int {
	if dir == "" {
		return 0
	}
	n := 0
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return n
}

func (a *app) tasksValidateCmd() *cobra.Command {
	var (
		s           suiteFlags
		e           envFlags
		concurrency int
		asJSON      bool
	)
	c := &cobra.Command{
		Use:   "validate",
		Short: "Prove tasks: the reference solution passes, doing nothing does not",
		Long: `Prepares each task's machine as a rollout does (repository placed and scrubbed,
setup run, snapshot), then grades it twice in forks of the snapshot: once
with solution/solve.sh applied, which must pass, and once untouched, which
must not. Prints a table; exits 1 when a task fails.`,
		Example: `  verisim tasks validate
  verisim tasks validate --tasks ./tasks --task py-fix-csv-last-row --concurrency 4`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if concurrency <= 0 {
				return usageErr("--concurrency must be positive")
			}
			ts, err := s.load()
			if err != nil {
				return err
			}
			setup, err := a.taskSetup(cmd.Context(), &e)
			if err != nil {
				return err
			}
			return validateTasks(cmd.Context(), setup, ts, concurrency, asJSON)
		},
	}
	s.register(c)
	e.register(c)
	c.Flags().IntVar(&concurrency, "concurrency", 2, "tasks validated at once")
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per task instead of the table")
	return c
}

func validateTasks(ctx context.Context, setup rollout.Setup, ts []*task.Task, concurrency int, asJSON bool) error {
	verdicts := make([]*rollout.Verdict, len(ts))
	sem := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for i, t := range ts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			v := rollout.Validate(ctx, setup, t)
			verdicts[i] = v
			mu.Lock()
			done++
			mark := "ok"
			if !v.OK() {
				mark = "FAIL"
			}
			fmt.Fprintf(os.Stderr, "[%d/%d] %s %s (%.1fs)\n", done, len(ts), t.ID, mark, v.Duration.Seconds())
			mu.Unlock()
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return withCode(130, nil)
	}
	failed := 0
	if asJSON {
		enc := json.NewEncoder(os.Stdout)
		for _, v := range verdicts {
			out := map[string]any{"task": v.Task, "ok": v.OK(), "seconds": v.Duration.Seconds()}
			if v.Solution != nil {
				out["solution"] = map[string]any{"pass": v.Solution.Pass, "passed": v.Solution.Passed, "total": v.Solution.Total}
			}
			if v.Nothing != nil {
				out["nothing"] = map[string]any{"pass": v.Nothing.Pass, "passed": v.Nothing.Passed, "total": v.Nothing.Total}
			}
			if v.Err != nil {
				out["error"] = v.Err.Error()
			}
			enc.Encode(out)
		}
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	if !asJSON {
		fmt.Fprintln(w, "TASK\tSOLUTION\tNOTHING\tPREPARE\tTOTAL\tRESULT")
	}
	var problems []string
	for _, v := range verdicts {
		result := "ok"
		if !v.OK() {
			failed++
			result = "FAIL"
			problems = append(problems, fmt.Sprintf("%s: %v", v.Task, v.Err))
		}
		if !asJSON {
			fmt.Fprintf(w, "%s\t%s\t%s\t%.1fs\t%.1fs\t%s\n", v.Task, gradeCell(v.Solution), gradeCell(v.Nothing), v.Prepared.Seconds(), v.Duration.Seconds(), result)
		}
	}
	if !asJSON {
		w.Flush()
		fmt.Printf("%d of %d tasks valid\n", len(ts)-failed, len(ts))
	}
	if failed > 0 {
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, "verisim:", p)
		}
		return withCode(1, errors.New("some tasks are not valid"))
	}
	return nil
}

func gradeCell(r *reward.Result) string {
	if r == nil {
		return "-"
	}
	verdict := "fail"
	if r.Pass {
		verdict = "pass"
	}
	return fmt.Sprintf("%s %d/%d", verdict, r.Passed, r.Total)
}

func (a *app) tasksGenCmd() *cobra.Command {
	var (
		module, out string
		max         int
		seed        int64
	)
	c := &cobra.Command{
		Use:   "gen delete-feature|inject-bug --module DIR --out DIR",
		Short: "Generate tasks from a Go module",
		Long: `Makes tasks from real Go code whose tests pass offline:

  delete-feature  removes a tested exported function and the tests that call
                  it; the task is to add it back, the removed tests are the
                  hidden tests.
  inject-bug      mutates one expression the tests cover (a comparison, an
                  operator, a bound) so that tests fail; the task is to fix it.

Each candidate is checked by running the module's tests with the go command
before its task is written (the rest still builds and passes; the hidden
tests fail without the solution and pass with it). The repository of a
generated task holds no trace of the removed code: it gets a fresh history
and is scrubbed when a rollout places it. Validate the result with
"verisim tasks validate --tasks DIR".`,
		Example: `  verisim tasks gen delete-feature --module ~/go/pkg/mod/github.com/spf13/pflag@v1.0.9 --out gen/ --max 3
  verisim tasks gen inject-bug --module ./mylib --out gen/ --seed 7`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 || (args[0] != "delete-feature" && args[0] != "inject-bug") {
				return usageErr("say which generator: delete-feature or inject-bug")
			}
			if module == "" || out == "" {
				return usageErr("--module DIR (a Go module) and --out DIR are required")
			}
			if max <= 0 {
				return usageErr("--max must be positive")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			gen := generate.DeleteFeature
			if args[0] == "inject-bug" {
				gen = generate.InjectBug
			}
			dirs, err := gen(cmd.Context(), module, out, generate.Options{Max: max, Seed: seed, Log: a.log})
			for _, d := range dirs {
				fmt.Println(d)
			}
			if err != nil {
				return withCode(exitTask, err)
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&module, "module", "", "Go module directory to generate from (it is not modified)")
	f.StringVar(&out, "out", "", "directory to write the task directories into")
	f.IntVar(&max, "max", 3, "most tasks to write")
	f.Int64Var(&seed, "seed", 1, "seed for choosing candidates")
	return c
}

func (a *app) tasksImportCmd() *cobra.Command {
	var clone, out string
	c := &cobra.Command{
		Use:   "import swebench RECORDS.jsonl --clone DIR --out DIR | import harbor TASKDIR --out DIR",
		Short: "Import tasks from SWE-bench records or Harbor / Terminal-Bench directories",
		Long: `swebench: each JSON line (instance_id, repo, base_commit, problem_statement,
patch, test_patch, FAIL_TO_PASS, PASS_TO_PASS) becomes a task graded by
pytest on the listed tests, read from --clone, a local clone of the record's
repository that holds base_commit.

harbor: a Harbor / Terminal-Bench task directory (instruction.md, task.toml,
tests/test.sh, solution/solve.sh) becomes a task, when its environment needs
no image build; otherwise the error names the Dockerfile line that needs one.

Nothing is written unless every task imports.`,
		Example: `  verisim tasks import swebench lite.jsonl --clone ~/src/requests --out imported/
  verisim tasks import harbor ~/terminal-bench/tasks/hello-world --out imported/`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 || (args[0] != "swebench" && args[0] != "harbor") {
				return usageErr("give the format (swebench or harbor) and the file or directory to import")
			}
			if out == "" {
				return usageErr("--out DIR is required")
			}
			if args[0] == "swebench" && clone == "" {
				return usageErr("swebench needs --clone DIR: a local clone of the records' repository")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			var dirs []string
			var err error
			switch args[0] {
			case "swebench":
				var f *os.File
				if f, err = os.Open(args[1]); err != nil {
					return withCode(exitTask, err)
				}
				defer f.Close()
				dirs, err = importer.SWEBench(cmd.Context(), f, clone, out)
			case "harbor":
				var d string
				if d, err = importer.Harbor(cmd.Context(), args[1], out); err == nil {
					dirs = []string{d}
				}
			}
			if err != nil {
				return withCode(exitTask, err)
			}
			for _, d := range dirs {
				fmt.Println(d)
			}
			return nil
		},
	}
	c.Flags().StringVar(&clone, "clone", "", "local clone of the repository (swebench)")
	c.Flags().StringVar(&out, "out", "", "directory to write the task directories into")
	return c
}
