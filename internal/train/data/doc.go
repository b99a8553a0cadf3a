// Package data turns text and recorded episodes into train.Datum values:
// a pretraining corpus of fixed-length token sequences with a held-out
// split and a unigram baseline, the resumable order the sequences are
// trained in, and masked supervised fine-tuning sequences from
// trajectories or rendered conversations.
//
// What the package promises:
//
//   - The train/held-out split is by file and depends only on each file's
//     path relative to the corpus root, so adding or removing other files
//     never moves a file across the split.
//   - The order of training sequences depends only on the number of
//     sequences and the seed, and is the same on every platform and Go
//     release (the shuffle is written here on top of PCG, not taken from
//     math/rand's helpers). An Order's State can be saved and restored to
//     continue exactly where it stopped.
//   - SFT datums carry the exact token ids a trajectory recorded; nothing
//     is re-tokenised. Weights are 1 on the model's own tokens and 0 on
//     everything it was given.
//
// A Corpus is read-only after OpenCorpus and safe for concurrent use. An
// Order is not safe for concurrent use.
package data
