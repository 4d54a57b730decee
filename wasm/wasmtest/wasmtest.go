// Package wasmtest holds what the what-if planner's parity tests share: it
// builds the WebAssembly as make wasm does, runs the corpus natively, and
// compares answers byte for byte. The node test (wasm/bridge) and the
// Chromium test (e2e/browser) use it.
package wasmtest

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dcm-router/dcm/wasm/corpus"
)

// Corpus parameters of the parity tests: at least 1,000 scenarios, always
// the same ones. DCM_PARITY_SEED and DCM_PARITY_SCENARIOS override them to
// explore further (the corpus grows about 19 MB a thousand scenarios).
const (
	Scenarios = 1000
	Seed      = 20261202
)

func fromEnv(t testing.TB, name string, def uint64) uint64 {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return n
}

// goTool is the go command that runs the test: go test puts its GOROOT/bin
// first in PATH.
func goTool(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build the planner's WebAssembly: %v", err)
	}
	return p
}

func goEnv(t testing.TB, name string) string {
	t.Helper()
	out, err := exec.Command(goTool(t), "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

// ModuleRoot is the directory of dcm's go.mod.
func ModuleRoot(t testing.TB) string {
	t.Helper()
	gomod := goEnv(t, "GOMOD")
	if gomod == "" || gomod == os.DevNull {
		t.Fatal("not inside the dcm module")
	}
	return filepath.Dir(gomod)
}

// Testdata is the path of a file in wasm/testdata.
func Testdata(t testing.TB, name string) string {
	t.Helper()
	return filepath.Join(ModuleRoot(t), "wasm", "testdata", name)
}

// BuildWasm builds the planner the way make wasm does (GOOS=js GOARCH=wasm,
// -trimpath -ldflags='-s -w', ./wasm from the module root) into a temporary
// directory, next to a copy of the wasm_exec.js of the same Go.
func BuildWasm(t testing.TB) (wasmPath, wasmExecPath string) {
	t.Helper()
	root := ModuleRoot(t)
	dir := t.TempDir()
	wasmPath = filepath.Join(dir, "dcm.wasm")
	wasmExecPath = filepath.Join(dir, "wasm_exec.js")
	start := time.Now()
	cmd := exec.Command(goTool(t), "build", "-trimpath", "-ldflags=-s -w", "-o", wasmPath, "./wasm")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("GOOS=js GOARCH=wasm go build ./wasm: %v\n%s", err, out)
	}
	js, err := os.ReadFile(filepath.Join(goEnv(t, "GOROOT"), "lib", "wasm", "wasm_exec.js"))
	if err != nil {
		t.Fatalf("wasm_exec.js of this Go: %v", err)
	}
	if err := os.WriteFile(wasmExecPath, js, 0o644); err != nil {
		t.Fatal(err)
	}
	raw, gz := Sizes(t, wasmPath)
	t.Logf("built dcm.wasm in %s: %d bytes, %d gzipped (best compression)", time.Since(start).Round(time.Millisecond), raw, gz)
	return wasmPath, wasmExecPath
}

// Sizes are a file's size and its size gzipped at the best compression, as
// make wasm precompresses it.
func Sizes(t testing.TB, path string) (raw, gzipped int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	w, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	w.Write(data)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return len(data), b.Len()
}

// Corpus generates the parity corpus, writes it as JSON into dir and
// returns the scenarios, the file and what the native bridge answers.
func Corpus(t testing.TB, dir string) (scenarios []corpus.Scenario, path string, want []string) {
	t.Helper()
	start := time.Now()
	n, seed := fromEnv(t, "DCM_PARITY_SCENARIOS", Scenarios), fromEnv(t, "DCM_PARITY_SEED", Seed)
	scenarios = corpus.Generate(int(n), seed)
	generated := time.Since(start)
	data, err := corpus.Encode(scenarios)
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(dir, "corpus.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	want = make([]string, len(scenarios))
	size := 0
	for i, s := range scenarios {
		if want[i], err = corpus.Expected(s); err != nil {
			t.Fatal(err)
		}
		size += len(want[i])
	}
	t.Logf("corpus: seed %d, generated in %s, %.1f MB as JSON; native run %s, %.1f MB of answers",
		seed, generated.Round(time.Millisecond), float64(len(data))/1e6, time.Since(start).Round(time.Millisecond), float64(size)/1e6)
	t.Logf("corpus: %s", corpus.Summary(scenarios))
	return scenarios, path, want
}

// Compare checks that the WebAssembly build (who ran it) answered every
// scenario byte for byte as the native one did. It reports the number of
// mismatches and, for the first few, where they start with some context.
func Compare(t testing.TB, who string, scenarios []corpus.Scenario, want, got []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s answered %d scenarios, native %d", who, len(got), len(want))
	}
	var bad []int
	for i := range want {
		if got[i] != want[i] {
			bad = append(bad, i)
		}
	}
	if len(bad) == 0 {
		return
	}
	var msg strings.Builder
	fmt.Fprintf(&msg, "%s: %d of %d scenarios differ from the native planner", who, len(bad), len(want))
	for _, i := range bad[:min(len(bad), 3)] {
		fmt.Fprintf(&msg, "\n\nscenario %d (%s):\n%s", i, scenarios[i].Name, Diff(want[i], got[i]))
	}
	t.Error(msg.String())
}

// Diff shows where two answers part: the line, the byte offset in it, and
// up to 120 bytes either side.
func Diff(want, got string) string {
	n := 0
	for n < len(want) && n < len(got) && want[n] == got[n] {
		n++
	}
	line := strings.Count(want[:n], "\n")
	lineStart := strings.LastIndexByte(want[:n], '\n') + 1
	from := max(lineStart, n-120)
	excerpt := func(s string) string {
		end := min(len(s), n+120)
		if i := strings.IndexByte(s[n:end], '\n'); i >= 0 {
			end = n + i
		}
		return s[from:end]
	}
	return fmt.Sprintf("line %d (%s), byte %d of the line:\n  native: …%s…\n  wasm:   …%s…",
		line+1, strings.SplitN(want[lineStart:], " ", 2)[0], n-lineStart, excerpt(want), excerpt(got))
}
