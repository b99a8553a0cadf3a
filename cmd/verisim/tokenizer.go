package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/verisim/verisim/internal/engine/tokenizer"
)

func (a *app) tokenizerCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "tokenizer",
		Short: "Train and inspect byte-level BPE tokenizers",
	}
	c.AddCommand(a.tokenizerTrainCmd())
	return c
}

func (a *app) tokenizerTrainCmd() *cobra.Command {
	var (
		corpus, out string
		vocab       int
		maxBytes    int64
		exts        []string
	)
	c := &cobra.Command{
		Use:   "train --out tokenizer.json [--corpus DIR] [--vocab N]",
		Short: "Train a byte-level BPE tokenizer on code",
		Long: `Trains a byte-level BPE tokenizer (the kind Qwen2 and Llama 3 use) on the
files under --corpus with the given extensions, read in a fixed order, and
writes it as a Hugging Face tokenizer.json. The default corpus is the Go
standard library of the local Go installation. verisim's chat template's
special tokens (<|endoftext|>, <|im_start|>, <|im_end|>, <tool_call>,
</tool_call>) get the last ids. Any bytes round-trip exactly.`,
		Example: `  verisim tokenizer train --out tokenizer.json
  verisim tokenizer train --corpus ~/src/myrepo --ext .go,.py --vocab 16384 --out tok.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usageErr("--out FILE is required")
			}
			if vocab < 256+len(tokenizer.DefaultSpecial())+1 {
				return usageErr("--vocab %d: it must exceed the 256 byte symbols and the special tokens", vocab)
			}
			if corpus == "" {
				corpus = tokenizer.GoSource()
			}
			if fi, err := os.Stat(corpus); err != nil || !fi.IsDir() {
				return usageErr("--corpus %s is not a directory", corpus)
			}
			start := time.Now()
			tok, err := tokenizer.TrainOnDir(cmd.Context(), corpus, exts, vocab, tokenizer.DefaultSpecial(), maxBytes)
			if err != nil {
				return withCode(exitFailure, err)
			}
			if err := tok.Save(out); err != nil {
				return withCode(exitFailure, err)
			}
			fmt.Fprintf(os.Stderr, "trained %d tokens on %s in %.1fs; wrote %s\n", tok.VocabSize(), corpus, time.Since(start).Seconds(), out)
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&corpus, "corpus", "", "directory of text to train on (default: the Go installation's src)")
	f.StringVar(&out, "out", "", "tokenizer.json to write")
	f.IntVar(&vocab, "vocab", 8192, "vocabulary size, special tokens included")
	f.Int64Var(&maxBytes, "max-bytes", 16<<20, "read at most this much of the corpus (0 = all)")
	f.StringSliceVar(&exts, "ext", []string{".go"}, "file extensions to read")
	return c
}
