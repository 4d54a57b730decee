package browser

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/e2e/harness"
)

// bigDesired is n routes of m endpoints each, every route served by a
// Deployment of its own in namespace big (the endpoints need not answer:
// only the planner is measured; health checks are off). Up to 10,000
// routes, each with addresses of its own in 127.2.0.0/16.
func bigDesired(n, m int) dcm.Desired {
	var d dcm.Desired
	for i := range n {
		name := appName(i)
		r := dcm.Route{Namespace: "big", Name: name, Source: dcm.SourceIngress, Object: name, Kind: dcm.KindHTTP,
			Host: name + ".big.localhost", Path: "/", PathType: dcm.PathPrefix, Balance: dcm.BalanceRoundRobin,
			Services: []dcm.ServiceRef{{Name: name, Port: "http", Weight: 100}},
			Workload: &dcm.WorkloadRef{Kind: "Deployment", Name: name}}
		b := dcm.DesiredBackend{Name: r.BackendName(), Route: r}
		for j := range m {
			pod := fmt.Sprintf("%s-pod-%02d", name, j)
			b.Endpoints = append(b.Endpoints, dcm.Endpoint{Name: pod + ":http", Addr: fmt.Sprintf("127.2.%d.%d", i/250, 1+i%250),
				Port: 20000 + j, Weight: 1, State: dcm.StateReady, Pod: pod})
		}
		sort.Slice(b.Endpoints, func(x, y int) bool { return b.Endpoints[x].Name < b.Endpoints[y].Name })
		d.Backends = append(d.Backends, &b)
	}
	slices.SortFunc(d.Backends, func(a, b *dcm.DesiredBackend) int {
		if a.Name < b.Name {
			return -1
		}
		return 1
	})
	return d
}

func appName(i int) string { return fmt.Sprintf("app-%04d", i) }

// bigWhatIf is /whatif over n routes of 10 endpoints, opened with a scale
// asked in its address, as a link from elsewhere would: the time to the
// first preview counts from navigation start.
func bigWhatIf(t testing.TB, n int) (whatifTab, portal, time.Duration) {
	t.Helper()
	needBrowser(t)
	p := portal{admin: randomToken(t)}
	// HAProxy takes a few seconds to start 10,000 backends on two shared
	// cores; the harness's 20 s are for the small stacks.
	o := harness.Options{Source: harness.NewStaticSource(bigDesired(n, 10)), ReadyWithin: time.Minute}
	p.Stack = harness.Start(t, harness.WithTokens(t, o, p.admin+" admin alice\n"))
	tab := whatifTab{newTab(t)}
	signIn(t, tab.Context, p.PortalURL, p.admin, "/whatif")
	do(t, tab.Context, chromedp.Navigate(p.PortalURL+"/whatif?workload=big/Deployment/app-0001&replicas=12"))
	waitFor(t, tab.Context, "the first preview", 60*time.Second, `window.dcmWhatIf.previews > 0 && window.dcmWhatIf.source === 'wasm'`,
		`JSON.stringify({...window.dcmWhatIf, lastSim: undefined})`)
	first := time.Duration(eval[float64](t, tab.Context, `window.dcmWhatIf.firstPreviewMs`) * float64(time.Millisecond))
	return tab, p, first
}

// previewTimes asks for one preview as a user does and returns the time
// from the input to the preview shown, and the planner's own part of it.
func previewTimes(t testing.TB, tab whatifTab, workload string, replicas int) (total, planner time.Duration) {
	t.Helper()
	got := evalAwait[map[string]float64](t, tab.Context, fmt.Sprintf(`(async () => {
		const before = window.dcmWhatIf.previews;
		const t0 = performance.now();
		document.getElementById('wi-replicas').value = '%d';
		const w = document.getElementById('wi-workload');
		w.value = %s;
		w.dispatchEvent(new Event('input', { bubbles: true }));
		while (window.dcmWhatIf.previews === before) await new Promise((r) => setTimeout(r, 0));
		return { total: performance.now() - t0, planner: window.dcmWhatIf.lastMs };
	})()`, replicas, jsString(workload)))
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	return ms(got["total"]), ms(got["planner"])
}

// loaded is what the planner's worker said of the snapshot it read: how
// long it took, its size in characters, and when it was done after
// navigation start.
type loaded struct {
	LoadMs        float64 `json:"loadMs"`
	SnapshotChars float64 `json:"snapshotChars"`
	LoadedAt      float64 `json:"loadedAt"`
	WasmBytes     float64 `json:"wasmBytes"`
}

func loadedOf(t testing.TB, tab whatifTab) loaded {
	t.Helper()
	return eval[loaded](t, tab.Context, `window.dcmWhatIf`)
}

// whatIfAt: at n backends the browser's preview of a scale is the server
// planner's, down to every command and total (adding 5 servers at
// runtime, no reload), computed in the worker; the timings are logged
// (make bench measures them against their targets).
func whatIfAt(t *testing.T, n int) {
	tab, p, first := bigWhatIf(t, n)
	var totals []time.Duration
	for i := range 5 {
		total, _ := previewTimes(t, tab, "big/Deployment/"+appName(n/2+i), 15)
		totals = append(totals, total)
	}
	last := appName(n/2 + 4)
	server := p.Engine.Simulate([]dcm.WhatIf{{Kind: dcm.WhatIfScale, Namespace: "big", Workload: &dcm.WorkloadRef{Kind: "Deployment", Name: last}, Replicas: 15}})
	var browser dcm.Simulation
	if err := json.Unmarshal([]byte(eval[string](t, tab.Context, `window.dcmWhatIf.lastSim`)), &browser); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(server)
	if got, _ := json.Marshal(browser); string(got) != string(want) {
		t.Errorf("the browser's preview of %s 10 → 15 at %d backends differs from the server's planner:\n%.2000s\nserver:\n%.2000s", last, n, got, want)
	}
	if server.Ops != 10 || server.Reloads != 0 || server.After.Backends != n || server.After.Ready != 10*n+5 { // 5 add-server, 5 set-state ready
		t.Errorf("the server's planner gives %d ops, %d reloads, %+v for 10 → 15, want 10 ops, no reload, %d backends and %d servers ready",
			server.Ops, server.Reloads, server.After, n, 10*n+5)
	}
	l := loadedOf(t, tab)
	if l.WasmBytes == 0 || l.WasmBytes > 1<<20 {
		t.Errorf("the planner's download was %v bytes on the wire; want it precompressed, under 1 MiB", l.WasmBytes)
	}
	t.Logf("%d backends × 10 servers: first preview %v after navigation start (the worker read the %.1f MB snapshot in %.0f ms, done %.0f ms after navigation start); previews (input → shown) %v; planner download %.0f bytes",
		n, first, l.SnapshotChars/1e6, l.LoadMs, l.LoadedAt, totals, l.WasmBytes)
}

// TestWhatIfAt1000Backends: whatIfAt 1,000 routes × 10 endpoints.
func TestWhatIfAt1000Backends(t *testing.T) { whatIfAt(t, 1000) }

// TestWhatIfAt10000Backends: whatIfAt 10,000 routes × 10 endpoints, a
// snapshot of 30 MB.
func TestWhatIfAt10000Backends(t *testing.T) { whatIfAt(t, 10000) }

// benchmarkPreview: the preview of a scale at n backends × 10 servers in
// Chromium after warm-up, from the input to the preview shown
// (ms/preview; target ≤ 50 ms), the planner's part of it in the worker
// (planner-ms/preview), the first preview after navigation start
// (first-preview-ms; target ≤ 5 s at 10,000) and the worker's reading of
// the snapshot within it (snapshot-load-ms).
func benchmarkPreview(b *testing.B, n int) {
	tab, _, first := bigWhatIf(b, n)
	l := loadedOf(b, tab)
	for i := range 5 { // warm-up: the engine compiles the hot paths
		previewTimes(b, tab, "big/Deployment/"+appName(i), 11)
	}
	var total, planner time.Duration
	i := 0
	for ; b.Loop(); i++ {
		t, p := previewTimes(b, tab, "big/Deployment/"+appName(100+i%(n-200)), 11+i%5)
		total += t
		planner += p
	}
	count := float64(i)
	b.ReportMetric(float64(total.Microseconds())/1000/count, "ms/preview")
	b.ReportMetric(float64(planner.Microseconds())/1000/count, "planner-ms/preview")
	b.ReportMetric(float64(first.Milliseconds()), "first-preview-ms")
	b.ReportMetric(l.LoadMs, "snapshot-load-ms")
}

// BenchmarkWhatIfPreview1000Backends: benchmarkPreview at 1,000 backends.
func BenchmarkWhatIfPreview1000Backends(b *testing.B) { benchmarkPreview(b, 1000) }

// BenchmarkWhatIfPreview10000Backends: benchmarkPreview at 10,000 backends.
func BenchmarkWhatIfPreview10000Backends(b *testing.B) { benchmarkPreview(b, 10000) }
