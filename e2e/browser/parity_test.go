package browser

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/dcm-router/dcm/wasm/wasmtest"
)

// parityPage loads the planner's WebAssembly in the page and runs the
// parity corpus through it with wasm/testdata/parity.js; the answers are
// posted back whole (about 10 MB, more than a CDP reply should carry).
const parityPage = `<!doctype html>
<meta charset="utf-8">
<title>dcm planner parity</title>
<script src="/wasm_exec.js"></script>
<script src="/parity.js"></script>
<script>
async function runParity() {
	const go = new Go();
	const ready = new Promise((resolve) => { globalThis.dcmPlannerReady = resolve; });
	const t0 = performance.now();
	const { instance } = await WebAssembly.instantiateStreaming(fetch("/dcm.wasm"), go.importObject);
	// Not awaited: the planner's main blocks for ever, serving calls.
	const running = go.run(instance);
	await Promise.race([ready, running.then(() => { throw new Error("the planner exited before it was ready"); })]);
	const corpus = await (await fetch("/corpus.json")).json();
	const loadMs = performance.now() - t0;
	const start = performance.now();
	const outputs = dcmParity(globalThis.dcmPlanner, corpus);
	const ms = performance.now() - start;
	const res = await fetch("/result", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(outputs) });
	return { ms, loadMs, postMs: performance.now() - start - ms, n: outputs.length, status: res.status };
}
</script>
`

// TestParityChromium: the corpus gives byte-identical answers from the
// WebAssembly build in Chromium and from the native planner.
func TestParityChromium(t *testing.T) {
	needBrowser(t)
	wasmPath, wasmExec := wasmtest.BuildWasm(t)
	scenarios, corpusPath, want := wasmtest.Corpus(t, t.TempDir())

	var (
		mu     sync.Mutex
		posted []byte
	)
	file := func(path, contentType string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			data, err := os.ReadFile(path)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", contentType)
			w.Write(data)
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, parityPage)
	})
	mux.HandleFunc("GET /wasm_exec.js", file(wasmExec, "text/javascript; charset=utf-8"))
	mux.HandleFunc("GET /parity.js", file(wasmtest.Testdata(t, "parity.js"), "text/javascript; charset=utf-8"))
	mux.HandleFunc("GET /dcm.wasm", file(wasmPath, "application/wasm"))
	mux.HandleFunc("GET /corpus.json", file(corpusPath, "application/json"))
	mux.HandleFunc("POST /result", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		posted = body
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	// A tab of its own with more time than newTab's: the corpus takes a
	// while on two busy cores.
	tab, cancel := chromedp.NewContext(browser.ctx, chromedp.WithNewBrowserContext())
	defer cancel()
	tab, cancelTimeout := context.WithTimeout(tab, 5*time.Minute)
	defer cancelTimeout()
	do(t, tab, chromedp.Navigate(srv.URL+"/"))
	product := eval[string](t, tab, `(navigator.userAgent.match(/Chrome\/[0-9.]+/) || [navigator.userAgent])[0]`)

	start := time.Now()
	res := evalAwait[struct {
		MS     float64 `json:"ms"`
		LoadMS float64 `json:"loadMs"`
		PostMS float64 `json:"postMs"`
		N      int     `json:"n"`
		Status int     `json:"status"`
	}](t, tab, `runParity()`)
	if res.Status != http.StatusNoContent || res.N != len(scenarios) {
		t.Fatalf("the page answered %d scenarios of %d and posting them gave %d", res.N, len(scenarios), res.Status)
	}
	mu.Lock()
	data := posted
	mu.Unlock()
	var got []string
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("the page's answers: %v", err)
	}
	t.Logf("%s: the corpus ran in %.0f ms in the planner (loading the planner and the corpus %.0f ms, posting the answers %.0f ms; %s in all); %.1f MB of answers",
		product, res.MS, res.LoadMS, res.PostMS, time.Since(start).Round(time.Millisecond), float64(len(data))/1e6)
	wasmtest.Compare(t, "chromium", scenarios, want, got)
}
