// Package tokenizer reads, writes, trains and runs byte-level BPE tokenizers
// in the Hugging Face tokenizer.json format, the kind GPT-2, Llama-3 and
// Qwen2 use.
//
// Promises:
//
//   - A *Tokenizer is immutable once built by Parse, Load or Train, and safe
//     for concurrent use by any number of goroutines.
//   - Decode(Encode(x)) == x for every byte sequence x, invalid UTF-8
//     included. Every byte maps to one of 256 byte-level symbols, the
//     pre-tokenizer partitions its input without dropping or changing a byte,
//     and a file that would break this (a vocabulary missing a byte symbol, a
//     normalizer that rewrites text, add_prefix_space, lstrip/rstrip on an
//     added token) is refused at load time rather than served.
//   - Encode matches added tokens (such as "<|im_start|>") as whole tokens
//     first, leftmost-longest, then pre-tokenizes the text between them and
//     applies BPE merges by rank, lowest rank first, leftmost on ties — the
//     same result Hugging Face tokenizers gives for the supported layouts.
//     Encode never adds template tokens (BOS and the like): a post_processor
//     is kept for Marshal but not applied; the chat template owns that.
//   - Parse refuses what it does not implement with an error naming the
//     field, e.g. `unsupported tokenizer.json: field model.type = "Unigram";
//     verisim supports byte-level BPE`. A {"type":"NFC"} normalizer is
//     accepted and written back but not applied, so ids differ from Hugging
//     Face only for text that is not already in NFC.
//   - Pre-tokenization understands three split patterns, the ones shipped in
//     real files, implemented by hand because Go's regexp lacks lookahead:
//     GPT-2 (digits grouped), Llama-3 (digits in groups of up to three) and
//     Qwen2 (one digit per piece), plus no split at all (ByteLevel with
//     use_regex false). Qwen2 is the default for trained tokenizers. Bytes that
//     are not valid UTF-8 are treated as punctuation.
//   - Train is deterministic: the same corpus, vocabulary size and special
//     tokens give the same file byte for byte. Ids 0-255 are the byte
//     symbols in GPT-2 bytes_to_unicode order, merges take the next ids in
//     the order they were learned, and special tokens come last. Ties
//     between equally frequent pairs go to the pair whose (left, right) byte
//     strings sort first.
//   - Save is atomic: readers see the old file or the new one, never a part.
package tokenizer
