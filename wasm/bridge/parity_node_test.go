//go:build !js

package bridge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/wasm/bridge"
	"github.com/dcm-router/dcm/wasm/wasmtest"
)

// needNode finds node; the parity tests cannot run without it.
func needNode(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: install Debian's nodejs package (make deps)")
	}
	return p
}

// runNode runs fn(dcmPlanner, input) from script in node against the
// planner's WebAssembly (wasm/testdata/parity-node.js), and decodes what it
// returned into result. It returns the milliseconds the call took in node.
func runNode(t *testing.T, node, wasmPath, wasmExec, script, fn, inputPath string, result any) float64 {
	t.Helper()
	out := filepath.Join(t.TempDir(), "result.json")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, wasmtest.Testdata(t, "parity-node.js"), wasmExec, wasmPath, script, fn, inputPath, out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("node %s: %v\n%s", fn, err, msg)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		MS     float64         `json:"ms"`
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("node's answer: %v", err)
	}
	if err := json.Unmarshal(r.Result, result); err != nil {
		t.Fatalf("node's answer: %v", err)
	}
	return r.MS
}

// TestParityNode: the corpus gives byte-identical answers from the
// WebAssembly build in node and from the native planner.
func TestParityNode(t *testing.T) {
	node := needNode(t)
	version, _ := exec.Command(node, "--version").Output()
	wasmPath, wasmExec := wasmtest.BuildWasm(t)
	scenarios, corpusPath, want := wasmtest.Corpus(t, t.TempDir())

	start := time.Now()
	var got []string
	ms := runNode(t, node, wasmPath, wasmExec, wasmtest.Testdata(t, "parity.js"), "dcmParity", corpusPath, &got)
	t.Logf("node %s: the corpus ran in %.0f ms in the planner (%s with node's start and the JSON files)",
		strings.TrimSpace(string(version)), ms, time.Since(start).Round(time.Millisecond))
	wasmtest.Compare(t, "node", scenarios, want, got)
}

// errorsJS calls the planner with each {fn, args} and describes each answer:
// "string <text>", "number <n>", "error <message>" for exactly {error:
// "<message>"}, anything else as "other <type> <JSON>".
const errorsJS = `function dcmErrors(planner, calls) {
	return calls.map((c) => {
		const v = planner[c.fn](...(c.args || []));
		if (typeof v === "string") return "string " + v;
		if (typeof v === "number") return "number " + String(v);
		if (v !== null && typeof v === "object" && Object.keys(v).length === 1 && typeof v.error === "string") {
			return "error " + v.error;
		}
		return "other " + typeof v + " " + JSON.stringify(v);
	});
}
`

// jsCall is one call of dcmPlanner: its function and arguments of any
// JavaScript type that JSON carries.
type jsCall struct {
	Fn   string `json:"fn"`
	Args []any  `json:"args"`
}

// nativeAnswer is what the wasm main answers to a call, from the native
// bridge: the planner's JSON text, or {error} for a failure, a wrong
// argument count or an argument that is not a string.
func nativeAnswer(p *bridge.Planner, c jsCall) string {
	if c.Fn == "seq" {
		return "number " + strconv.FormatUint(p.Seq(), 10)
	}
	n := map[string]int{"feed": 1, "load": 1, "simulate": 1, "compute": 1, "simulateOn": 2}[c.Fn]
	if len(c.Args) != n {
		return fmt.Sprintf("error want %d string arguments", n)
	}
	in := make([]string, n)
	for i, a := range c.Args {
		s, ok := a.(string)
		if !ok {
			return "error arguments must be JSON text"
		}
		in[i] = s
	}
	var out []byte
	var err error
	switch c.Fn {
	case "feed":
		out, err = bridge.EncodeFeedResult(p.Feed(in[0]))
	case "load":
		out, err = bridge.EncodeFeedResult(p.Load(in[0]))
	case "simulate":
		out, err = p.Simulate(in[0])
	case "compute":
		out, err = bridge.Compute(in[0])
	case "simulateOn":
		out, err = bridge.SimulateOn(in[0], in[1], dcm.HAProxy26MemoryCosts())
	}
	if err != nil {
		return "error " + err.Error()
	}
	return "string " + string(out)
}

// TestParityNodeErrors: malformed messages and arguments of the wrong type
// or number give {error} from the WebAssembly build, with the native
// planner's message, and the planner goes on working after them. It runs
// on a fresh planner: before any snapshot, simulate fails and events ask
// for one.
func TestParityNodeErrors(t *testing.T) {
	node := needNode(t)
	wasmPath, wasmExec := wasmtest.BuildWasm(t)
	snapshot := `{"seq":5,"mode":"dynamic","caps":{"mode":"dynamic","addServer":true},"backends":[{"name":"be_http:demo:web","kind":"http",` +
		`"route":{"namespace":"demo","name":"web","kind":"http","host":"web.example","path":"/","pathType":"Prefix","workload":{"kind":"Deployment","name":"web"},"balance":"roundrobin"},` +
		`"servers":[{"name":"web-0:http","addr":"10.0.0.1","port":8080,"weight":1,"state":"ready","origin":"cfg","endpoint":"web-0:http","pod":"web-0","sessions":2}]}]}`
	scale := `[{"kind":"scale","namespace":"demo","workload":{"kind":"Deployment","name":"web"},"replicas":3}]`
	calls := []jsCall{
		{"seq", nil},
		{"simulate", []any{"[]"}},
		{"feed", []any{`{"type":"event","seq":1,"event":{"seq":1,"type":"applied"}}`}},
		{"feed", []any{`{`}},
		{"feed", []any{`{"type":"event","seq":2}`}},
		{"feed", []any{`{"type":"snapshot","seq":3}`}},
		{"feed", []any{`{"type":"event","event":{"seq":"1"}}`}},
		{"feed", []any{42.0}},
		{"feed", []any{}},
		{"feed", []any{"{}", "{}"}},
		{"feed", []any{nil}},
		{"compute", []any{map[string]any{}}},
		{"compute", []any{""}},
		{"compute", []any{`{"actual":{"backends":{}}}`}},
		{"simulateOn", []any{"{}"}},
		{"simulateOn", []any{"{}", 7.0}},
		{"simulateOn", []any{snapshot, "["}},
		{"simulateOn", []any{snapshot, `[{"kind":"scale","replicas":-1}]`}},
		{"load", []any{"["}},
		{"load", []any{true}},
		{"simulate", []any{scale}}, // still no snapshot
		{"load", []any{snapshot}},
		{"seq", nil},
		{"seq", []any{"ignored"}},
		{"simulate", []any{"{"}},
		{"simulate", []any{[]any{"not", "text"}}},
		{"simulate", []any{scale}},
		{"load", []any{strings.Replace(snapshot, `"seq":5`, `"seq":4`, 1)}}, // older: kept
		{"feed", []any{`{"type":"event","seq":7,"event":{"seq":7,"type":"action"}}`}}, // a gap
		{"feed", []any{`{"type":"event","seq":6,"event":{"seq":6,"type":"reload"}}`}},
		{"seq", nil},
		{"compute", []any{`{"actual":{"backends":null},"desired":{"backends":[]},"caps":{"mode":"reload"}}`}},
	}
	dir := t.TempDir()
	input, err := json.Marshal(calls)
	if err != nil {
		t.Fatal(err)
	}
	inputPath, script := filepath.Join(dir, "calls.json"), filepath.Join(dir, "errors.js")
	if err := os.WriteFile(inputPath, input, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, []byte(errorsJS), 0o644); err != nil {
		t.Fatal(err)
	}
	var got []string
	runNode(t, node, wasmPath, wasmExec, script, "dcmErrors", inputPath, &got)
	if len(got) != len(calls) {
		t.Fatalf("%d answers for %d calls", len(got), len(calls))
	}
	p := bridge.New(dcm.HAProxy26MemoryCosts())
	errorsSeen := 0
	for i, c := range calls {
		want := nativeAnswer(p, c)
		if strings.HasPrefix(want, "error ") {
			errorsSeen++
		}
		args, _ := json.Marshal(c.Args)
		if got[i] != want {
			t.Errorf("%s(%.80s):\n  wasm:   %.300s\n  native: %.300s", c.Fn, args, got[i], want)
		} else {
			t.Logf("%s(%.60s) → %.100s", c.Fn, args, got[i])
		}
	}
	if errorsSeen < 20 {
		t.Errorf("only %d of the calls fail: the test lost its point", errorsSeen)
	}
}
