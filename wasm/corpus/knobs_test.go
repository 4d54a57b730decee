package corpus_test

import (
	"strings"
	"testing"

	"github.com/dcm-router/dcm/wasm/corpus"
	"github.com/dcm-router/dcm/wasm/wasmtest"
)

// TestCorpusCoversKnobs: the parity corpus previews rewrite targets (the
// rewrite map) and connection limits (set maxconn server), so the parity
// tests compare them.
func TestCorpusCoversKnobs(t *testing.T) {
	var rewrites, maxconns, inters int
	for _, s := range corpus.Generate(wasmtest.Scenarios, wasmtest.Seed) {
		out, err := corpus.Expected(s)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out, `"map":"rewrite"`) {
			rewrites++
		}
		if strings.Contains(out, `"op":"set-maxconn"`) {
			maxconns++
		}
		if strings.Contains(out, `.i2000"`) || strings.Contains(out, `.i3000"`) {
			inters++
		}
	}
	t.Logf("%d of %d scenarios preview a rewrite map replace, %d a set maxconn server, %d servers of a check interval",
		rewrites, wasmtest.Scenarios, maxconns, inters)
	if rewrites < 10 || maxconns < 10 || inters < 10 {
		t.Errorf("%d with a rewrite map replace, %d with set maxconn server, %d with servers of a check interval; want 10 or more of each",
			rewrites, maxconns, inters)
	}
}
