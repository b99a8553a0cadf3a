package data

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/verisim/verisim/internal/engine/tokenizer"
	"github.com/verisim/verisim/internal/train"
)

// Defaults of CorpusOptions.
const (
	DefaultHeldOutFraction = 0.02
	DefaultHeldOutSeqs     = 64
	// DefaultMaxFileBytes skips generated tables and blobs: the Go tree's
	// largest hand-written files are well under it.
	DefaultMaxFileBytes = 1 << 20
)

// sniffLen is how much of a file is checked for NUL bytes and UTF-8.
const sniffLen = 8000

// CorpusOptions says which files a corpus reads and how it cuts them.
type CorpusOptions struct {
	// SeqLen is the number of positions each training sequence predicts;
	// sequences hold SeqLen+1 tokens. Required.
	SeqLen int
	// Exts keeps only files whose names end in one of these (".go");
	// empty keeps every text file.
	Exts []string
	// HeldOutFraction of the files (by a hash of their path) are held out;
	// 0 means DefaultHeldOutFraction. At least one file is held out.
	HeldOutFraction float64
	// HeldOutSeqs is how many held-out sequences Corpus.HeldOut holds; 0
	// means DefaultHeldOutSeqs. Fewer are made when the held-out files
	// are too short.
	HeldOutSeqs int
	// MaxFiles and MaxBytes cap the corpus (0: no cap). The files kept
	// are a fixed pseudo-random sample: those first in the order of a hash
	// of their path, so a capped corpus is spread over the whole tree
	// rather than its first directories.
	MaxFiles int
	MaxBytes int64
	// MaxFileBytes skips larger files (0: DefaultMaxFileBytes).
	MaxFileBytes int64
	// IncludeTestdata reads testdata directories too; by default they are
	// skipped, as they hold golden outputs, fuzz inputs and deliberately
	// malformed files rather than code.
	IncludeTestdata bool
}

// Corpus is a tokenised directory of text, split by file into training
// and held-out token streams. Each file's tokens are followed by the
// tokenizer's end-of-text token, when it has one.
type Corpus struct {
	Dir    string
	SeqLen int
	// TrainIDs and HeldOutIDs are the files' tokens, concatenated in path order.
	TrainIDs, HeldOutIDs []int32
	// TrainFiles and HeldOutFiles are the files' paths relative to Dir,
	// slash-separated, in path order.
	TrainFiles, HeldOutFiles []string
	// Bytes is the size of all files read.
	Bytes int64
	// Skipped counts files passed over as binary, not UTF-8, too large
	// or unreadable.
	Skipped int

	heldOut []train.Datum
	vocab   int
}

// OpenCorpus reads and tokenises the text files under dir.
func OpenCorpus(ctx context.Context, dir string, tok *tokenizer.Tokenizer, opts CorpusOptions) (*Corpus, error) {
	if opts.SeqLen < 1 {
		return nil, fmt.Errorf("corpus %s: sequence length %d, want at least 1", dir, opts.SeqLen)
	}
	if opts.HeldOutFraction == 0 {
		opts.HeldOutFraction = DefaultHeldOutFraction
	}
	if opts.HeldOutFraction < 0 || opts.HeldOutFraction >= 1 {
		return nil, fmt.Errorf("corpus %s: held-out fraction %v, want in (0, 1)", dir, opts.HeldOutFraction)
	}
	if opts.HeldOutSeqs == 0 {
		opts.HeldOutSeqs = DefaultHeldOutSeqs
	}
	if opts.MaxFileBytes == 0 {
		opts.MaxFileBytes = DefaultMaxFileBytes
	}
	files, err := listFiles(ctx, dir, opts)
	if err != nil {
		return nil, err
	}
	c := &Corpus{Dir: dir, SeqLen: opts.SeqLen, vocab: tok.VocabSize()}
	docs, err := c.readAll(ctx, dir, files, tok, opts)
	if err != nil {
		return nil, err
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("corpus %s: no readable text files%s (%d skipped as binary, too large or unreadable)", dir, extNote(opts.Exts), c.Skipped)
	}
	if len(docs) < 2 {
		return nil, fmt.Errorf("corpus %s: only one readable file (%s); the held-out split needs at least two", dir, docs[0].rel)
	}
	held := splitHeldOut(docs, opts.HeldOutFraction)
	eot, hasEOT := tok.Special(tokenizer.EndOfText)
	for i, d := range docs {
		dst, names := &c.TrainIDs, &c.TrainFiles
		if held[i] {
			dst, names = &c.HeldOutIDs, &c.HeldOutFiles
		}
		*dst = append(*dst, d.ids...)
		if hasEOT {
			*dst = append(*dst, eot)
		}
		*names = append(*names, d.rel)
	}
	if n := c.NumSequences(); n < 1 {
		return nil, fmt.Errorf("corpus %s: %d training tokens in %d files, too few for one sequence of %d; add files or lower the sequence length",
			dir, len(c.TrainIDs), len(c.TrainFiles), opts.SeqLen+1)
	}
	if len(c.HeldOutIDs) < 2 {
		return nil, fmt.Errorf("corpus %s: the held-out files (%s) hold %d tokens, too few to evaluate on", dir, strings.Join(c.HeldOutFiles, ", "), len(c.HeldOutIDs))
	}
	c.heldOut = chunk(c.HeldOutIDs, opts.SeqLen, opts.HeldOutSeqs)
	return c, nil
}

func extNote(exts []string) string {
	if len(exts) == 0 {
		return ""
	}
	return " ending in " + strings.Join(exts, ", ")
}

type file struct {
	path, rel string
	size      int64
}

// listFiles finds the candidate files, applies the caps, and returns them
// in path order.
func listFiles(ctx context.Context, dir string, opts CorpusOptions) ([]file, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("corpus: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("corpus %s is not a directory", dir)
	}
	var files []file
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p != dir && errors.Is(err, fs.ErrPermission) {
				return nil // unreadable directories are skipped like unreadable files
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != dir && (strings.HasPrefix(name, ".") || (name == "testdata" && !opts.IncludeTestdata)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || strings.HasPrefix(name, ".") {
			return nil
		}
		if len(opts.Exts) > 0 && !slices.ContainsFunc(opts.Exts, func(e string) bool { return strings.HasSuffix(name, e) }) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		files = append(files, file{path: p, rel: filepath.ToSlash(rel), size: info.Size()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("corpus %s: %w", dir, err)
	}
	if opts.MaxFiles > 0 || opts.MaxBytes > 0 {
		slices.SortFunc(files, func(a, b file) int { return cmp.Compare(pathHash("pick", a.rel), pathHash("pick", b.rel)) })
		var total int64
		for i, f := range files {
			if (opts.MaxFiles > 0 && i == opts.MaxFiles) || (opts.MaxBytes > 0 && total >= opts.MaxBytes) {
				files = files[:i]
				break
			}
			total += min(f.size, opts.MaxFileBytes)
		}
		slices.SortFunc(files, func(a, b file) int { return strings.Compare(a.rel, b.rel) })
	}
	return files, nil
}

// pathHash is FNV-1a of purpose and the slash-separated relative path:
// stable across platforms and runs.
func pathHash(purpose, rel string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(purpose))
	h.Write([]byte{0})
	h.Write([]byte(rel))
	return h.Sum64()
}

// splitHeldOut marks the documents whose path hash falls in the held-out
// fraction, and at least one: the one with the smallest hash.
func splitHeldOut(docs []doc, fraction float64) []bool {
	held := make([]bool, len(docs))
	limit := uint64(fraction * float64(math.MaxUint64))
	best, any := 0, false
	for i, d := range docs {
		h := pathHash("split", d.rel)
		if h < limit {
			held[i], any = true, true
		}
		if h < pathHash("split", docs[best].rel) {
			best = i
		}
	}
	if !any {
		held[best] = true
	}
	// Keep at least one file to train on.
	if !slices.Contains(held, false) {
		held[best] = false
		if best == 0 {
			held[1] = true
		} else {
			held[0] = true
		}
	}
	return held
}

type doc struct {
	rel string
	ids []int32
}

// readAll reads and tokenises files on every CPU, keeping their order.
// Unreadable, binary, non-UTF-8 and oversized files are counted in
// c.Skipped and left out.
func (c *Corpus) readAll(ctx context.Context, dir string, files []file, tok *tokenizer.Tokenizer, opts CorpusOptions) ([]doc, error) {
	docs := make([]doc, len(files))
	sizes := make([]int64, len(files))
	next := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f := files[i]
				if f.size > opts.MaxFileBytes {
					continue
				}
				b, err := os.ReadFile(f.path)
				if err != nil || !isText(b) {
					continue
				}
				docs[i] = doc{rel: f.rel, ids: tok.EncodeBytes(b)}
				sizes[i] = int64(len(b))
			}
		}()
	}
	var err error
	for i := range files {
		if err = ctx.Err(); err != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err != nil {
		return nil, fmt.Errorf("corpus %s: %w", dir, err)
	}
	kept := docs[:0]
	for i, d := range docs {
		if d.rel == "" {
			c.Skipped++
			continue
		}
		c.Bytes += sizes[i]
		kept = append(kept, d)
	}
	return kept, nil
}

// isText reports whether b looks like text: no NUL in its first bytes and
// valid UTF-8 throughout.
func isText(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), sniffLen)], 0) < 0 && utf8.Valid(b)
}

// chunk cuts tokens into up to n sequences of seqLen+1 tokens that overlap
// by one, so every token but the first is predicted once; when tokens are
// too few for one whole sequence the only sequence is all of them.
func chunk(tokens []int32, seqLen, n int) []train.Datum {
	var out []train.Datum
	for i := 0; i+seqLen < len(tokens) && len(out) < n; i += seqLen {
		out = append(out, train.Datum{Tokens: tokens[i : i+seqLen+1 : i+seqLen+1]})
	}
	if len(out) == 0 {
		out = append(out, train.Datum{Tokens: tokens[:len(tokens):len(tokens)]})
	}
	return out
}

// NumSequences is the number of training sequences: windows of SeqLen+1
// tokens every SeqLen tokens of TrainIDs.
func (c *Corpus) NumSequences() int {
	if len(c.TrainIDs) < c.SeqLen+1 {
		return 0
	}
	return (len(c.TrainIDs) - 1) / c.SeqLen
}

// Sequence returns training sequence i, SeqLen+1 tokens. The slice is the
// corpus's own; do not modify it.
func (c *Corpus) Sequence(i int) []int32 {
	s := i * c.SeqLen
	return c.TrainIDs[s : s+c.SeqLen+1 : s+c.SeqLen+1]
}

// HeldOut returns the fixed held-out sequences evaluation scores. The
// datums share the corpus's memory; do not modify them.
func (c *Corpus) HeldOut() []train.Datum { return c.heldOut }

// EvalTokens is the number of positions HeldOut predicts.
func (c *Corpus) EvalTokens() int {
	n := 0
	for _, d := range c.heldOut {
		n += len(d.Tokens) - 1
	}
	return n
}

// UnigramBaseline is the cross-entropy, in nats per token, of a unigram
// model fitted on the training tokens with add-one smoothing over the
// vocabulary, measured on the positions HeldOut predicts: the loss a
// model that ignores context cannot beat, which a language model's
// held-out loss should fall well below.
func (c *Corpus) UnigramBaseline() float64 {
	return UnigramCrossEntropy(c.TrainIDs, c.heldOut, c.vocab)
}

// UnigramCrossEntropy fits p(t) = (count(t)+1)/(len(fit)+vocab) on fit and
// returns its mean −log p over positions 1… of each datum in eval.
func UnigramCrossEntropy(fit []int32, eval []train.Datum, vocab int) float64 {
	counts := make([]float64, vocab)
	for _, t := range fit {
		if int(t) < vocab && t >= 0 {
			counts[t]++
		}
	}
	denom := math.Log(float64(len(fit) + vocab))
	var sum float64
	n := 0
	for _, d := range eval {
		for _, t := range d.Tokens[1:] {
			var c float64
			if int(t) < vocab && t >= 0 {
				c = counts[t]
			}
			sum += denom - math.Log(c+1)
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// Batch returns the next size training sequences of o as a batch to train
// with cross-entropy on every position, and the indices of the sequences.
func (c *Corpus) Batch(o *Order, size int) (train.Batch, []int) {
	b := train.Batch{Data: make([]train.Datum, size), Loss: train.LossCrossEntropy}
	idx := make([]int, size)
	for i := range size {
		idx[i] = o.Next()
		b.Data[i] = train.Datum{Tokens: c.Sequence(idx[i])}
	}
	return b, idx
}

// Fingerprint identifies the corpus's content as far as training sees it:
// a hash of both token streams and the sequence length. A resumed run
// compares it to be sure it reads the same data.
func (c *Corpus) Fingerprint() string {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d %d %d\n", c.SeqLen, len(c.TrainIDs), len(c.HeldOutIDs))
	buf := make([]byte, 0, 1<<16)
	for _, s := range [][]int32{c.TrainIDs, c.HeldOutIDs} {
		for _, t := range s {
			buf = binary.LittleEndian.AppendUint32(buf, uint32(t))
			if len(buf) == cap(buf) {
				h.Write(buf)
				buf = buf[:0]
			}
		}
	}
	h.Write(buf)
	return fmt.Sprintf("%016x", h.Sum64())
}
