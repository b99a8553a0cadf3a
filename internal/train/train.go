package train

import (
	"context"
	"errors"
)

// Loss functions a Datum can be trained with.
const (
	// LossCrossEntropy is Σ_t w_t · −log p(tok_t | tok_<t): next-token
	// prediction weighted per position (pretraining: all ones; SFT: 1 on
	// the model's own tokens, 0 on prompts and tool outputs).
	LossCrossEntropy = "cross_entropy"
	// LossImportanceSampling is Σ_t −w_t · A_t · exp(lp_t − blp_t), the
	// policy-gradient surrogate corrected for the behaviour policy that
	// sampled the tokens (lp: the trainer's logprob, blp: the server's).
	LossImportanceSampling = "importance_sampling"
)

// ErrNonFinite reports a loss or gradient that is NaN or infinite; the
// step's gradients are discarded and the weights are untouched.
var ErrNonFinite = errors.New("non-finite loss")

// Datum is one sequence to train on or score. Position t ≥ 1 of Tokens is
// predicted from Tokens[:t]; per-position slices have len(Tokens) entries
// and their entry 0 is ignored (nothing predicts the first token).
type Datum struct {
	Tokens []int32 `json:"tokens"`
	// Weights scales each position's term of the loss; 0 masks it out.
	// Nil means 1 everywhere but position 0.
	Weights []float32 `json:"weights,omitzero"`
	// Advantages, for LossImportanceSampling: A_t per position.
	Advantages []float32 `json:"advantages,omitzero"`
	// BehaviourLogprobs are the logprobs the sampling server reported for
	// each token (0 where it did not sample it); used by
	// LossImportanceSampling and for the parity metrics.
	BehaviourLogprobs []float32 `json:"behaviour_logprobs,omitzero"`
	// Routes, for mixture-of-experts models: the experts the server routed
	// each position to, [position][layer·k + j] as model.KVCache.Routes
	// returns them; when present (one entry per token; an empty entry
	// routes its position afresh) the trainer replays them instead of
	// routing afresh. A dense model refuses them.
	Routes [][]int32 `json:"routes,omitzero"`
}

// Batch is what one ForwardBackward call trains on.
type Batch struct {
	Data []Datum `json:"data"`
	// Loss is LossCrossEntropy (the default) or LossImportanceSampling.
	Loss string `json:"loss,omitzero"`
}

// Metrics describe one ForwardBackward call.
type Metrics struct {
	// Loss is the batch's loss divided by Tokens (the mean per weighted
	// token), the figure training curves plot.
	Loss float64 `json:"loss"`
	// Tokens is the number of positions with a nonzero weight.
	Tokens int `json:"tokens"`
	// SumWeights is Σ w_t, the normaliser of Loss.
	SumWeights float64 `json:"sum_weights"`
	// KL metrics between the trainer's and the behaviour logprobs, over
	// positions that have a behaviour logprob: max |lp − blp| and the k3
	// estimator mean(exp(blp−lp) − (blp−lp) − 1). Zero when the batch has
	// none.
	MaxLogprobGap float64 `json:"max_logprob_gap,omitzero"`
	KLk3          float64 `json:"kl_k3,omitzero"`
	// Seconds spent in forward and backward.
	ForwardSeconds  float64 `json:"forward_seconds"`
	BackwardSeconds float64 `json:"backward_seconds"`
}

// StepResult describes one optimiser step.
type StepResult struct {
	Step         int     `json:"step"`
	LearningRate float64 `json:"learning_rate"`
	// GradNorm is the global L2 norm of the accumulated gradient before
	// clipping.
	GradNorm float64 `json:"grad_norm"`
	// Clipped says the gradient was scaled down to the clip norm.
	Clipped bool `json:"clipped,omitzero"`
}

// Trainer is what an RL loop or a pretraining run drives. The built-in
// backend (New) implements it on the engine's own model; the remote
// client (Dial) speaks the same operations over HTTP to any server that
// implements docs/trainer-api.md, such as a PyTorch trainer.
//
// Gradients accumulate over ForwardBackward calls until OptimStep applies
// and clears them, so a large batch can be sent in pieces.
type Trainer interface {
	// ForwardBackward computes the batch's loss and adds its gradient to
	// the accumulated one.
	ForwardBackward(ctx context.Context, b Batch) (Metrics, error)
	// OptimStep applies the accumulated gradient (averaged over the
	// weighted tokens since the last step), clips it, steps the learning
	// rate schedule and clears the gradient.
	OptimStep(ctx context.Context) (StepResult, error)
	// Logprobs scores each datum: out[i][t] is log p(Tokens[t] | Tokens[:t])
	// (out[i][0] = 0), with no effect on gradients.
	Logprobs(ctx context.Context, data []Datum) ([][]float32, error)
	// Save writes a checkpoint the engine can load (config.json,
	// safetensors weights, the tokenizer if the trainer has one) plus the
	// optimiser state, tagged with version, to dir.
	Save(ctx context.Context, dir, version string) error
	// Load restores weights and optimiser state saved by Save.
	Load(ctx context.Context, dir string) error
}

// ErrBadInput is wrapped by errors for a batch, datum or request that can
// never succeed as given (a token outside the vocabulary, mismatched
// lengths, an unknown loss); remote servers answer it with HTTP 400.
var ErrBadInput = errors.New("invalid trainer input")
