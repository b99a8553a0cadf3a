package run

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/verisim/verisim/internal/atomicfile"
	"github.com/verisim/verisim/internal/engine/model"
	"github.com/verisim/verisim/internal/engine/tokenizer"
	"github.com/verisim/verisim/internal/train"
)

// TokenizerFile is the tokenizer a model directory and a checkpoint hold.
const TokenizerFile = "tokenizer.json"

// LoadModel loads the model directory dir and its tokenizer.json; the
// tokenizer is nil when dir has none. It refuses a tokenizer whose
// vocabulary the model cannot embed. Its errors wrap ErrUsage.
func LoadModel(dir string) (*model.Model, *tokenizer.Tokenizer, error) {
	return loadModel(dir, false)
}

func loadModel(dir string, needTokenizer bool) (*model.Model, *tokenizer.Tokenizer, error) {
	m, err := model.Load(dir)
	if err != nil {
		return nil, nil, usageErr("--model: %v", err)
	}
	tok, err := tokenizer.Load(filepath.Join(dir, TokenizerFile))
	switch {
	case errors.Is(err, fs.ErrNotExist) && !needTokenizer:
		return m, nil, nil
	case err != nil:
		return nil, nil, usageErr("--model: %v (the model directory needs its tokenizer.json)", err)
	case tok.VocabSize() > m.Config.VocabSize:
		return nil, nil, usageErr("--model: tokenizer.json has %d tokens but the model's vocabulary is %d", tok.VocabSize(), m.Config.VocabSize)
	}
	return m, tok, nil
}

// WithTokenizer returns t with a Save that writes tokenizerJSON (a
// tokenizer.json file's content) into the checkpoint after t's own Save,
// so that the checkpoint loads as a model directory (verisim serve, a
// further run's model). The rest of t is unchanged.
func WithTokenizer(t train.Trainer, tokenizerJSON []byte) train.Trainer {
	return &tokenizerSaver{Trainer: t, json: tokenizerJSON}
}

type tokenizerSaver struct {
	train.Trainer
	json []byte
}

func (s *tokenizerSaver) Save(ctx context.Context, dir, version string) error {
	if err := s.Trainer.Save(ctx, dir, version); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, TokenizerFile), s.json, 0o644)
}

// readTokenizerJSON reads the tokenizer.json of model directory dir.
func readTokenizerJSON(dir string) ([]byte, error) {
	return os.ReadFile(filepath.Join(dir, TokenizerFile))
}
