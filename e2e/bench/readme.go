package bench

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Headline is the README's excerpt of the run, five lines: which run it was
// (date, a machine of cores cores, the workload in a few words), then dcm
// (`dynamic`) against the other modes on reloads, event → serving p99,
// HAProxy's memory peak with old workers, and failed requests with
// long-lived connections cut. docs/bench.md has the rest; the README is
// kept short.
func (rep Report) Headline(cores int) string {
	cfg := rep.Config
	kind := "`make bench`"
	if cfg.Quick {
		kind = "`BENCH_QUICK=1 make bench` (quick run, indicative only)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "From %s on %s (%s, %s routes of %s pods under churn and load; [docs/bench.md](docs/bench.md)):\n",
		kind, rep.Date.UTC().Format("2006-01-02"), plural(cores, "core"), thousands(cfg.Routes),
		span([]float64{float64(cfg.MinEndpoints), float64(cfg.MaxEndpoints)}, asCount))
	reloads := func(r Result) float64 { return float64(r.ReloadCount()) }
	fmt.Fprintf(&b, "- reloads: dcm %s; the router without DCM %s; the classic slot DCM %s\n",
		rep.span(isDCM, reloads, asCount), rep.span(isReload, reloads, asCount), rep.span(isSlots, reloads, asCount))
	fmt.Fprintf(&b, "- event → serving p99: %s\n", rep.versus(func(r Result) float64 { return pct(r.Latencies, 0.99) }, asLatency))
	fmt.Fprintf(&b, "- HAProxy memory peak: %s\n", rep.memoryPeak())
	fmt.Fprintf(&b, "- failed requests: %s; long-lived connections cut: %s\n",
		rep.versus(func(r Result) float64 { return float64(r.Failed) }, asCount),
		rep.versus(func(r Result) float64 { return float64(r.StreamsCut) }, asCount))
	return b.String()
}

// The modes the excerpt names, by the names Modes gives them.
func isDCM(r Result) bool    { return r.Mode == "dynamic" }
func isReload(r Result) bool { return r.Mode == "reload" }
func isSlots(r Result) bool  { return strings.HasPrefix(r.Mode, "slots") }
func isOther(r Result) bool  { return !isDCM(r) }
func isAny(Result) bool      { return true }

// values is one figure of the results of the modes that match.
func (rep Report) values(match func(Result) bool, figure func(Result) float64) []float64 {
	var out []float64
	for _, r := range rep.Results {
		if match(r) {
			out = append(out, figure(r))
		}
	}
	return out
}

func (rep Report) span(match func(Result) bool, figure func(Result) float64, format numberFormat) string {
	return span(rep.values(match, figure), format)
}

// versus is dcm's figure and the others' span, or the one value when every
// mode has it.
func (rep Report) versus(figure func(Result) float64, format numberFormat) string {
	if all := rep.values(isAny, figure); len(all) > 0 && !slices.ContainsFunc(all, math.IsNaN) && slices.Min(all) == slices.Max(all) {
		return span(all, format) + " in every mode"
	}
	return "dcm " + rep.span(isDCM, figure, format) + "; the others " + rep.span(isOther, figure, format)
}

// memoryPeak is dcm's and the others' HAProxy memory peak, with the old
// workers behind it (dcm's only when it has any).
func (rep Report) memoryPeak() string {
	peak := func(r Result) float64 { return r.PeakPSSMB }
	old := func(r Result) float64 { return float64(r.PeakOld) }
	s := "dcm " + rep.span(isDCM, peak, asMB)
	if n := int(slices.Max(append(rep.values(isDCM, old), 0))); n > 0 {
		s += ", with " + plural(n, "old worker")
	}
	s += "; the others " + rep.span(isOther, peak, asMB)
	switch n := int(slices.Max(append(rep.values(isOther, old), 0))); n {
	case 0:
		s += ", with no old workers"
	default:
		s += ", with up to " + plural(n, "old worker")
	}
	return s
}

// numberFormat writes a value as a number and its unit (with its leading
// space, or none).
type numberFormat func(float64) (number, unit string)

func asCount(v float64) (string, string) { return thousands(int(math.Round(v))), "" }

func asMB(v float64) (string, string) { return thousands(int(math.Round(v))), " MB" }

// asLatency writes milliseconds as such up to a second, as seconds above.
func asLatency(ms float64) (string, string) {
	if math.Round(ms) < 1000 {
		return strconv.FormatFloat(ms, 'f', 0, 64), " ms"
	}
	return strconv.FormatFloat(ms/1000, 'f', 1, 64), " s"
}

// span is values (NaN left out) as one number when they all read the same,
// else as their range, the unit written once when both ends share it:
// "42–69", "2.6–4.0 s", "900 ms–1.2 s". No value is "—".
func span(values []float64, format numberFormat) string {
	values = slices.DeleteFunc(slices.Clone(values), math.IsNaN)
	if len(values) == 0 {
		return "—"
	}
	lo, loUnit := format(slices.Min(values))
	hi, hiUnit := format(slices.Max(values))
	switch {
	case lo == hi && loUnit == hiUnit:
		return lo + loUnit
	case loUnit == hiUnit:
		return lo + "–" + hi + hiUnit
	}
	return lo + loUnit + "–" + hi + hiUnit
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}
