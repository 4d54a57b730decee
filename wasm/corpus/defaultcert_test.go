package corpus_test

import (
	"strings"
	"testing"

	"github.com/dcm-router/dcm/wasm/corpus"
	"github.com/dcm-router/dcm/wasm/wasmtest"
)

// TestCorpusCoversDefaultCert: the parity corpus carries a default
// certificate from a Secret, computes plans that change it and previews
// rotations of its Secret as a cert-update on the default (no host), so
// the parity tests compare them.
func TestCorpusCoversDefaultCert(t *testing.T) {
	const op = `"cert":{"host":"","secret":"openshift-ingress/router-default"`
	var computed, previewed int
	for _, s := range corpus.Generate(wasmtest.Scenarios, wasmtest.Seed) {
		out, err := corpus.Expected(s)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.SplitN(out, "\n", 3)
		if len(lines) < 2 {
			continue
		}
		if strings.Contains(lines[0], op) {
			computed++
		}
		if strings.Contains(lines[1], `"phase":"certificate rotated"`) && strings.Contains(lines[1], op) {
			previewed++
		}
	}
	t.Logf("%d of %d scenarios compute a default certificate op, %d preview its rotation", computed, wasmtest.Scenarios, previewed)
	if computed < 5 || previewed < 5 {
		t.Errorf("the corpus computes %d default certificate ops and previews %d; want 5 or more of each", computed, previewed)
	}
}
