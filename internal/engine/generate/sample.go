package generate

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Params controls one generation. The zero value is greedy decoding until a
// stop token or the end of the context.
type Params struct {
	// Temperature divides the logits before sampling; 0 is greedy.
	Temperature float64
	// TopP keeps the smallest set of most likely tokens whose probability
	// reaches TopP; 0 or 1 keeps all.
	TopP float64
	// TopK keeps the TopK most likely tokens; 0 keeps all.
	TopK int
	// Seed makes sampling reproducible; nil draws a random seed.
	Seed *uint64
	// MaxTokens caps the completion; 0 means until the context is full.
	MaxTokens int
	// Stop ends generation when the decoded completion contains one of
	// these strings; the string is cut from Result.Text.
	Stop []string
	// StopTokens end generation when sampled, in addition to the
	// tokenizer's EndOfText and ImEnd.
	StopTokens []int32
	// Logprobs asks for Result.Logprobs; Token.Logprob is always set.
	Logprobs bool
	// TopLogprobs is how many alternatives each Token carries in Top
	// (with Logprobs set), at most MaxTopLogprobs.
	TopLogprobs int
	// PromptLogprobs asks for Result.Prompt: each prompt token's logprob
	// given the tokens before it (with TopLogprobs alternatives when
	// Logprobs is set), from the prefill's own logits.
	PromptLogprobs bool
	// NoCompletion generates nothing (an API's max_tokens 0): with
	// PromptLogprobs the prompt is only scored.
	NoCompletion bool

	// LogitBias is added to the logits of the tokens it names before
	// sampling (OpenAI's logit_bias; each in [-100, 100]). Bias,
	// penalties and temperature shape what is sampled; the logprobs
	// reported are always the model's own (log-softmax of the raw
	// logits), as vLLM reports them by default.
	LogitBias map[int32]float32
	// PresencePenalty is subtracted from the logit of every token the
	// completion already holds, FrequencyPenalty once per time it does
	// (OpenAI's; each in [-2, 2]).
	PresencePenalty, FrequencyPenalty float64
}

// MaxLogitBias bounds each LogitBias entry, as in OpenAI's API; MaxPenalty
// bounds the penalties.
const (
	MaxLogitBias = 100
	MaxPenalty   = 2
)

// MaxTopLogprobs is the largest TopLogprobs accepted, as in OpenAI's API.
const MaxTopLogprobs = 20

// ErrParams is wrapped by the error for Params out of range.
var ErrParams = errors.New("invalid sampling params")

// Validate reports Params out of range, wrapping ErrParams.
func (p Params) Validate() error {
	switch {
	case p.Temperature < 0 || math.IsNaN(p.Temperature) || math.IsInf(p.Temperature, 0):
		return fmt.Errorf("%w: temperature %v, want >= 0", ErrParams, p.Temperature)
	case p.TopP < 0 || p.TopP > 1 || math.IsNaN(p.TopP):
		return fmt.Errorf("%w: top_p %v, want in [0, 1]", ErrParams, p.TopP)
	case p.TopK < 0:
		return fmt.Errorf("%w: top_k %d, want >= 0", ErrParams, p.TopK)
	case p.MaxTokens < 0:
		return fmt.Errorf("%w: max_tokens %d, want >= 0", ErrParams, p.MaxTokens)
	case p.TopLogprobs < 0 || p.TopLogprobs > MaxTopLogprobs:
		return fmt.Errorf("%w: top_logprobs %d, want in [0, %d]", ErrParams, p.TopLogprobs, MaxTopLogprobs)
	case !(math.Abs(p.PresencePenalty) <= MaxPenalty):
		return fmt.Errorf("%w: presence_penalty %v, want in [-%d, %d]", ErrParams, p.PresencePenalty, MaxPenalty, MaxPenalty)
	case !(math.Abs(p.FrequencyPenalty) <= MaxPenalty):
		return fmt.Errorf("%w: frequency_penalty %v, want in [-%d, %d]", ErrParams, p.FrequencyPenalty, MaxPenalty, MaxPenalty)
	}
	for id, b := range p.LogitBias {
		if id < 0 || !(math.Abs(float64(b)) <= MaxLogitBias) {
			return fmt.Errorf("%w: logit_bias for token %d is %v, want a token id and a bias in [-%d, %d]", ErrParams, id, b, MaxLogitBias, MaxLogitBias)
		}
	}
	for _, s := range p.Stop {
		if s == "" {
			return fmt.Errorf("%w: empty stop string", ErrParams)
		}
	}
	return nil
}

// Alt is one of the most likely tokens at a position, with its logprob.
type Alt struct {
	ID      int32
	Logprob float32
}

// Token is one sampled token: its id, its logprob under the model's raw
// distribution, and, when asked for, the most likely alternatives (most
// likely first, the sampled token among them only if it ranks there).
type Token struct {
	ID      int32
	Logprob float32
	Top     []Alt
}

// Sampler draws tokens from logits under one Params. It keeps its random
// state between calls, so a sequence of Sample calls is reproducible from
// the seed.
type Sampler struct {
	p     Params
	rng   *rand.Rand
	order []int32   // candidate ids, reused across calls
	probs []float64 // candidate weights, reused across calls
	keys  []uint32  // sort keys and scratch, reused across calls
	row   []float32 // logits shaped by bias and penalties, reused
	// counts is how often each token was sampled, for the penalties.
	counts map[int32]int
	tmp    []int32
}

// NewSampler returns a sampler for p, which must be valid.
func NewSampler(p Params) (*Sampler, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	seed := rand.Uint64()
	if p.Seed != nil {
		seed = *p.Seed
	}
	// The second PCG word is fixed so that the seed alone names the stream.
	return &Sampler{p: p, rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))}, nil
}

// Sample draws one token from logits (one row, vocab wide).
func (s *Sampler) Sample(logits []float32) Token {
	t := score(logits, s.pick(s.shaped(logits)), s.p)
	if s.p.PresencePenalty != 0 || s.p.FrequencyPenalty != 0 {
		if s.counts == nil {
			s.counts = map[int32]int{}
		}
		s.counts[t.ID]++
	}
	return t
}

// shaped returns logits with the bias and penalties applied, in a scratch
// row the Sampler owns, or logits itself when there are none.
func (s *Sampler) shaped(logits []float32) []float32 {
	if len(s.p.LogitBias) == 0 && len(s.counts) == 0 {
		return logits
	}
	s.row = append(s.row[:0], logits...)
	for id, b := range s.p.LogitBias {
		if int(id) < len(s.row) {
			s.row[id] += b
		}
	}
	for id, n := range s.counts {
		s.row[id] -= float32(s.p.PresencePenalty + float64(n)*s.p.FrequencyPenalty)
	}
	return s.row
}

// score is token id with its logprob under logits (one row), and the
// alternatives p asks for.
func score(logits []float32, id int32, p Params) Token {
	lse := logSumExp(logits)
	t := Token{ID: id, Logprob: float32(float64(logits[id]) - lse)}
	if p.Logprobs && p.TopLogprobs > 0 {
		t.Top = topAlts(logits, lse, p.TopLogprobs)
	}
	return t
}

func (s *Sampler) greedy() bool {
	return s.p.Temperature == 0 || s.p.TopK == 1
}

func (s *Sampler) pick(logits []float32) int32 {
	if s.greedy() {
		return argmax(logits)
	}
	// Candidates most likely first, ties by id.
	s.order, s.keys, s.tmp = sortByLogit(logits, s.order, s.keys, s.tmp)
	n := len(s.order)
	if s.p.TopK > 0 && s.p.TopK < n {
		n = s.p.TopK
	}
	top := float64(logits[s.order[0]])
	s.probs = s.probs[:0]
	var sum float64
	for _, id := range s.order[:n] {
		w := math.Exp((float64(logits[id]) - top) / s.p.Temperature)
		s.probs = append(s.probs, w)
		sum += w
	}
	if s.p.TopP > 0 && s.p.TopP < 1 {
		var cum float64
		for i, w := range s.probs {
			cum += w
			if cum >= s.p.TopP*sum {
				n = i + 1
				break
			}
		}
		sum = cum
	}
	u := s.rng.Float64() * sum
	for i, w := range s.probs[:n] {
		u -= w
		if u < 0 {
			return s.order[i]
		}
	}
	return s.order[n-1] // u within rounding of sum
}

// sortByLogit returns the ids 0 … len(logits)-1 ordered by logit, highest
// first, ties by lower id: an LSD radix sort on the logits' bits, four
// stable passes of 8 bits, so that sampling costs O(vocab) rather than a
// comparison sort's O(vocab log vocab) with a closure call per comparison
// (1.8 ms a token at a vocabulary of 8192, more than a decode step of a
// small model). order, keys and tmp are reused buffers.
func sortByLogit(logits []float32, order []int32, keys []uint32, tmp []int32) ([]int32, []uint32, []int32) {
	n := len(logits)
	order, tmp = growInt32(order, n), growInt32(tmp, n)
	if cap(keys) < 2*n {
		keys = make([]uint32, 2*n)
	}
	keys = keys[:2*n]
	k, ktmp := keys[:n], keys[n:]
	for i, v := range logits {
		b := math.Float32bits(v)
		// Map floats to unsigned integers in the same order, then invert
		// so that the highest logit sorts first; -0 and +0 tie.
		if v == 0 {
			b = 0
		}
		if b&(1<<31) != 0 {
			b = ^b
		} else {
			b |= 1 << 31
		}
		k[i], order[i] = ^b, int32(i)
	}
	var count [256]int
	for shift := 0; shift < 32; shift += 8 {
		clear(count[:])
		for _, key := range k {
			count[(key>>shift)&0xff]++
		}
		sum := 0
		for d, c := range count {
			count[d] = sum
			sum += c
		}
		for i, key := range k {
			d := (key >> shift) & 0xff
			ktmp[count[d]], tmp[count[d]] = key, order[i]
			count[d]++
		}
		k, ktmp = ktmp, k
		order, tmp = tmp, order
	}
	return order, keys, tmp
}

func growInt32(buf []int32, n int) []int32 {
	if cap(buf) < n {
		return make([]int32, n)
	}
	return buf[:n]
}

// logSumExp is computed as model.LogSoftmax computes it, so logprobs agree
// with it bit for bit on the same logits.
func logSumExp(logits []float32) float64 {
	m := float64(slices.Max(logits))
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v) - m)
	}
	return m + math.Log(sum)
}

func argmax(logits []float32) int32 {
	best := 0
	for i, v := range logits {
		if v > logits[best] {
			best = i
		}
	}
	return int32(best)
}

// topAlts returns the n most likely tokens, most likely first, lowest id
// first on ties.
func topAlts(logits []float32, lse float64, n int) []Alt {
	n = min(n, len(logits))
	alts := make([]Alt, 0, n+1)
	for i, v := range logits {
		if len(alts) == n && v <= logits[alts[n-1].ID] {
			continue
		}
		a := Alt{ID: int32(i)}
		j, _ := slices.BinarySearchFunc(alts, v, func(a Alt, v float32) int {
			if logits[a.ID] >= v {
				return -1
			}
			return 1
		})
		alts = slices.Insert(alts, j, a)
		if len(alts) > n {
			alts = alts[:n]
		}
	}
	for i := range alts {
		alts[i].Logprob = float32(float64(logits[alts[i].ID]) - lse)
	}
	return alts
}
