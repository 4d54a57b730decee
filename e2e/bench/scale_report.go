package bench

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"strings"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/plan"
)

// The scale section's markers in docs/bench.md: TestScale writes between
// them, and the comparison, which writes the rest of the page, keeps what
// lies between them.
const (
	scaleStart = "<!-- scale:start -->\n"
	scaleEnd   = "<!-- scale:end -->\n"
)

// ScaleReport is one run of the scale section, as docs/bench.md shows it.
type ScaleReport struct {
	Config                ScaleConfig
	Command               string
	Date                  time.Time
	Elapsed               time.Duration
	Cores                 int
	LoadBefore, LoadAfter string
	Results               [2]ScaleResult // small, large
	// Control is the throughput measurement between two stacks of
	// baseRoutes routes: the method's noise on this machine.
	Control Throughput
}

// scaleRow is one figure at both sizes. A value that was not measured is
// NaN; goal is nil for a figure without one.
type scaleRow struct {
	num, name string
	vals      [2]float64
	extra     [2]string // said after the value
	format    func(float64) string
	goal      string
	meets     func(float64) bool
	// unjudged, when set, is why this run cannot say whether the goal is met.
	unjudged string
}

func fmtMS(v float64) string    { return fmt.Sprintf("%.1f ms", v) }
func fmtS(v float64) string     { return fmt.Sprintf("%.1f s", v) }
func fmtMB(v float64) string    { return fmt.Sprintf("%.0f MB", v) }
func fmtCount(v float64) string { return thousands(int(math.Round(v))) }
func fmtRate(v float64) string  { return thousands(int(math.Round(v))) + " req/s" }
func fmtShare(v float64) string { return fmt.Sprintf("%.2f %%", v) }
func fmtRatio(v float64) string { return fmt.Sprintf("%.2f", v) }

func atMost(limit float64) func(float64) bool { return func(v float64) bool { return v <= limit } }
func below(limit float64) func(float64) bool  { return func(v float64) bool { return v < limit } }
func atLeast(limit float64) func(float64) bool {
	return func(v float64) bool { return v >= limit }
}

// durMS is a duration in milliseconds, NaN when not measured (zero).
func durMS(d time.Duration) float64 {
	if d == 0 {
		return math.NaN()
	}
	return float64(d.Microseconds()) / 1000
}

func durS(d time.Duration) float64 { return durMS(d) / 1000 }

// started gives a figure of a size that started, NaN for one that did not.
func (r ScaleResult) started(v float64) float64 {
	if r.StartErr != "" {
		return math.NaN()
	}
	return v
}

// perRoute is the commands of a phase per route, NaN when none was timed.
func perRoute(commands, routes int) float64 {
	if routes == 0 {
		return math.NaN()
	}
	return float64(commands) / float64(routes)
}

// spareShare is the spares' estimated memory (each an empty backend of
// its kind, dcm.HAProxy26MemoryCosts: a passthrough one keeps its route's
// rules and costs about twice an HTTP one) as a percentage of HAProxy's
// PSS.
func (r ScaleResult) spareShare() float64 {
	if r.StartErr != "" || r.HAProxyPSSMB == 0 {
		return math.NaN()
	}
	c := dcm.HAProxy26MemoryCosts()
	bytes := int64(r.Spares-r.TCPSpares)*c.PerBackend + int64(r.TCPSpares)*c.PerTCPBackend
	return 100 * float64(bytes) / (r.HAProxyPSSMB * (1 << 20))
}

// growShare is spares' estimated memory as a percentage of pss MB, each
// costing an empty HTTP backend (the growth adds HTTP routes only; the
// passthrough spares of the start are in the count).
func (r ScaleResult) growShare(spares int, pss float64) float64 {
	if r.StartErr != "" || pss == 0 || spares == 0 {
		return math.NaN()
	}
	c := dcm.HAProxy26MemoryCosts()
	bytes := int64(spares-r.TCPSpares)*c.PerBackend + int64(r.TCPSpares)*c.PerTCPBackend
	return 100 * float64(bytes) / (pss * (1 << 20))
}

// rows are the figures, in the order.
func (rep ScaleReport) rows() []*scaleRow {
	var rows []*scaleRow
	add := func(num, name, goal string, meets func(float64) bool, format func(float64) string, f func(ScaleResult) float64) *scaleRow {
		row := &scaleRow{num: num, name: name, goal: goal, meets: meets, format: format}
		for i, r := range rep.Results {
			row.vals[i] = r.started(f(r))
		}
		rows = append(rows, row)
		return row
	}
	add("1", "event → HAProxy acknowledged, p50", "≤ 2 ms", atMost(2), fmtMS, func(r ScaleResult) float64 { return pct(r.Event, .5) })
	add("1", "event → HAProxy acknowledged, p99", "≤ 10 ms", atMost(10), fmtMS, func(r ScaleResult) float64 { return pct(r.Event, .99) })
	add("2", "route add: commands that change HAProxy, per route", "≤ 50", atMost(50), fmtCount, func(r ScaleResult) float64 { return perRoute(r.AddChanges, len(r.Add)) })
	add("2", "route add → served, p50", "—", nil, fmtMS, func(r ScaleResult) float64 { return pct(r.Add, .5) })
	add("2", "route add → served, p99", "≤ 20 ms", atMost(20), fmtMS, func(r ScaleResult) float64 { return pct(r.Add, .99) })
	add("2", "route delete: commands that change HAProxy, per route", "≤ 50", atMost(50), fmtCount, func(r ScaleResult) float64 { return perRoute(r.DeleteChanges, len(r.Delete)) })
	add("2", "route delete → 503, p50", "—", nil, fmtMS, func(r ScaleResult) float64 { return pct(r.Delete, .5) })
	add("2", "route delete → 503, p99", "≤ 20 ms", atMost(20), fmtMS, func(r ScaleResult) float64 { return pct(r.Delete, .99) })
	add("3", "throughput through HAProxy at the size, all routes", "—", nil, fmtRate, func(r ScaleResult) float64 { return nanIfZero(r.Throughput.RPS) })
	add("3", fmt.Sprintf("throughput at %d routes, side by side", baseRoutes), "—", nil, fmtRate, func(r ScaleResult) float64 { return nanIfZero(r.Throughput.BaseRPS) })
	ta := add("3", fmt.Sprintf("throughput at the size ÷ at %d routes, all routes, median round", baseRoutes), "—", nil, fmtRatio,
		func(r ScaleResult) float64 { return r.Throughput.Median() })
	tr := add("3", fmt.Sprintf("throughput at the size ÷ at %d routes, %d routes of each, median round", baseRoutes, baseRoutes), "≥ 0.90 (within 10 %)", atLeast(0.9), fmtRatio,
		func(r ScaleResult) float64 { return r.Lookup.Median() })
	if c := rep.Control.Median(); math.Abs(c-1) > 0.1 {
		// Two equal stacks read further apart than the goal allows: the
		// machine's other work, not the sizes, decides this run's figure.
		tr.unjudged = fmt.Sprintf("not judged: two equal stacks read %.2f in this run", c)
	}
	add("4", "startup: dcm ready", "—", nil, fmtS, func(r ScaleResult) float64 { return durS(r.Ready) })
	add("4", "startup: HAProxy serves every route", "≤ 10 s", atMost(10), fmtS, func(r ScaleResult) float64 { return durS(r.Served) })
	add("4", "dcm memory: RSS growth, peak during startup", "≤ 400 MB", atMost(400), fmtMB, func(r ScaleResult) float64 { return r.DCMPeakMB })
	add("4", "dcm memory: RSS growth once every route serves", "—", nil, fmtMB, func(r ScaleResult) float64 { return r.DCMRSSMB })
	add("4", "dcm memory: live Go heap growth (after a collection)", "—", nil, fmtMB, func(r ScaleResult) float64 { return r.DCMHeapMB })
	add("4", "HAProxy memory (PSS, master + worker)", "—", nil, fmtMB, func(r ScaleResult) float64 { return r.HAProxyPSSMB })
	g := add("5", fmt.Sprintf("reloads while the cluster grows by %s routes", thousands(rep.Config.Grow)), "≤ 1", atMost(1), fmtCount,
		func(r ScaleResult) float64 { return grownReloads(r, rep.Config.Grow) })
	add("5", "spare backends rendered at the start", "—", nil, fmtCount, func(r ScaleResult) float64 { return float64(r.Spares) })
	m := add("5", "spares' memory, share of HAProxy's", "≤ 2 %", atMost(2), fmtShare, ScaleResult.spareShare)
	add("5", "spares at the growth's peak (a pool-exhausted reload's burst)", "—", nil, fmtCount, func(r ScaleResult) float64 { return float64(r.GrowPeakSpares) })
	add("5", "spares' memory at the growth's peak, share of HAProxy's at the start", "—", nil, fmtShare,
		func(r ScaleResult) float64 { return r.growShare(r.GrowPeakSpares, r.HAProxyPSSMB) })
	add("5", "spares' memory at the growth's end, share of HAProxy's then", "≤ 2 %", atMost(2), fmtShare,
		func(r ScaleResult) float64 { return r.growShare(r.GrowEndSpares, r.GrowPSSMB) })
	add("6", "full resync: last write → HAProxy acknowledged all", "< 100 ms", below(100), fmtMS, func(r ScaleResult) float64 { return durMS(r.ResyncLast) })
	w := add("6", "full resync: first write → HAProxy acknowledged all", "—", nil, fmtMS, func(r ScaleResult) float64 { return durMS(r.ResyncFirst) })
	for i, r := range rep.Results {
		if r.StartErr != "" {
			continue
		}
		if !math.IsNaN(g.vals[i]) {
			g.extra[i] = "(" + countList(r.GrowReasons) + ")"
		}
		for _, x := range []struct {
			row *scaleRow
			tp  Throughput
		}{{ta, r.Throughput}, {tr, r.Lookup}} {
			if q := x.tp.Ratios; len(q) > 0 {
				x.row.extra[i] = fmt.Sprintf("(middle half of %d rounds %.2f–%.2f)", len(q), quantile(q, 0.25), quantile(q, 0.75))
			}
		}
		if !math.IsNaN(m.vals[i]) {
			c := dcm.HAProxy26MemoryCosts()
			m.extra[i] = fmt.Sprintf("(%s HTTP × %s + %s passthrough × %s bytes of %.0f MB)", thousands(r.Spares-r.TCPSpares), thousands(int(c.PerBackend)),
				thousands(r.TCPSpares), thousands(int(c.PerTCPBackend)), r.HAProxyPSSMB)
		}
		if !math.IsNaN(w.vals[i]) {
			w.extra[i] = fmt.Sprintf("(writing the %s slices took %s)", thousands(r.Routes), fmtMS(durMS(r.ResyncWrite)))
		}
	}
	return rows
}

func nanIfZero(v float64) float64 {
	if v == 0 {
		return math.NaN()
	}
	return v
}

// grownReloads counts the growth's reloads, NaN when it did not complete.
func grownReloads(r ScaleResult, want int) float64 {
	if r.Grown < want {
		return math.NaN()
	}
	return float64(r.GrowReloads)
}

// cell is a value with what follows it.
func (row scaleRow) cell(i int) string {
	v := row.vals[i]
	if math.IsNaN(v) {
		return "—"
	}
	if row.extra[i] != "" {
		return row.format(v) + " " + row.extra[i]
	}
	return row.format(v)
}

// ratio is the large size's value over the small one's.
func (row scaleRow) ratio() string {
	a, b := row.vals[1], row.vals[0]
	switch {
	case math.IsNaN(a) || math.IsNaN(b):
		return "—"
	case a == b:
		return "="
	case b == 0:
		return "(was 0)"
	}
	return ratio(a/b) + "×"
}

// verdict says for each size whether the goal is met: "met at both",
// "met at 1,000, not at 10,000", "not met at 10,000, not measured at …".
func (row scaleRow) verdict(sizes [2]int) string {
	if row.meets == nil {
		return "—"
	}
	if row.unjudged != "" {
		return row.unjudged
	}
	var states [2]string
	for i, v := range row.vals {
		switch {
		case math.IsNaN(v):
			states[i] = "not measured"
		case row.meets(v):
			states[i] = "met"
		default:
			states[i] = "**not met**"
		}
	}
	if states[0] == states[1] {
		return states[0] + " at both"
	}
	return fmt.Sprintf("%s at %s, %s at %s", states[0], thousands(sizes[0]), states[1], thousands(sizes[1]))
}

// Markdown is the section, markers included.
func (rep ScaleReport) Markdown() string {
	var b strings.Builder
	w := printer(&b)
	sizes := [2]int{rep.Results[0].Routes, rep.Results[1].Routes}
	small, large := thousands(sizes[0]), thousands(sizes[1])
	b.WriteString(scaleStart)
	w("## Scale: %s and %s routes\n\n", small, large)
	kind := "full run"
	if rep.Config.Quick {
		kind = "**quick run (BENCH_QUICK=1): smaller sizes than the issue's 1,000 and 10,000, numbers indicative only**"
	}
	w("Written by `%s` (%s) on %s UTC, %s in all; %s, load average (1, 5, 15 min) %s before, %s after.\n\n",
		rep.Command, kind, rep.Date.UTC().Format("2006-01-02 15:04"), rep.Elapsed.Round(time.Second), plural(rep.Cores, "core"), rep.LoadBefore, rep.LoadAfter)
	w("Each size is a cluster of its own: routes of %d endpoints each (an Ingress, a Service and an EndpointSlice per route in\n", rep.Config.Endpoints)
	w("client-go's fake clientset, read by dcm's real kube Source), dcm with its defaults (`system.Defaults`) and the real\n")
	w("HAProxy; the endpoints are %d real HTTP servers on loopback addresses that all routes share. The goals are issue 18's,\n", rep.Config.Listeners)
	w("stated for 10,000 routes and checked here at both sizes.\n\n")
	w("| # | figure | goal | %s routes | %s routes | %s vs %s | goal met today |\n|---|---|---|---|---|---|---|\n", small, large, large, small)
	rows := rep.rows()
	for _, row := range rows {
		w("| %s | %s | %s | %s | %s | %s | %s |\n", row.num, row.name, row.goal, row.cell(0), row.cell(1), row.ratio(), row.verdict(sizes))
	}
	b.WriteString("\n")
	if c := rep.Control; len(c.Ratios) > 0 {
		w("Throughput control: the same measurement between two stacks of %d routes each gave a median round of %.2f (middle\n", baseRoutes, c.Median())
		w("half %.2f–%.2f): a difference of that size between the sizes and %d routes is this machine's noise, not dcm's;\n",
			quantile(c.Ratios, 0.25), quantile(c.Ratios, 0.75), baseRoutes)
		w("when it is more than 10 %%, the throughput goal is not judged.\n\n")
	}
	rep.mdScaleGoals(&b, rows, sizes)
	rep.mdScaleDetails(&b)
	rep.mdScaleMethod(&b)
	b.WriteString(scaleEnd)
	return b.String()
}

// mdScaleGoals says in words which goals are met and which are not.
func (rep ScaleReport) mdScaleGoals(b *strings.Builder, rows []*scaleRow, sizes [2]int) {
	var met, not, unmeasured, unjudged []string
	for _, row := range rows {
		if row.meets == nil {
			continue
		}
		v := row.verdict(sizes)
		item := fmt.Sprintf("%s (%s)", row.name, row.goal)
		switch {
		case v == "met at both":
			met = append(met, item)
		case row.unjudged != "":
			unjudged = append(unjudged, item+": "+v)
		case strings.Contains(v, "not met"):
			not = append(not, item+": "+v)
		default: // met at one size, not measured (or measured nowhere)
			unmeasured = append(unmeasured, item+": "+v)
		}
	}
	list := func(title string, items []string) {
		if len(items) == 0 {
			items = []string{"none"}
		}
		fmt.Fprintf(b, "%s\n\n- %s\n\n", title, strings.Join(items, "\n- "))
	}
	list(fmt.Sprintf("Goals met today at both sizes (%s and %s routes):", thousands(sizes[0]), thousands(sizes[1])), met)
	list("Goals **not met** today:", not)
	if len(unmeasured) > 0 {
		list("Goals met where measured, but not measured at both sizes:", unmeasured)
	}
	if len(unjudged) > 0 {
		list("Goals this run cannot judge:", unjudged)
	}
}

// mdScaleDetails is what the table leaves out: starts that failed, phases
// that could not finish, the commands of a route add and delete by verb.
func (rep ScaleReport) mdScaleDetails(b *strings.Builder) {
	w := printer(b)
	w("### Per size\n\n")
	for _, r := range rep.Results {
		w("- **%s routes**: ", thousands(r.Routes))
		if r.StartErr != "" {
			w("dcm did not start (%s). Nothing else was measured at this size.\n", r.StartErr)
			continue
		}
		w("live heap before dcm started (the fake clientset's objects, the pods, the bench) %.0f MB; ", r.BaseHeapMB)
		w("%d endpoint changes timed; %d routes added and deleted (commands per add: %s; per delete: %s; reloads meanwhile: %d); ",
			len(r.Event), len(r.Add), perVerb(r.AddVerbs, len(r.Add)), perVerb(r.DeleteVerbs, len(r.Delete)), r.RouteOpsReloads)
		for _, x := range []struct {
			what string
			tp   Throughput
		}{{"all routes", r.Throughput}, {fmt.Sprintf("%d routes of each", baseRoutes), r.Lookup}} {
			tp := x.tp
			w("throughput over %s: %s requests at the size, %s at %d routes, HAProxy opening %s and %s new connections to the pods per 100 requests",
				x.what, thousands(tp.Requests), thousands(tp.BaseReqs), baseRoutes, per100(tp.NewConns, tp.Requests), per100(tp.BaseConns, tp.BaseReqs))
			if tp.Failed > 0 {
				w(", %d failed (%s)", tp.Failed, countList(tp.FailReasons))
			}
			w("; ")
		}
		w("the growth by %s routes took %s; reloads during the full resync: %d.", thousands(r.Grown), r.GrowTook.Round(time.Millisecond), r.ResyncReloads)
		for _, n := range r.Notes {
			w(" **Not measured**: %s.", n)
		}
		w("\n")
	}
	w("\n")
}

func perVerb(m map[string]int, routes int) string {
	if routes == 0 || len(m) == 0 {
		return "none"
	}
	per := map[string]int{}
	for k, v := range m {
		if !strings.HasPrefix(k, "show") {
			per[k] = int(math.Round(float64(v) / float64(routes)))
		}
	}
	return countList(per)
}

func per100(n, of int) string {
	if of == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f", 100*float64(n)/float64(of))
}

// mdScaleMethod says how each figure is measured.
func (rep ScaleReport) mdScaleMethod(b *strings.Builder) {
	w := printer(b)
	cfg := rep.Config
	w("### How the scale figures are measured\n\n")
	w("1. **Event → HAProxy acknowledged**: %d EndpointSlice updates, one after the other, each taking one route's first\n", cfg.Changes)
	w("   endpoint out (or back); from the informer seeing it to the engine's event that HAProxy acknowledged the sync that\n")
	w("   took it (`bench.KubeCluster.EventToHAProxy`, which `BenchmarkEventToHAProxy{1000,10000}Routes` in e2e runs too).\n")
	w("2. **Route add / delete**: %d routes created one after the other (Service, EndpointSlice, then the Ingress), each\n", cfg.RouteOps)
	w("   once the last was served, then deleted alike (the Ingress first). Served: from the Ingress's write until a request\n")
	w("   for the new host, sent through HAProxy on a new connection every 1–10 ms, first reaches one of its pods (the pod\n")
	w("   records it); deleted: until such a request is answered 503. Commands: the admin socket commands that change\n")
	w("   HAProxy (all but `show …`, `dcm_runtime_command_duration_seconds`) over all adds, and over all deletes until the\n")
	w("   deleted routes' servers were deleted too (HAProxy allows it once they are idle), divided by the routes.\n")
	w("3. **Throughput**: %d keep-alive connections, each sending its next request as soon as the last was answered, to\n", cfg.Conns)
	w("   random routes' hosts; every answer checked to come from one of the route's pods. The same load goes to a second\n")
	w("   dcm and HAProxy of %d routes on pods of their own: %d rounds, each a window of %s on one stack and one on the\n", baseRoutes, cfg.Rounds, cfg.Window)
	w("   other (the order swapped every round, at most %s requests a window, after a warm-up of each), a ratio per round;\n", thousands(cfg.MaxRequests))
	w("   the figure is the median round, as the machine's other work moves single rounds by half either way. The\n")
	w("   requests per second are all rounds' requests over their time. Client and dcm share the bench process; the pods\n")
	w("   are a process of their own.\n")
	w("   Twice: with the load spread over all the routes at the size, and over %d of them, evenly apart, against all %d of\n", baseRoutes, baseRoutes)
	w("   the small stack. Over all routes, each pod's server sees a request less often than HAProxy keeps an idle\n")
	w("   connection to it (pool-purge-delay, 5 s), so at 10,000 routes nearly every request opens a connection to a pod\n")
	w("   (the count per size below), as any proxy spreading load over 100,000 servers would; over %d routes on each side\n", baseRoutes)
	w("   the pods' connections are reused alike, and the ratio is what the number of routes costs a request (the lookup\n")
	w("   in larger maps): the goal is judged on it.\n")
	w("4. **Startup**: from the start of dcm's informers until dcm is ready (its first sync: HAProxy started with every\n")
	w("   route), and until a request for every route's host was answered by its pods. dcm runs in the bench process, so its\n")
	w("   memory is the growth of that process: RSS (and its peak, VmHWM reset just before) over the start, from a baseline\n")
	w("   taken after a collection with the cluster already in the fake clientset; and the live Go heap after a collection.\n")
	w("   The collector lets the heap grow to twice what is live, the fake clientset's objects included (per size below), so\n")
	w("   the RSS growth may exceed what a dcm process of its own would hold by up to that much. The pods run in a process\n")
	w("   of their own, as pods do: the connections HAProxy keeps to them are not dcm's.\n")
	w("   HAProxy's: the sum of `Pss` over its master and worker.\n")
	w("5. **Growth**: %s routes created %d at a time, each step once the last was served; reloads are\n", thousands(cfg.Grow), cfg.GrowStep)
	w("   `dcm_reload_duration_seconds` samples, reasons `dcm_reloads_total`. dcm renders a tenth of each kind's routes as\n")
	c := dcm.HAProxy26MemoryCosts()
	w("   spares (`plan.PoolShare`, never fewer than `--pool-size`); a reload for a kind that ran out renders it %s\n", thousands(plan.PoolBurst))
	w("   spares, or as many as it has routes when fewer (`plan.PoolBurst`). Their memory is each kind's count times an empty\n")
	w("   backend's cost measured on HAProxy 2.6 (`dcm.HAProxy26MemoryCosts`: %s bytes an HTTP one, %s a passthrough\n", thousands(int(c.PerBackend)), thousands(int(c.PerTCPBackend)))
	w("   one, which keeps its route's allowlist and rate limits), against HAProxy's PSS at the start; the growth's peak is\n")
	w("   the most free spares after a step, its end those left once it is served, against HAProxy's PSS then.\n")
	w("6. **Full resync**: every route's EndpointSlice written at once by four writers, each flipping the route's first\n")
	w("   endpoint; until the engine's events show every backend as written (an `applied` event carries the backends it\n")
	w("   touched). The goal is checked on the time from the last write: before it dcm cannot have everything; the time from\n")
	w("   the first write includes writing the slices.\n\n")
}

// WriteScale puts the section into bench.md in dir, between its markers,
// or at the end of a page that has none.
func (rep ScaleReport) WriteScale(dir string) error {
	path := dir + "/bench.md"
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", path, err)
	}
	page := string(b)
	section := rep.Markdown()
	if out, ok := replaceBetween(page, scaleStart, scaleEnd, section[len(scaleStart):len(section)-len(scaleEnd)]); ok {
		page = out
	} else {
		page = strings.TrimRight(page, "\n") + "\n\n" + section
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("docs dir: %w", err)
	}
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// keptScale is the scale section of a page the comparison rewrites, or a
// placeholder with the markers when it has none yet.
func keptScale(page string) string {
	if i := strings.Index(page, scaleStart); i >= 0 {
		if j := strings.Index(page[i:], scaleEnd); j >= 0 {
			return page[i : i+j+len(scaleEnd)]
		}
	}
	return scaleStart + "## Scale\n\nNot run yet: `make bench` runs it after the comparison, `make bench-scale` alone.\n\n" + scaleEnd
}
