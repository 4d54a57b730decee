package bench

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// The script depends on the seed alone, so every mode gets the same churn;
// it never takes a route outside its endpoint bounds, lets route adds run
// at most RouteDrift ahead of deletes (or behind), and rotates only live
// edge routes' certificates.
func TestMakeScript(t *testing.T) {
	for _, quick := range []bool{false, true} {
		t.Run(map[bool]string{false: "full", true: "quick"}[quick], func(t *testing.T) { testMakeScript(t, configFor(quick).Workload) })
	}
}

func testMakeScript(t *testing.T, w Workload) {
	a, b := MakeScript(w), MakeScript(w)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed made two scripts")
	}
	if len(a.Events) != int(w.Rate*w.Duration.Seconds()) {
		t.Fatalf("%d events", len(a.Events))
	}
	pods := map[string]int{}
	for k, v := range a.Initial {
		pods[k] = v
	}
	kinds := map[EventKind]int{}
	drift := 0
	var last time.Duration
	for _, ev := range a.Events {
		kinds[ev.Kind]++
		if ev.At < last {
			t.Fatalf("event at %s after %s", ev.At, last)
		}
		last = ev.At
		if ev.Kind != RouteAdd && RouteName(0) <= ev.Route && ev.Route < RouteName(w.Stable) {
			t.Errorf("stable route %s churned", ev.Route)
		}
		switch ev.Kind {
		case ScaleOut:
			pods[ev.Route] += ev.N
		case ScaleIn:
			for _, v := range ev.Victims {
				if v >= pods[ev.Route] {
					t.Errorf("victim %d of %d pods", v, pods[ev.Route])
				}
			}
			pods[ev.Route] -= ev.N
		case RouteAdd:
			pods[ev.Route] = ev.N
			if ev.Edge != a.Edge[ev.Route] {
				t.Errorf("%s added with edge %v, script says %v", ev.Route, ev.Edge, a.Edge[ev.Route])
			}
			drift++
		case RouteDelete:
			delete(pods, ev.Route)
			drift--
		case CertRotate:
			if _, live := pods[ev.Route]; !live || !a.Edge[ev.Route] {
				t.Errorf("rotation of %s: live %v, edge %v", ev.Route, live, a.Edge[ev.Route])
			}
		}
		if drift > w.RouteDrift || drift < -w.RouteDrift {
			t.Fatalf("route adds minus deletes reach %d, bound %d", drift, w.RouteDrift)
		}
		if n, ok := pods[ev.Route]; ok && (n < w.MinEndpoints || n > w.MaxEndpoints) {
			t.Errorf("%s: %s leaves %d pods", ev.Kind, ev.Route, n)
		}
	}
	edge := 0
	for _, name := range a.Order {
		if a.Edge[name] {
			edge++
		}
	}
	if share := float64(edge) / float64(len(a.Order)); share < w.EdgeShare-0.05 || share > w.EdgeShare+0.05 {
		t.Errorf("%d of %d initial routes are edge routes, want a share near %.2f", edge, len(a.Order), w.EdgeShare)
	}
	for _, k := range []EventKind{ScaleOut, ScaleIn, Replace, RouteAdd, RouteDelete, CertRotate} {
		if kinds[k] == 0 {
			t.Errorf("no %s in %v", k, kinds)
		}
	}
}

func TestParseProc(t *testing.T) {
	st, err := parseStat("4242 (haproxy (x)) S 4200 4242 4200 0 -1 4194560 100 0 0 0 7 3 2 1 20 0 1 0 98765 1000 200 18446744073709551615")
	if err != nil {
		t.Fatal(err)
	}
	if want := (procStat{pid: 4242, ppid: 4200, cpu: 10, ccpu: 3, start: 98765}); st != want {
		t.Errorf("got %+v, want %+v", st, want)
	}
	pss, rss, err := parseRollup("55d0-7ffd ---p 00000000 00:00 0 [rollup]\nRss:  20480 kB\nPss:  8192 kB\nPss_Anon: 1 kB\n")
	if err != nil || pss != 8192 || rss != 20480 {
		t.Errorf("rollup: %d %d %v", pss, rss, err)
	}
}

func TestHeadlineSaysWhereDCMIsNotAhead(t *testing.T) {
	r := row{name: "x", format: "%.0f", vals: []float64{0, 5, 5, 9}}
	if got := r.verdict(); !strings.Contains(got, "not ahead (reload better)") {
		t.Errorf("verdict %q", got)
	}
	if got := r.cell(3); got != "9 (reload: 0)" {
		t.Errorf("cell %q", got)
	}
	r.vals = []float64{100, 10, 5, 0}
	if got, cell := r.verdict(), r.cell(3); got != "**ahead**" || cell != "0 (0×)" {
		t.Errorf("verdict %q cell %q", got, cell)
	}
	if out, ok := replaceBetween("a<!-- bench:start -->\nold<!-- bench:end -->b", "<!-- bench:start -->\n", "<!-- bench:end -->", "new\n"); !ok || out != "a<!-- bench:start -->\nnew\n<!-- bench:end -->b" {
		t.Errorf("replaceBetween: %q", out)
	}
}

func TestNotAheadSaysWhy(t *testing.T) {
	rep := Report{Config: configFor(true)}
	for i, m := range Modes() {
		r := Result{Mode: m.Name, Reloads: map[string]int{}, Commands: 10 * (i + 1)}
		rep.Results = append(rep.Results, r)
	}
	rep.Results[3].Reloads["pool-exhausted"] = 1
	rep.Results[3].PeakOld = 1
	var b strings.Builder
	rep.notAhead(&b)
	for _, want := range []string{"runtime commands, all", "not ahead (reload better)", "`pool-exhausted`", "peak 1"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in:\n%s", want, b.String())
		}
	}
}
