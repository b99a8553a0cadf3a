package rollout

import (
	"math"
	"math/rand/v2"
	"sort"

	"github.com/verisim/verisim/internal/trajectory"
)

// TaskSummary counts one task's episodes.
type TaskSummary struct {
	Task         string         `json:"task"`
	Episodes     int            `json:"episodes"`
	OK           int            `json:"ok"`
	Passed       int            `json:"passed"`
	InfraErrors  int            `json:"infra_errors"`
	Timeouts     int            `json:"timeouts"`
	PolicyErrors int            `json:"policy_errors"`
	MeanReward   float64        `json:"mean_reward"` // over ok episodes
	MeanTurns    float64        `json:"mean_turns"`
	Flags        map[string]int `json:"flags,omitempty"`
}

// Attempts is the number of episodes that count for pass@k: every one but
// the infrastructure failures, which say nothing about the model.
func (s *TaskSummary) Attempts() int { return s.Episodes - s.InfraErrors }

// Summary is a run's per-task counts and their total.
type Summary struct {
	Tasks []TaskSummary `json:"tasks"`
	Total TaskSummary   `json:"total"`
}

// Summarize counts trajectories by task. When a key occurs more than once
// the last record wins.
func Summarize(trajs []*trajectory.Trajectory) *Summary {
	last := map[string]*trajectory.Trajectory{}
	var order []string
	for _, t := range trajs {
		if _, ok := last[t.Key()]; !ok {
			order = append(order, t.Key())
		}
		last[t.Key()] = t
	}
	by := map[string]*TaskSummary{}
	var rewardSum, turnSum = map[string]float64{}, map[string]float64{}
	total := TaskSummary{Task: "all", Flags: map[string]int{}}
	var totalReward, totalTurns float64
	for _, k := range order {
		t := last[k]
		s, ok := by[t.TaskID]
		if !ok {
			s = &TaskSummary{Task: t.TaskID, Flags: map[string]int{}}
			by[t.TaskID] = s
		}
		for _, c := range []*TaskSummary{s, &total} {
			c.Episodes++
			switch t.Status {
			case trajectory.StatusOK:
				c.OK++
			case trajectory.StatusInfraError:
				c.InfraErrors++
			case trajectory.StatusTimeout:
				c.Timeouts++
			case trajectory.StatusPolicyError:
				c.PolicyErrors++
			}
			if t.Status == trajectory.StatusOK && t.Metadata[MetaPass] == "true" {
				c.Passed++
			}
			seen := map[string]bool{}
			for _, f := range t.Flags {
				if !seen[f.Name] {
					seen[f.Name] = true
					c.Flags[f.Name]++
				}
			}
		}
		if t.Status == trajectory.StatusOK {
			rewardSum[t.TaskID] += t.Reward
			totalReward += t.Reward
		}
		turnSum[t.TaskID] += float64(len(t.Turns))
		totalTurns += float64(len(t.Turns))
	}
	out := &Summary{}
	for id, s := range by {
		if s.OK > 0 {
			s.MeanReward = rewardSum[id] / float64(s.OK)
		}
		s.MeanTurns = turnSum[id] / float64(s.Episodes)
		out.Tasks = append(out.Tasks, *s)
	}
	sort.Slice(out.Tasks, func(i, j int) bool { return out.Tasks[i].Task < out.Tasks[j].Task })
	if total.OK > 0 {
		total.MeanReward = totalReward / float64(total.OK)
	}
	if total.Episodes > 0 {
		total.MeanTurns = totalTurns / float64(total.Episodes)
	}
	out.Total = total
	return out
}

// PassAtK is the unbiased estimate of the chance that at least one of k
// samples passes, from n samples of which c passed (Chen et al. 2021):
// 1 - C(n-c, k) / C(n, k), computed as a product to stay exact for large n.
func PassAtK(n, c, k int) float64 {
	if k <= 0 || n < k {
		return math.NaN()
	}
	if n-c < k {
		return 1
	}
	p := 1.0
	for i := n - c + 1; i <= n; i++ {
		p *= 1 - float64(k)/float64(i)
	}
	return 1 - p
}

// PassK is pass@k over a suite with a 95% confidence interval.
type PassK struct {
	K        int     `json:"k"`
	Estimate float64 `json:"estimate"`
	Low      float64 `json:"low"`
	High     float64 `json:"high"`
	// Tasks is how many tasks had at least k attempts and so count.
	Tasks int `json:"tasks"`
}

// PassAtKCI averages PassAtK over the tasks with at least k attempts and
// bootstraps a 95% interval by resampling tasks (the variation that matters
// when the suite stands for a larger population of tasks). The resampling
// is seeded, so the same summary always gives the same interval.
func PassAtKCI(s *Summary, k int) PassK {
	var per []float64
	for _, t := range s.Tasks {
		if t.Attempts() >= k {
			per = append(per, PassAtK(t.Attempts(), t.Passed, k))
		}
	}
	out := PassK{K: k, Tasks: len(per)}
	if len(per) == 0 {
		out.Estimate, out.Low, out.High = math.NaN(), math.NaN(), math.NaN()
		return out
	}
	out.Estimate = mean(per)
	const resamples = 2000
	rng := rand.New(rand.NewPCG(uint64(k), uint64(len(per))))
	means := make([]float64, resamples)
	sample := make([]float64, len(per))
	for i := range means {
		for j := range sample {
			sample[j] = per[rng.IntN(len(per))]
		}
		means[i] = mean(sample)
	}
	sort.Float64s(means)
	out.Low = means[int(0.025*resamples)]
	out.High = means[int(0.975*resamples)-1]
	return out
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
