package corpus_test

import (
	"strings"
	"testing"

	"github.com/dcm-router/dcm/wasm/corpus"
	"github.com/dcm-router/dcm/wasm/wasmtest"
)

// TestCorpusCoversKnobs: the parity corpus previews rewrite targets (the
// rewrite map), so the parity tests compare them.
func TestCorpusCoversKnobs(t *testing.T) {
	var rewrites int
	for _, s := range corpus.Generate(wasmtest.Scenarios, wasmtest.Seed) {
		out, err := corpus.Expected(s)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out, `"map":"rewrite"`) {
			rewrites++
		}
	}
	t.Logf("%d of %d scenarios preview a rewrite map replace", rewrites, wasmtest.Scenarios)
	if rewrites < 10 {
		t.Errorf("%d with a rewrite map replace; want 10 or more", rewrites)
	}
}
