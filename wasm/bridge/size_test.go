//go:build !js

package bridge_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/dcm-router/dcm/wasm/wasmtest"
)

// maxGzip is the planner's budget on the wire: 1 MiB gzipped (issue 18).
const maxGzip = 1 << 20

// TestWasmSize: the planner's WebAssembly, built as make wasm builds it,
// is at most 1 MiB gzipped, and encoding/json (wasm/codec does its work),
// fmt and reflect stay out.
func TestWasmSize(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "./wasm")
	cmd.Dir = wasmtest.ModuleRoot(t)
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps ./wasm: %v", err)
	}
	// encoding/json, and fmt with reflect and os behind it, cost the
	// download some 250 KB gzipped: the codec and dcm/text.go stand in.
	for _, dep := range strings.Fields(string(out)) {
		if dep == "encoding/json" || dep == "fmt" || dep == "reflect" {
			t.Errorf("the wasm build imports %s: %s", dep, strings.Join(strings.Fields(string(out)), " "))
		}
	}
	wasmPath, _ := wasmtest.BuildWasm(t)
	raw, gz := wasmtest.Sizes(t, wasmPath)
	t.Logf("dcm.wasm: %d bytes, %d gzipped, %d under the budget", raw, gz, maxGzip-gz)
	if gz > maxGzip {
		t.Errorf("dcm.wasm is %d bytes gzipped, over the %d of the budget", gz, maxGzip)
	}
}
