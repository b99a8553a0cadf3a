package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/verisim/verisim/internal/train/run"
)

func (a *app) sftCmd() *cobra.Command {
	var (
		o     run.SFTOptions
		optim optimFlags
	)
	c := &cobra.Command{
		Use:   "sft --model DIR --out DIR (--data FILE | --from-solutions)",
		Short: "Fine-tune a model on agent episodes, training only the model's own tokens",
		Long: `Supervised fine-tuning with the built-in trainer: cross-entropy on the
tokens the model itself wrote (its replies and tool calls), with prompts and
tool outputs masked out.

--data reads a trajectory file (verisim rollout's trajectories.jsonl) and
trains on the exact token ids each ok episode recorded.

--from-solutions builds one demonstration per task under --tasks from its
reference solution: the agent's system prompt and tools, the task's
instruction, read_file calls of the files the solution changes, write_file
calls with the solution's content, any remaining solve.sh commands as a
run_terminal_cmd call, the tools' real results, and a short answer. No
sandbox is needed; see docs/mid-training.md.

Before and after training, --eval-tasks tasks held out of training (chosen
by a hash of their id) are given to the model as the agent would give
them, and the fraction of --eval-samples sampled replies that hold
well-formed tool calls is reported. --out receives checkpoint/,
metrics.jsonl and loss.png as verisim pretrain writes them.`,
		Example: `  verisim sft --model runs/tiny-go/checkpoint --from-solutions --out runs/tiny-sft
  verisim sft --model runs/tiny-go/checkpoint --data run/trajectories.jsonl --tasks tasks --out runs/tiny-sft`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Schedule = optim.schedule()
			o.Progress, o.IsTerminal = os.Stderr, stderrIsTerminal()
			s, err := run.SFT(cmd.Context(), o)
			if err != nil {
				return runErr(err)
			}
			if s.EvalTasks > 0 {
				fmt.Printf("well-formed tool calls on %d held-out tasks × %d samples: before %.0f%%, after %.0f%%\n",
					s.EvalTasks, s.EvalSamples, 100*s.Before.WellFormedRate(), 100*s.After.WellFormedRate())
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&o.ModelDir, "model", "", "model directory to start from (config.json, weights, tokenizer.json)")
	f.StringVar(&o.Out, "out", "", "directory for the checkpoint, metrics.jsonl and loss.png")
	f.StringVar(&o.Data, "data", "", "trajectory file to train on")
	f.BoolVar(&o.FromSolutions, "from-solutions", false, "train on demonstrations built from the tasks' reference solutions")
	f.StringVar(&o.Tasks, "tasks", "tasks", "task suite for --from-solutions and the tool-call evaluation")
	f.IntVar(&o.Epochs, "epochs", 2, "passes over the training data")
	f.IntVar(&o.Batch, "batch", 4, "sequences per step")
	optim.register(f, 5e-4, "a tenth of the steps")
	f.IntVar(&o.MaxLen, "max-len", 4096, "leave out sequences longer than this many tokens")
	f.IntVar(&o.EvalTasks, "eval-tasks", 6, "tasks held out of training to evaluate tool calls on (0: no evaluation)")
	f.IntVar(&o.EvalSamples, "eval-samples", 2, "replies sampled per held-out task")
	f.IntVar(&o.EvalMaxTokens, "eval-max-tokens", 128, "longest reply sampled in the evaluation")
	f.Float64Var(&o.Temperature, "temperature", 0.7, "sampling temperature of the evaluation")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the data order and of the evaluation's sampling")
	return c
}
