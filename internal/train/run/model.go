package run

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/verisim/verisim/internal/engine/model"
	"github.com/verisim/verisim/internal/engine/tokenizer"
)

// TokenizerFile is the tokenizer a model directory and a checkpoint hold.
const TokenizerFile = "tokenizer.json"

// LoadModel loads the model directory dir and its tokenizer.json; the
// tokenizer is nil when dir has none. It refuses a tokenizer whose
// vocabulary the model cannot embed. Its errors wrap ErrUsage.
func LoadModel(dir string) (*model.Model, *tokenizer.Tokenizer, error) {
	m, tok, _, err := loadModel(dir, false)
	return m, tok, err
}

// loadModel is LoadModel that also returns tokenizer.json as read, for the
// checkpoints a run writes, and with needTokenizer refuses a directory
// without one.
func loadModel(dir string, needTokenizer bool) (*model.Model, *tokenizer.Tokenizer, []byte, error) {
	m, err := model.Load(dir)
	if err != nil {
		return nil, nil, nil, usageErr("--model: %v", err)
	}
	path := filepath.Join(dir, TokenizerFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && !needTokenizer {
		return m, nil, nil, nil
	}
	var tok *tokenizer.Tokenizer
	if err == nil {
		if tok, err = tokenizer.Parse(data); err != nil {
			err = fmt.Errorf("load tokenizer %s: %w", path, err)
		}
	}
	switch {
	case err != nil:
		return nil, nil, nil, usageErr("--model: %v (the model directory needs its tokenizer.json)", err)
	case tok.VocabSize() > m.Config.VocabSize:
		return nil, nil, nil, usageErr("--model: tokenizer.json has %d tokens but the model's vocabulary is %d", tok.VocabSize(), m.Config.VocabSize)
	}
	return m, tok, data, nil
}
