package run

import (
	"errors"
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

// readTokenizerJSON reads the tokenizer.json of model directory dir.
func readTokenizerJSON(dir string) ([]byte, error) {
	return os.ReadFile(filepath.Join(dir, TokenizerFile))
}
