package guest

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/verisim/verisim/internal/sandbox/wire/jsonlite/jsonlitetest"
)

// plainConfig is Config without its decoder, for encoding/json to decode
// as the reference.
type plainConfig Config

func TestConfigDecodesAsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	texts := []string{"", "0", "maya-thinkpad", "/sys/fs/cgroup/pids/a/tasks", "é\"\\\n<&", "\xff", "pids"}
	text := func() string { return texts[r.IntN(len(texts))] }
	list := func() []string {
		switch r.IntN(3) {
		case 0:
			return nil
		case 1:
			return []string{}
		}
		return []string{text(), text()}
	}
	for i := range 3000 {
		c := Config{Layers: list(), DiskBytes: r.Int64() >> r.IntN(64), Hostname: text(), LastPID: r.IntN(1 << 22),
			Lifeline: r.IntN(2) == 0, Rootless: r.IntN(2) == 0, NewCgroupNS: r.IntN(2) == 0,
			CgroupRootTasks: text(), CommandTasks: text(), CgroupFS: list()}
		if r.IntN(2) == 0 {
			c.Session = &Session{User: text(), UID: r.Uint32(), GID: r.Uint32(), Since: r.Int64()}
		}
		for range r.IntN(3) {
			c.Binds = append(c.Binds, Bind{Source: text(), Target: text(), ReadOnly: r.IntN(2) == 0})
			c.Views = append(c.Views, View{Source: text(), Target: text()})
		}
		b, err := json.Marshal(plainConfig(c))
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			// Unknown fields, explicit nulls and indentation.
			var m map[string]any
			json.Unmarshal(b, &m)
			m["future_field"] = []any{map[string]any{"x": nil}, 1e9}
			for _, k := range []string{"session", "binds", "views", "layers"} {
				if _, ok := m[k]; !ok {
					m[k] = nil
				}
			}
			b, _ = json.MarshalIndent(m, "", "  ")
		}
		var want plainConfig
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		var got Config
		if err := got.UnmarshalJSON(b); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if !reflect.DeepEqual(got, Config(want)) {
			t.Fatalf("%s:\ngot  %+v\nwant %+v", b, got, want)
		}
	}
	for _, bad := range []string{`{"layers":[1]}`, `{"last_pid":9223372036854775808}`, `{"session":{"uid":-1}}`, `{"binds":[{"read_only":"yes"}]}`, `{"hostname":"x"`, `{} {}`} {
		var c Config
		if err := c.UnmarshalJSON([]byte(bad)); err == nil {
			t.Errorf("%s: decoded without error", bad)
		}
	}
}

// TestConfigCoversEveryField: with every field set, the decoder agrees with
// encoding/json, so a field added to Config and forgotten in its decoder
// fails here.
func TestConfigCoversEveryField(t *testing.T) {
	var c plainConfig
	jsonlitetest.Fill(&c)
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var got Config
	if err := got.UnmarshalJSON(b); err != nil || !reflect.DeepEqual(got, Config(c)) {
		t.Errorf("%s:\ngot  %+v (%v)\nwant %+v", b, got, err, c)
	}
}
