package bench

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
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

// headline is the table of docs/bench.md's Headline section, every figure
// in every mode.
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

// Write puts bench.md and the plots into dir, and the excerpt (Headline)
// into the README between its bench markers (when it has them).
func (rep Report) Write(dir, readme string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("docs dir: %w", err)
	}
	if err := rep.Plots(dir); err != nil {
		return err
	}
	// The scale section (TestScale) is written by a run of its own: the
	// page keeps the last one.
	path := filepath.Join(dir, "bench.md")
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read bench.md: %w", err)
	}
	page := rep.Markdown(Machine()) + "\n" + keptScale(string(old))
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		return fmt.Errorf("write bench.md: %w", err)
	}
	if readme == "" {
		return nil
	}
	b, err := os.ReadFile(readme)
	if err != nil {
		return fmt.Errorf("read README: %w", err)
	}
	out, ok := replaceBetween(string(b), "<!-- bench:start -->\n", "<!-- bench:end -->", rep.Headline(runtime.NumCPU()))
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
