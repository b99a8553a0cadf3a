package policy

import (
	"errors"
	"math"
	"testing"
)

// FuzzParseResponse: the parser never panics, fails only with
// ErrBadResponse, and what it accepts obeys the Response promises.
func FuzzParseResponse(f *testing.F) {
	for _, s := range []string{vllmBody, plainBody, `{"choices":[{"logprobs":{"content":[{"logprob":-Infinity}]}}]}`,
		`{"sglext":{"input_ids":[1],"output_ids":[2]},"choices":[{}]}`, `{"choices":[{"message":{"tool_calls":[{"function":{"arguments":[1]}}]}}]}`,
		`"NaN"`, `{"choices":[{"index":0,"token_ids":[1],"logprobs":{"content":[{"token":"token_id:9","logprob":NaN}]}}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := parseResponse(data)
		if err != nil {
			if !errors.Is(err, ErrBadResponse) {
				t.Fatalf("error %v does not wrap ErrBadResponse", err)
			}
			return
		}
		if n := len(r.CompletionTokenIDs); n > 0 && len(r.Logprobs) > 0 && len(r.Logprobs) != n {
			t.Fatalf("%d logprobs for %d completion ids", len(r.Logprobs), n)
		}
		for _, v := range r.Logprobs {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) || v > 0 || v < LogprobFloor {
				t.Fatalf("logprob %v outside [LogprobFloor, 0]", v)
			}
		}
	})
}
