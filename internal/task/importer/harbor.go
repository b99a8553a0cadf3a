package importer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/verisim/verisim/internal/task"
)

// harborConfig is task.toml of a Harbor task, both the original layout
// (version = "1.0", author and tags under [metadata]) and the newer one
// (schema_version, a [task] table with name, authors and keywords). Keys
// verisim has no use for are ignored, as Harbor itself does.
type harborConfig struct {
	Source string `toml:"source"` // the dataset the task came from
	Task   struct {
		Name        string `toml:"name"`
		Description string `toml:"description"`
		Authors     []struct {
			Name  string `toml:"name"`
			Email string `toml:"email"`
		} `toml:"authors"`
		Keywords []string `toml:"keywords"`
	} `toml:"task"`
	Metadata map[string]any `toml:"metadata"`
	Verifier struct {
		TimeoutSec *float64          `toml:"timeout_sec"`
		Env        map[string]string `toml:"env"`
	} `toml:"verifier"`
	Agent struct {
		TimeoutSec *float64 `toml:"timeout_sec"`
	} `toml:"agent"`
	Environment struct {
		CPUs          float64 `toml:"cpus"`
		MemoryMB      int64   `toml:"memory_mb"`
		Memory        string  `toml:"memory"`
		StorageMB     int64   `toml:"storage_mb"`
		Storage       string  `toml:"storage"`
		GPUs          int     `toml:"gpus"`
		AllowInternet *bool   `toml:"allow_internet"`
		DockerImage   string  `toml:"docker_image"`
	} `toml:"environment"`
}

// harborDefaultTimeout is what Harbor gives the agent and the verifier when
// task.toml does not say: the task's author tuned the task against it.
const harborDefaultTimeout = 600 * time.Second

// Harbor files and directories, relative to a task directory.
const (
	harborInstruction = "instruction.md"
	harborConfigFile  = "task.toml"
	harborTestScript  = "tests/test.sh"
	harborDockerfile  = "environment/Dockerfile"
	// Where Harbor's test.sh writes the reward (a number from 0 to 1).
	harborRewardFile = "/logs/verifier/reward.txt"
)

// Harbor imports the Harbor (or Terminal-Bench 2) task directory dir into
// outDir/<task name> and returns that directory. The task's machine starts
// from an empty workspace; its environment must need no image build (see
// ErrNeedsImageBuild). The tests go to /tests and run as root with
// bash /tests/test.sh, which writes its reward to /logs/verifier/reward.txt;
// timeouts and resources come from task.toml.
func Harbor(ctx context.Context, dir string, outDir string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	instruction, err := os.ReadFile(filepath.Join(dir, harborInstruction))
	if err != nil {
		return "", missing(dir, harborInstruction, err, "it holds the task's instruction")
	}
	if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(harborTestScript))); err != nil {
		return "", missing(dir, harborTestScript, err, "it is the verifier that grades the task")
	}
	cfgFile := filepath.Join(dir, harborConfigFile)
	var cfg harborConfig
	if _, err := toml.DecodeFile(cfgFile, &cfg); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			hint := "every Harbor task has one"
			if _, e := os.Stat(filepath.Join(dir, "task.yaml")); e == nil {
				hint = "task.yaml here suggests a Terminal-Bench 1 task; convert it with Harbor's terminal-bench adapter first"
			}
			return "", fmt.Errorf("%s: missing (%s)", cfgFile, hint)
		}
		return "", fmt.Errorf("%s: %w", cfgFile, err)
	}
	env, err := harborEnvironment(dir)
	if err != nil {
		return "", err
	}
	if cfg.Environment.GPUs > 0 {
		return "", fmt.Errorf("%s: [environment] gpus = %d: verisim machines have no GPUs", cfgFile, cfg.Environment.GPUs)
	}
	limits, err := harborLimits(cfgFile, &cfg)
	if err != nil {
		return "", err
	}

	name := cfg.Task.Name
	if name == "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return "", err
		}
		name = filepath.Base(abs)
	}
	id := taskID(path.Base(name))
	t := &task.Task{
		ID:          id,
		Instruction: strings.TrimSpace(strings.ReplaceAll(string(instruction), "\r\n", "\n")),
		Repo:        task.Repo{Dir: "repo", Name: env.workspaceName()},
		Grade: task.Grade{
			Command:     verifierCommand(cfg.Verifier.Env),
			Format:      task.FormatExit,
			Reward:      task.RewardPass,
			Timeout:     seconds(cfg.Verifier.TimeoutSec),
			TestsTarget: "/tests",
			RewardFile:  harborRewardFile,
			User:        "root",
		},
		Timeouts: task.Timeouts{Agent: seconds(cfg.Agent.TimeoutSec)},
		LimitsS:  limits,
		Tags:     harborTags(&cfg),
		Meta:     harborMeta(name, &cfg, env),
	}
	if strings.TrimSpace(t.Instruction) == "" {
		return "", fmt.Errorf("%s: empty; a task needs an instruction", filepath.Join(dir, harborInstruction))
	}

	st, err := newStaging(outDir)
	if err != nil {
		return "", err
	}
	out, err := func() (string, error) {
		tdir, err := st.dir(id)
		if err != nil {
			return "", err
		}
		// An empty plain tree: the agent starts in an empty workspace, as in
		// Harbor's freshly built container.
		if err := os.Mkdir(filepath.Join(tdir, t.Repo.Dir), 0o755); err != nil {
			return "", err
		}
		if err := task.CopyTree(filepath.Join(dir, "tests"), filepath.Join(tdir, task.TestsDir)); err != nil {
			return "", fmt.Errorf("copy tests: %w", err)
		}
		if fi, err := os.Stat(filepath.Join(dir, "solution")); err == nil && fi.IsDir() {
			if err := task.CopyTree(filepath.Join(dir, "solution"), filepath.Join(tdir, task.SolutionDir)); err != nil {
				return "", fmt.Errorf("copy solution: %w", err)
			}
		}
		if err := task.WriteFile(tdir, t); err != nil {
			return "", err
		}
		done, err := st.commit()
		if err != nil {
			return "", err
		}
		return done[0], nil
	}()
	if err != nil {
		st.abort()
		return "", fmt.Errorf("import %s: %w", dir, err)
	}
	return out, nil
}

func missing(dir, rel string, err error, why string) error {
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: missing (%s)", p, why)
	}
	return fmt.Errorf("%s: %w", p, err)
}

// harborEnvironment checks that the task's environment needs no build and
// returns what its Dockerfile says. A task without a Dockerfile (a prebuilt
// docker_image) has nothing to check.
func harborEnvironment(dir string) (*dockerfile, error) {
	for _, compose := range []string{"docker-compose.yaml", "docker-compose.yml", "compose.yaml"} {
		p := filepath.Join(dir, "environment", compose)
		if _, err := os.Stat(p); err == nil {
			return nil, fmt.Errorf("%s: a multi-container environment %w; verisim runs tasks on its own images", p, ErrNeedsImageBuild)
		}
	}
	p := filepath.Join(dir, filepath.FromSlash(harborDockerfile))
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return &dockerfile{}, nil
	}
	if err != nil {
		return nil, err
	}
	return parseDockerfile(p, data)
}

// harborLimits writes [environment]'s resources as task limits.
func harborLimits(file string, cfg *harborConfig) (string, error) {
	e := cfg.Environment
	var parts []string
	mem, disk := e.MemoryMB, e.StorageMB
	var err error
	if mem == 0 && e.Memory != "" {
		if mem, err = megabytes(e.Memory); err != nil {
			return "", fmt.Errorf("%s: [environment] memory: %w", file, err)
		}
	}
	if disk == 0 && e.Storage != "" {
		if disk, err = megabytes(e.Storage); err != nil {
			return "", fmt.Errorf("%s: [environment] storage: %w", file, err)
		}
	}
	if mem < 0 || disk < 0 || e.CPUs < 0 {
		return "", fmt.Errorf("%s: [environment]: resources cannot be negative", file)
	}
	if mem > 0 {
		parts = append(parts, fmt.Sprintf("memory=%dm", mem))
	}
	if e.CPUs > 0 {
		parts = append(parts, "cpus="+strconv.FormatFloat(e.CPUs, 'f', -1, 64))
	}
	if disk > 0 {
		parts = append(parts, fmt.Sprintf("disk=%dm", disk))
	}
	return strings.Join(parts, ","), nil
}

// megabytes reads Harbor's size strings ("2G", "512M", "1.5Gi", "2048")
// as mebibytes; a bare number is already in megabytes.
func megabytes(s string) (int64, error) {
	v := strings.ToUpper(strings.TrimSpace(s))
	v = strings.TrimSuffix(strings.TrimSuffix(v, "B"), "I")
	mult := 1.0
	if n := len(v); n > 0 {
		switch v[n-1] {
		case 'K':
			mult = 1.0 / 1024
		case 'M':
			mult = 1
		case 'G':
			mult = 1024
		case 'T':
			mult = 1024 * 1024
		}
		if v[n-1] < '0' || v[n-1] > '9' {
			v = v[:n-1]
		}
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("%q is not a size; write e.g. 2G or 512M", s)
	}
	return int64(f*mult + 0.5), nil
}

func seconds(s *float64) time.Duration {
	if s == nil || *s <= 0 {
		return harborDefaultTimeout
	}
	return time.Duration(*s * float64(time.Second)).Round(time.Second)
}

// verifierCommand runs test.sh as Harbor does: with [verifier] env set and
// /logs/verifier present, since test.sh writes its reward there.
func verifierCommand(env map[string]string) string {
	cmd := "mkdir -p " + path.Dir(harborRewardFile) + " && "
	for _, k := range slices.Sorted(maps.Keys(env)) {
		cmd += k + "=" + task.ShellQuote(env[k]) + " "
	}
	return cmd + "bash /tests/test.sh"
}

func harborTags(cfg *harborConfig) []string {
	var tags []string
	if l, ok := cfg.Metadata["tags"].([]any); ok {
		for _, v := range l {
			tags = append(tags, fmt.Sprint(v))
		}
	}
	tags = append(tags, cfg.Task.Keywords...)
	return union(tags, nil)
}

// harborMeta records where the task came from, and the task's own
// [metadata] (difficulty, category, author, ...) flattened to strings.
func harborMeta(name string, cfg *harborConfig, env *dockerfile) map[string]string {
	meta := map[string]string{}
	for k, v := range cfg.Metadata {
		if k != "tags" {
			flatten(meta, k, v)
		}
	}
	ours := map[string]string{"source": "harbor", "harbor_task": name}
	if cfg.Task.Description != "" {
		ours["description"] = cfg.Task.Description
	}
	var authors []string
	for _, a := range cfg.Task.Authors {
		if a.Email != "" {
			authors = append(authors, a.Name+" <"+a.Email+">")
		} else {
			authors = append(authors, a.Name)
		}
	}
	if len(authors) > 0 {
		ours["authors"] = strings.Join(authors, ", ")
	}
	if cfg.Source != "" {
		ours["dataset"] = cfg.Source
	}
	if img := cfg.Environment.DockerImage; img != "" {
		ours["image"] = img
	} else if len(env.images) > 0 {
		ours["image"] = env.images[len(env.images)-1]
	}
	if ai := cfg.Environment.AllowInternet; ai != nil {
		ours["allow_internet"] = strconv.FormatBool(*ai)
	}
	for k, v := range ours {
		if _, clash := meta[k]; clash {
			meta["harbor_"+k] = meta[k]
		}
		meta[k] = v
	}
	return meta
}

// flatten writes a TOML value as strings: tables as dotted keys, lists of
// plain values joined with commas, anything else as JSON.
func flatten(out map[string]string, key string, v any) {
	switch v := v.(type) {
	case string:
		out[key] = v
	case map[string]any:
		for k, sub := range v {
			flatten(out, key+"."+k, sub)
		}
	case []any:
		parts := make([]string, 0, len(v))
		for _, e := range v {
			switch e.(type) {
			case map[string]any, []any:
				data, _ := json.Marshal(v)
				out[key] = string(data)
				return
			}
			parts = append(parts, fmt.Sprint(e))
		}
		out[key] = strings.Join(parts, ", ")
	default:
		out[key] = fmt.Sprint(v)
	}
}
