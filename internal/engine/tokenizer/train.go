package tokenizer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// minPairCount stops training early: a pair seen once teaches nothing.
const minPairCount = 2

// Train learns a byte-level BPE tokenizer from r with vocabSize ids in all:
// the 256 byte symbols, then merges, then special (DefaultSpecial() for
// verisim's chat template). Occurrences of special tokens in the corpus are
// cut out before counting. Training stops early, giving a smaller
// vocabulary, when no pair occurs twice.
func Train(ctx context.Context, r io.Reader, vocabSize int, special []string) (*Tokenizer, error) {
	tr, err := newTrainer(vocabSize, special)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("train tokenizer: read corpus: %w", err)
	}
	tr.add(data)
	return tr.train(ctx)
}

// GoSource is the source of the local Go installation's standard library,
// the default corpus: GOROOT/src of the go command on PATH ("go env
// GOROOT"), or of the toolchain this binary was built with when there is
// no go command, which is only right on the machine that built it.
func GoSource() string {
	if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
		if root := strings.TrimSpace(string(out)); root != "" {
			return filepath.Join(root, "src")
		}
	}
	//lint:ignore SA1019 the fallback the doc comment names
	return filepath.Join(runtime.GOROOT(), "src")
}

// TrainOnDir is Train over the files under dir whose names end in one of
// exts (default ".go"), read in lexical path order, up to maxBytes in all
// (0 for no limit; the last file is cut short). An empty dir means the Go
// standard library source, GoSource().
func TrainOnDir(ctx context.Context, dir string, exts []string, vocabSize int, special []string, maxBytes int64) (*Tokenizer, error) {
	if dir == "" {
		dir = GoSource()
	}
	if len(exts) == 0 {
		exts = []string{".go"}
	}
	tr, err := newTrainer(vocabSize, special)
	if err != nil {
		return nil, err
	}
	var total int64
	errFull := errors.New("corpus full")
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() || !d.Type().IsRegular() || !slices.ContainsFunc(exts, func(e string) bool { return strings.HasSuffix(path, e) }) {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if maxBytes > 0 && total+int64(len(data)) > maxBytes {
			data = data[:maxBytes-total]
		}
		tr.add(data)
		total += int64(len(data))
		if maxBytes > 0 && total >= maxBytes {
			return errFull
		}
		return nil
	})
	if err != nil && !errors.Is(err, errFull) {
		return nil, fmt.Errorf("train tokenizer on %s: %w", dir, err)
	}
	if total == 0 {
		return nil, fmt.Errorf("train tokenizer on %s: no files ending in %v", dir, exts)
	}
	return tr.train(ctx)
}

type trainer struct {
	vocabSize int
	special   []string
	matcher   *Tokenizer // finds special tokens in the corpus; nil if none
	counts    map[string]int64
}

func newTrainer(vocabSize int, special []string) (*trainer, error) {
	if vocabSize < 256+len(special) {
		return nil, fmt.Errorf("train tokenizer: vocabSize %d leaves no room for 256 byte symbols and %d special tokens", vocabSize, len(special))
	}
	tr := &trainer{vocabSize: vocabSize, special: special, counts: make(map[string]int64)}
	if len(special) > 0 {
		// A tokenizer of bytes and specials only, used for its matcher.
		m, err := assemble(nil, nil, special)
		if err != nil {
			return nil, err
		}
		tr.matcher = m
	}
	return tr, nil
}

// add counts the pre-tokenized words of one document.
func (tr *trainer) add(doc []byte) {
	for len(doc) > 0 {
		i, n := len(doc), 0
		if tr.matcher != nil {
			i, _, n = tr.matcher.findAdded(doc)
		}
		for plain := doc[:i]; len(plain) > 0; {
			k := splitQwen2.next(plain)
			tr.counts[string(plain[:k])]++
			plain = plain[k:]
		}
		doc = doc[i+n:]
	}
}

type word struct {
	syms  []int32
	count int64
}

// pairEntry is a heap entry; count may be stale, and is checked on pop.
type pairEntry struct {
	pair  uint64
	count int64
}

func (tr *trainer) train(ctx context.Context) (*Tokenizer, error) {
	keys := make([]string, 0, len(tr.counts))
	for k := range tr.counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	toks := make([][]byte, 256, tr.vocabSize)
	var byteID [256]int32
	for id, b := range byteOrder {
		toks[id] = []byte{b}
		byteID[b] = int32(id)
	}
	words := make([]word, len(keys))
	pairCount := make(map[uint64]int64)
	where := make(map[uint64][]int32)
	for wi, k := range keys {
		w := word{syms: make([]int32, len(k)), count: tr.counts[k]}
		for i := range len(k) {
			w.syms[i] = byteID[k[i]]
		}
		for i := 0; i+1 < len(w.syms); i++ {
			p := pairKey(w.syms[i], w.syms[i+1])
			pairCount[p] += w.count
			if l := where[p]; len(l) == 0 || l[len(l)-1] != int32(wi) {
				where[p] = append(l, int32(wi))
			}
		}
		words[wi] = w
	}

	h := &pairHeap{toks: &toks}
	for p, c := range pairCount {
		h.push(pairEntry{p, c})
	}
	var merges [][2]int32
	delta := make(map[uint64]int64)
	seen := make([]int32, len(words)) // step+1 at which a word was last merged
	target := tr.vocabSize - len(tr.special)
	tokID := make(map[string]int32)
	for len(toks) < target && h.len() > 0 {
		if len(merges)%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("train tokenizer: %w", err)
			}
		}
		top := h.pop()
		if c := pairCount[top.pair]; c != top.count {
			if c > 0 {
				h.push(pairEntry{top.pair, c})
			}
			continue
		}
		if top.count < minPairCount {
			break
		}
		a, b := int32(top.pair>>32), int32(uint32(top.pair))
		merged := slices.Concat(toks[a], toks[b])
		id, ok := tokID[string(merged)]
		if !ok {
			// Two merges can spell the same token ("a"+"bc", "ab"+"c");
			// they share its id.
			id = int32(len(toks))
			toks = append(toks, merged)
			tokID[string(merged)] = id
		}
		merges = append(merges, [2]int32{a, b})
		step := int32(len(merges))
		for _, wi := range where[top.pair] {
			if seen[wi] == step {
				continue
			}
			seen[wi] = step
			w := &words[wi]
			for i := 0; i+1 < len(w.syms); i++ {
				delta[pairKey(w.syms[i], w.syms[i+1])] -= w.count
			}
			out := w.syms[:0]
			for i := 0; i < len(w.syms); i++ {
				if i+1 < len(w.syms) && w.syms[i] == a && w.syms[i+1] == b {
					out = append(out, id)
					i++
				} else {
					out = append(out, w.syms[i])
				}
			}
			w.syms = out
			for i := 0; i+1 < len(w.syms); i++ {
				p := pairKey(w.syms[i], w.syms[i+1])
				delta[p] += w.count
				if w.syms[i] == id || w.syms[i+1] == id {
					where[p] = append(where[p], wi)
				}
			}
		}
		delete(where, top.pair)
		for p, d := range delta {
			if d == 0 {
				continue
			}
			c := pairCount[p] + d
			if c <= 0 {
				delete(pairCount, p)
			} else {
				pairCount[p] = c
			}
			if d > 0 {
				h.push(pairEntry{p, c})
			}
		}
		clear(delta)
	}

	vocab := make(map[string]int32, len(toks))
	for id, tok := range toks {
		vocab[byteLevel(tok)] = int32(id)
	}
	mergeStrs := make([][2]string, len(merges))
	for i, m := range merges {
		mergeStrs[i] = [2]string{byteLevel(toks[m[0]]), byteLevel(toks[m[1]])}
	}
	return assemble(vocab, mergeStrs, tr.special)
}

// assemble builds a tokenizer in verisim's own layout: byte symbols first
// when vocab is nil, special tokens after everything else.
func assemble(vocab map[string]int32, merges [][2]string, special []string) (*Tokenizer, error) {
	if vocab == nil {
		vocab = make(map[string]int32, 256)
		for id, b := range byteOrder {
			vocab[string(byteRunes[b])] = int32(id)
		}
	}
	added := make([]addedToken, len(special))
	for i, s := range special {
		added[i] = addedToken{ID: int32(len(vocab) + i), Content: s, Special: true}
	}
	t, err := build(vocab, merges, added, splitQwen2, false, defaultMeta())
	if err != nil {
		return nil, fmt.Errorf("train tokenizer: %w", err)
	}
	return t, nil
}

// pairHeap is a max-heap on count; ties go to the pair whose (left, right)
// byte strings sort first.
type pairHeap struct {
	e    []pairEntry
	toks *[][]byte
}

func (h *pairHeap) len() int { return len(h.e) }

func (h *pairHeap) before(x, y pairEntry) bool {
	if x.count != y.count {
		return x.count > y.count
	}
	t := *h.toks
	if c := bytes.Compare(t[x.pair>>32], t[y.pair>>32]); c != 0 {
		return c < 0
	}
	return bytes.Compare(t[uint32(x.pair)], t[uint32(y.pair)]) < 0
}

func (h *pairHeap) push(x pairEntry) {
	h.e = append(h.e, x)
	for i := len(h.e) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.before(h.e[i], h.e[p]) {
			break
		}
		h.e[i], h.e[p] = h.e[p], h.e[i]
		i = p
	}
}

func (h *pairHeap) pop() pairEntry {
	top := h.e[0]
	last := len(h.e) - 1
	h.e[0] = h.e[last]
	h.e = h.e[:last]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < len(h.e) && h.before(h.e[l], h.e[m]) {
			m = l
		}
		if l+1 < len(h.e) && h.before(h.e[l+1], h.e[m]) {
			m = l + 1
		}
		if m == i {
			break
		}
		h.e[i], h.e[m] = h.e[m], h.e[i]
		i = m
	}
	return top
}
