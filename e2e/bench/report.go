package bench

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/dcm-router/dcm/system"
)

// Report is one comparison run, as docs/bench.md shows it.
type Report struct {
	Config  Config
	Command string
	Date    time.Time
	Elapsed time.Duration
	Results []Result // in Modes() order, reload first
	Micro   Micro
	// LoadBefore and LoadAfter are /proc/loadavg around the run: the
	// machine's two cores are shared, and the figures depend on it.
	LoadBefore, LoadAfter string
	EdgeRoutes            int // edge routes at the start
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// pct is the q-quantile of sorted latencies in milliseconds.
func pct(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	i := min(len(sorted)-1, int(math.Ceil(q*float64(len(sorted))))-1)
	return float64(sorted[max(i, 0)].Microseconds()) / 1000
}

// endpointReasons are the reloads an endpoint change (scale, pod
// replacement) causes; the other reasons come from routes.
var endpointReasons = []string{"endpoints-changed", "slots-exhausted", "dynamic-unsupported"}

func (r Result) endpointReloads() int {
	n := 0
	for _, k := range endpointReasons {
		n += r.Reloads[k]
	}
	return n
}

// row is one figure across the modes; lower is better for every figure.
type row struct {
	name   string
	vals   []float64
	format string
}

func (rep Report) rows() []row {
	var rows []row
	add := func(name, format string, f func(Result) float64) {
		r := row{name: name, format: format}
		for _, res := range rep.Results {
			r.vals = append(r.vals, f(res))
		}
		rows = append(rows, r)
	}
	add("reloads, all", "%.0f", func(r Result) float64 { return float64(r.ReloadCount()) })
	add("reloads for endpoint changes", "%.0f", func(r Result) float64 { return float64(r.endpointReloads()) })
	add("reloads for certificate rotations", "%.0f", func(r Result) float64 { return float64(r.Reloads["cert-changed"]) })
	add("event → serving p50 (ms)", "%.1f", func(r Result) float64 { return pct(r.Latencies, 0.50) })
	add("event → serving p99 (ms)", "%.1f", func(r Result) float64 { return pct(r.Latencies, 0.99) })
	add("event → serving max (ms)", "%.1f", func(r Result) float64 { return pct(r.Latencies, 1) })
	add("new pods never served (probe gave up)", "%.0f", func(r Result) float64 { return float64(r.ProbeTimeouts) })
	add("certificate rotation → served p50 (ms)", "%.1f", func(r Result) float64 { return pct(r.CertLatencies, 0.50) })
	add("certificate rotation → served max (ms)", "%.1f", func(r Result) float64 { return pct(r.CertLatencies, 1) })
	add("HAProxy memory peak (MB PSS, all processes)", "%.0f", func(r Result) float64 { return r.PeakPSSMB })
	add("HAProxy memory at the end (MB PSS)", "%.0f", func(r Result) float64 { return r.EndPSSMB })
	add("old workers, peak", "%.0f", func(r Result) float64 { return float64(r.PeakOld) })
	add("failed requests", "%.0f", func(r Result) float64 { return float64(r.Failed) })
	add("long-lived connections cut", "%.0f", func(r Result) float64 { return float64(r.StreamsCut) })
	add("dcm CPU (s, estimate)", "%.1f", func(r Result) float64 { return r.DCMCPU() })
	add("HAProxy CPU (s, master + all workers)", "%.1f", func(r Result) float64 { return r.HAProxyCPU })
	add("runtime commands that change HAProxy", "%.0f", func(r Result) float64 { return float64(r.Changes) })
	add("runtime commands, all (with read-backs)", "%.0f", func(r Result) float64 { return float64(r.Commands) })
	return rows
}

// cell is a value with its ratio to the first column (reload).
func (r row) cell(i int) string {
	v := r.vals[i]
	if math.IsNaN(v) {
		return "—"
	}
	s := fmt.Sprintf(r.format, v)
	if i == 0 {
		return s
	}
	base := r.vals[0]
	switch {
	case math.IsNaN(base):
	case base == 0 && v == 0:
		s += " (=)"
	case base == 0:
		s += " (reload: 0)"
	default:
		s += fmt.Sprintf(" (%s×)", ratio(v/base))
	}
	return s
}

func ratio(x float64) string {
	switch {
	case x == 0:
		return "0"
	case x < 0.01:
		return fmt.Sprintf("%.3f", x)
	case x < 10:
		return fmt.Sprintf("%.2f", x)
	}
	return fmt.Sprintf("%.0f", x)
}

// verdict compares dcm (the last column) with the best of the others; the
// table says so where dcm is not ahead.
func (r row) verdict() string {
	last := len(r.vals) - 1
	d := r.vals[last]
	best, bestName := math.Inf(1), ""
	for i, v := range r.vals[:last] {
		if !math.IsNaN(v) && v < best {
			best, bestName = v, []string{"reload", "slots=1", "slots=8"}[min(i, 2)]
		}
	}
	tol := 0.05 * max(math.Abs(best), math.Abs(d)) // within 5%: a tie on two shared cores
	switch {
	case math.IsNaN(d):
		return "—"
	case math.Abs(d-best) <= tol:
		return "tie"
	case d < best:
		return "**ahead**"
	}
	return "not ahead (" + bestName + " better)"
}

// Markdown renders docs/bench.md.
func (rep Report) Markdown(machine string) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	cfg := rep.Config
	kind := "full run"
	if cfg.Quick {
		kind = "**quick run (BENCH_QUICK=1): a short churn, numbers are indicative only**"
	}
	w("# dcm against the router without DCM and the classic slot DCM\n\n")
	w("Written by `%s` (%s) on %s UTC, %s in all.\n\n", rep.Command, kind, rep.Date.UTC().Format("2006-01-02 15:04"), rep.Elapsed.Round(time.Second))
	w("Machine: %s. Load average (1, 5, 15 min) %s before the run, %s after: the two cores are shared with other\n", machine, rep.LoadBefore, rep.LoadAfter)
	w("work, which slows every mode, reloads (CPU-bound parses of the whole configuration) most.\n\n")
	w("## Headline\n\n")
	rep.headline(&b)
	w("\nRatios are against `reload` (the router without DCM); lower is better in every row. The last column\n")
	w("compares dcm (`dynamic`) with the best of the other three modes; within 5%% is a tie.\n\n")
	rep.notAhead(&b)
	w("![event → serving latency](bench-latency.svg)\n\n![HAProxy memory over time](bench-memory.svg)\n\n![old workers over time](bench-oldworkers.svg)\n\n")

	w("## Workload\n\n")
	w("Seed %d: %d routes at the start, %d–%d endpoints each (a real HTTP server per pod on its own loopback address),\n",
		cfg.Seed, cfg.Routes, cfg.MinEndpoints, cfg.MaxEndpoints)
	w("%d of them edge routes (%.0f%% of the routes, initial and added: TLS ends in HAProxy with the route's own certificate,\n",
		rep.EdgeRoutes, 100*cfg.EdgeShare)
	w("an Ingress with `spec.tls`), then %.1f events per second for %s. Route adds and deletes are drawn alike but never\n", cfg.Rate, cfg.Duration)
	w("drift more than %d apart: the churn replaces routes, it does not grow the cluster. The same script for every mode,\n", cfg.RouteDrift)
	w("modes run one after the other in one process.\n\n")
	w("| event | count |\n|---|---|\n")
	first := rep.Results[0]
	for _, k := range []EventKind{ScaleOut, ScaleIn, Replace, RouteAdd, RouteDelete, CertRotate} {
		w("| %s | %d |\n", k, first.Events[k])
	}
	w("\nDuring the churn: %d requests per second through HAProxy to random routes on keep-alive connections, and\n", cfg.LoadRate)
	w("%d long-lived connections (a stream that sends a line every 0.5 s, %s–%s each, reopened at once) to %d\n",
		cfg.Streams, cfg.StreamLife[0], cfg.StreamLife[1], cfg.Stable)
	w("routes the script never touches. A scale-in or replacement drains the terminating pods' endpoints for 1 s, removes\n")
	w("them, and stops the pods 2 s later; a route delete takes the route out of the load 0.2 s before the API write.\n\n")
	w("A certificate rotation gives an edge route's Secret a new certificate and key (a fresh ECDSA leaf of a test CA, made\n")
	w("once for all modes). `dynamic` swaps it at runtime (`set ssl cert` in an SSL transaction, `commit ssl cert`); the\n")
	w("other modes have no runtime certificates and reload for it (`cert-changed`), as the router without DCM and the\n")
	w("classic DCM do. The load is plain HTTP (edge routes allow it, as `dcm.io/ssl-redirect: \"false\"` does, and their\n")
	w("hosts are routed by the same maps on both frontends); the\n")
	w("rotations are timed over TLS.\n\n")

	w("## Reloads by reason\n\n| mode | reasons |\n|---|---|\n")
	for _, r := range rep.Results {
		w("| %s | %s |\n", r.Mode, countList(r.Reloads))
	}
	w("\n## Requests\n\n| mode | 2xx | expected 503/404 (deleted routes) | failed | failures | long-lived done / cut | cut by |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rep.Results {
		w("| %s | %d | %d | %d | %s | %d / %d | %s |\n", r.Mode, r.OK, r.Expected, r.Failed, countList(r.FailReasons), r.StreamsDone, r.StreamsCut, countList(r.StreamReasons))
	}
	w("\n## Runtime commands by verb\n\n| mode | commands |\n|---|---|\n")
	for _, r := range rep.Results {
		w("| %s | %s |\n", r.Mode, countList(r.ByVerb))
	}
	w("\nA route added or deleted without a reload replaces the routing maps atomically (`prepare map`, one `add map`\n")
	w("per entry of the whole map, `commit map`), so dcm's count grows with the number of routes; a reload sends none\n")
	w("of these, and only reads HAProxy back afterwards (`show …`).\n")
	w("\n## Event → serving\n\n")
	w("From the API write (the desired state handed to dcm) until a request through HAProxy first reaches the new pod,\n")
	w("as the pod records it; for a new route, its first pod. Meanwhile three loops send requests for the route on new\n")
	w("connections (so they reach the current worker), on top of the load. Scale-ins and deletes start no pod.\n\n")
	w("| mode | new pods timed | p50 ms | p90 ms | p99 ms | max ms |\n|---|---|---|---|---|---|\n")
	for _, r := range rep.Results {
		w("| %s | %d | %.1f | %.1f | %.1f | %.1f |\n", r.Mode, len(r.Latencies), pct(r.Latencies, .5), pct(r.Latencies, .9), pct(r.Latencies, .99), pct(r.Latencies, 1))
	}
	w("\n## Certificate rotation → served\n\n")
	w("From the API write of the rotated Secret until a TLS handshake with the route's host as SNI (a new connection to\n")
	w("HAProxy's HTTPS frontend, every 1–10 ms) is answered with the new certificate.\n\n")
	w("| mode | rotations timed | not served within %s | p50 ms | p90 ms | max ms |\n|---|---|---|---|---|---|\n", cfg.ProbeLimit)
	for _, r := range rep.Results {
		w("| %s | %d | %d | %.1f | %.1f | %.1f |\n", r.Mode, len(r.CertLatencies), r.CertTimeouts, pct(r.CertLatencies, .5), pct(r.CertLatencies, .9), pct(r.CertLatencies, 1))
	}

	m := rep.Micro
	w("\n## Microbenchmarks\n\n| what | result |\n|---|---|\n")
	w("| admin socket: one command round trip | %s |\n", us(m.RoundTrip))
	w("| admin socket: per command, 1,000 pipelined in one write | %s |\n", us(m.Pipelined))
	for _, n := range slices.Sorted(maps.Keys(m.Reload)) {
		r := m.Reload[n]
		w("| reload at %s backends × %d servers: dcm's whole reload (render, `haproxy -c`, write, reload, new worker answers) / the master's part | %s / %s (HAProxy then %.0f MB PSS) |\n",
			thousands(n), m.ReloadServers, ms(r.Total), ms(r.Master), r.PSSMB)
	}
	w("| worker memory per pre-allocated slot (free `server-template`-style slot in the cfg) | %.0f bytes |\n", m.PerSlot)
	w("| worker memory per server in haproxy.cfg | %.0f bytes |\n", m.PerCfgServer)
	w("| worker memory per dynamic server (`add server`) | %.0f bytes |\n", m.PerRuntimeSrv)
	w("| worker memory per empty backend (with its map entry) | %.0f bytes |\n", m.PerEmptyBE)
	w("\nMemory constants are differences of the worker's RSS over %s backends; they are what the what-if page's\n", thousands(m.MemoryBackends))
	w("estimate multiplies (`dcm.HAProxy26MemoryCosts`, measured by `dcm/haproxy`'s `BenchmarkMemoryCosts`).\n\n")

	w("## How each figure is measured\n\n")
	w("- **Reloads**: reloads done (`dcm_reload_duration_seconds` samples) during the churn; by reason\n")
	w("  `dcm_reloads_total{reason}`, where a reload for two reasons (an endpoint and a certificate that changed in one sync)\n")
	w("  counts under each, so the reasons add up to more than the reloads.\n")
	w("- **HAProxy memory**: the sum of `Pss` (`/proc/<pid>/smaps_rollup`) over the master and all its children —\n")
	w("  the current worker and every old one — sampled every %s. Pss shares the pages the forked workers still share\n", cfg.SampleEvery)
	w("  with the master among them, so the sum is what HAProxy really holds; summed RSS would count them again per worker.\n")
	w("- **Old workers**: the master's children other than the newest one (`/proc`), sampled with the memory.\n")
	w("- **Certificate rotation → served**: see above; the served leaf is told from the old one by its serial.\n")
	w("- **Failed requests**: load requests answered with anything but 2xx, or not answered (connection errors,\n")
	w("  timeouts), except a 503/404 for a route already taken out of the load for deletion.\n")
	w("- **dcm CPU (estimate)**: dcm runs in the bench process with the pods and the load generator. The figure is that\n")
	w("  process's CPU time during the churn minus its CPU rate measured over %s of the same load without churn,\n", cfg.Calibrate)
	w("  times the churn's length: dcm's work for the churn, plus the churn's own pod starts and probes (alike in every mode).\n")
	w("- **HAProxy CPU**: utime+stime of the master and live workers plus the reaped old workers (the master's cutime).\n")
	w("- **Runtime commands**: `dcm_runtime_command_duration_seconds` samples during the churn; \"change\" excludes `show …`\n")
	w("  (the read-back pass every 10 s and after reloads, which reload mode also runs).\n")
	return b.String()
}

// notAhead lists, in words, where dcm is not ahead in this run, and why
// when the run tells: the table alone would bury it.
func (rep Report) notAhead(b *strings.Builder) {
	var lines []string
	for _, r := range rep.rows() {
		if v := r.verdict(); strings.HasPrefix(v, "not ahead") {
			lines = append(lines, fmt.Sprintf("- **%s**: dcm %s, %s", r.name, r.cell(len(r.vals)-1), v))
		}
	}
	dyn := rep.Results[len(rep.Results)-1]
	if n := dyn.Reloads["pool-exhausted"]; n > 0 {
		lines = append(lines, fmt.Sprintf("- **dcm reloaded %d time(s) for `pool-exhausted`**, and each such reload leaves an old worker behind "+
			"for as long as the long-lived connections it holds (peak %d): more routes were added than the pool of spare "+
			"backends (`--pool-size`, %d per kind) could take between reloads. A deleted route's backend (its spare, or "+
			"its own for a route rendered at the last reload) joins the pool only once its servers are deleted, after "+
			"HAProxy reports them idle.",
			n, dyn.PeakOld, system.Defaults().PoolSize))
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(b, "Where dcm is not ahead in this run:\n\n%s\n\n", strings.Join(lines, "\n"))
}

// headline is the table README also shows.
func (rep Report) headline(b *strings.Builder) {
	fmt.Fprintf(b, "| figure |")
	for _, r := range rep.Results {
		fmt.Fprintf(b, " %s |", r.Mode)
	}
	fmt.Fprintf(b, " dcm (`dynamic`) vs the best other |\n|---|")
	for range rep.Results {
		b.WriteString("---|")
	}
	b.WriteString("---|\n")
	for _, r := range rep.rows() {
		fmt.Fprintf(b, "| %s |", r.name)
		for i := range r.vals {
			fmt.Fprintf(b, " %s |", r.cell(i))
		}
		fmt.Fprintf(b, " %s |\n", r.verdict())
	}
}

// Headline is the README's excerpt.
func (rep Report) Headline() string {
	var b strings.Builder
	kind := "`make bench`"
	if rep.Config.Quick {
		kind = "`BENCH_QUICK=1 make bench` (quick run, indicative only)"
	}
	fmt.Fprintf(&b, "From %s on %s (%s); the whole report with the workload, reasons and microbenchmarks is\n[docs/bench.md](docs/bench.md).\n\n",
		kind, rep.Date.UTC().Format("2006-01-02"), machineShort())
	rep.headline(&b)
	b.WriteString("\n")
	rep.notAhead(&b)
	b.WriteString("![HAProxy memory over time, per mode](docs/bench-memory.svg)\n")
	return b.String()
}

func countList(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := slices.Sorted(maps.Keys(m))
	slices.SortStableFunc(keys, func(a, b string) int { return m[b] - m[a] })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func us(d time.Duration) string { return fmt.Sprintf("%.1f µs", float64(d.Nanoseconds())/1000) }
func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

func thousands(n int) string {
	if n < 1000 {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%d,%03d", n/1000, n%1000)
}

// Machine describes where the run happened.
func Machine() string {
	var parts []string
	parts = append(parts, machineShort())
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		parts = append(parts, "Linux "+strings.TrimSpace(string(b)))
	}
	if out, err := exec.Command("haproxy", "-v").Output(); err == nil {
		parts = append(parts, strings.SplitN(string(out), "\n", 2)[0])
	}
	parts = append(parts, runtime.Version())
	return strings.Join(parts, "; ")
}

func machineShort() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		if _, err := fmt.Sscanf(string(b), "MemTotal: %d kB", &kb); err == nil {
			mem = fmt.Sprintf(", %.0f GiB", float64(kb)/(1<<20))
		}
	}
	return fmt.Sprintf("%d cores (%s)%s", runtime.NumCPU(), model, mem)
}

// Plots writes the SVGs next to bench.md.
func (rep Report) Plots(dir string) error {
	lat := plot.New()
	lat.Title.Text = "Event → serving: from the API write until the new pod answers through HAProxy"
	lat.X.Label.Text = "latency (ms, log scale)"
	lat.Y.Label.Text = "share of new pods served"
	lat.X.Scale = plot.LogScale{}
	lat.X.Tick.Marker = plot.LogTicks{Prec: -1}
	lat.Y.Min, lat.Y.Max = 0, 1
	var latLines []any
	for _, r := range rep.Results {
		if len(r.Latencies) == 0 {
			continue
		}
		xys := make(plotter.XYs, len(r.Latencies))
		for i, d := range r.Latencies {
			xys[i] = plotter.XY{X: max(float64(d.Microseconds())/1000, 0.1), Y: float64(i+1) / float64(len(r.Latencies))}
		}
		latLines = append(latLines, r.Mode, xys)
	}
	if err := plotutil.AddLines(lat, latLines...); err != nil {
		return fmt.Errorf("latency plot: %w", err)
	}
	lat.Legend.Top, lat.Legend.Left = false, false
	if err := save(lat, filepath.Join(dir, "bench-latency.svg")); err != nil {
		return err
	}

	series := func(title, ylabel, file string, y func(Sample) float64) error {
		p := plot.New()
		p.Title.Text = title
		p.X.Label.Text = "seconds since the churn started"
		p.Y.Label.Text = ylabel
		p.Y.Min = 0
		var lines []any
		for _, r := range rep.Results {
			xys := make(plotter.XYs, len(r.Samples))
			for i, s := range r.Samples {
				xys[i] = plotter.XY{X: s.At.Seconds(), Y: y(s)}
			}
			lines = append(lines, r.Mode, xys)
		}
		if err := plotutil.AddLines(p, lines...); err != nil {
			return fmt.Errorf("%s plot: %w", file, err)
		}
		p.Legend.Top, p.Legend.Left = true, true
		return save(p, filepath.Join(dir, file))
	}
	if err := series("HAProxy memory: master + all workers, old ones included", "MB (sum of Pss)", "bench-memory.svg",
		func(s Sample) float64 { return s.PSSMB }); err != nil {
		return err
	}
	return series("Old HAProxy workers still finishing connections", "old workers", "bench-oldworkers.svg",
		func(s Sample) float64 { return float64(s.OldWorkers) })
}

func save(p *plot.Plot, path string) error {
	wt, err := p.WriterTo(9*vg.Inch, 4.5*vg.Inch, "svg")
	if err != nil {
		return fmt.Errorf("render %s: %w", path, err)
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return fmt.Errorf("render %s: %w", path, err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// Write puts bench.md and the plots into dir, and the headline into the
// README between its bench markers (when it has them).
func (rep Report) Write(dir, readme string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("docs dir: %w", err)
	}
	if err := rep.Plots(dir); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "bench.md"), []byte(rep.Markdown(Machine())), 0o644); err != nil {
		return fmt.Errorf("write bench.md: %w", err)
	}
	if readme == "" {
		return nil
	}
	b, err := os.ReadFile(readme)
	if err != nil {
		return fmt.Errorf("read README: %w", err)
	}
	out, ok := replaceBetween(string(b), "<!-- bench:start -->\n", "<!-- bench:end -->", rep.Headline())
	if !ok {
		return nil
	}
	if err := os.WriteFile(readme, []byte(out), 0o644); err != nil {
		return fmt.Errorf("write README: %w", err)
	}
	return nil
}

// replaceBetween replaces what lies between two markers, keeping them.
func replaceBetween(s, start, end, with string) (string, bool) {
	i := strings.Index(s, start)
	if i < 0 {
		return s, false
	}
	j := strings.Index(s[i+len(start):], end)
	if j < 0 {
		return s, false
	}
	j += i + len(start)
	return s[:i+len(start)] + with + s[j:], true
}
