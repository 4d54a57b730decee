package engine

import (
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/haproxy"
)

func TestTrafficBook(t *testing.T) {
	app := RouteKey{Namespace: "shop", Route: "web", Kind: dcm.KindHTTP}
	own := "be_http:shop:web"
	spare, spare2 := "be_http:_pool:1", "be_http:_pool:2"
	on := func(proxy string) map[string]carrier {
		return map[string]carrier{proxy: {key: app, backend: own}}
	}
	row := func(proxy string, req uint64) haproxy.TrafficRow {
		return haproxy.TrafficRow{Proxy: proxy, Requests: req, Responses: [6]uint64{1: req}}
	}
	type read struct {
		pid      int
		rows     []haproxy.TrafficRow
		carriers map[string]carrier
		want     uint64 // the route's requests total after the read
	}
	for _, tc := range []struct {
		name  string
		reads []read
	}{
		{"growth adds up", []read{
			{1, []haproxy.TrafficRow{row(own, 5)}, on(own), 5},
			{1, []haproxy.TrafficRow{row(own, 12)}, on(own), 12},
		}},
		{"clear counters within a worker", []read{
			{1, []haproxy.TrafficRow{row(own, 10)}, on(own), 10},
			{1, []haproxy.TrafficRow{row(own, 3)}, on(own), 13},
		}},
		{"reload: a new worker starts at zero", []read{
			{1, []haproxy.TrafficRow{row(own, 10)}, on(own), 10},
			// The new worker has already served 40: more than the old
			// one's 10, so only the pid tells that it restarted.
			{2, []haproxy.TrafficRow{row(own, 40)}, on(own), 50},
			{2, []haproxy.TrafficRow{row(own, 45)}, on(own), 55},
		}},
		{"pool move: spare, then its own backend after a reload", []read{
			{1, []haproxy.TrafficRow{row(spare, 7), row(own, 0)}, on(spare), 7},
			{1, []haproxy.TrafficRow{row(spare, 9)}, on(spare), 9},
			{2, []haproxy.TrafficRow{row(spare, 0), row(own, 4)}, on(own), 13},
		}},
		{"a reused spare brings none of its old route's traffic", []read{
			// The spare served another route (100) and went back to the
			// pool; this route takes it in the same worker.
			{1, []haproxy.TrafficRow{row(spare, 100)}, map[string]carrier{}, 0},
			{1, []haproxy.TrafficRow{row(spare, 103)}, on(spare), 3},
		}},
		{"moved: the draining proxy and the new one add up", []read{
			{1, []haproxy.TrafficRow{row(spare, 10)}, on(spare), 10},
			{1, []haproxy.TrafficRow{row(spare, 12), row(spare2, 5)}, map[string]carrier{
				spare:  {key: app, backend: dcm.MovedName(spare), retiring: true},
				spare2: {key: app, backend: own},
			}, 17},
		}},
		{"a route that is gone loses its series", []read{
			{1, []haproxy.TrafficRow{row(own, 10)}, on(own), 10},
			{1, []haproxy.TrafficRow{row(own, 11)}, map[string]carrier{}, 0},
			// Back again: a new series, counting from what it serves now.
			{1, []haproxy.TrafficRow{row(own, 15)}, on(own), 4},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			book := newTrafficBook()
			at := time.Unix(1000, 0)
			for i, r := range tc.reads {
				at = at.Add(time.Second)
				book.add(haproxy.Traffic{Pid: r.pid, Rows: r.rows}, r.carriers, at)
				var got uint64
				for _, rt := range book.view() {
					if rt.RouteKey == app {
						got = rt.Requests
						if rt.Backend != own {
							t.Errorf("read %d: backend %q, want %q", i, rt.Backend, own)
						}
						if rt.Responses[1] != got {
							t.Errorf("read %d: 2xx %d, want %d", i, rt.Responses[1], got)
						}
					}
				}
				if got != r.want {
					t.Errorf("read %d: requests %d, want %d", i, got, r.want)
				}
			}
		})
	}
}

func TestTrafficRates(t *testing.T) {
	app := RouteKey{Namespace: "shop", Route: "web", Kind: dcm.KindHTTP}
	by := map[string]carrier{"be_http:shop:web": {key: app, backend: "be_http:shop:web"}}
	book := newTrafficBook()
	at := time.Unix(1000, 0)
	for i := range dcm.TrafficSamples + 5 {
		at = at.Add(2 * time.Second)
		book.add(haproxy.Traffic{Pid: 1, Rows: []haproxy.TrafficRow{{Proxy: "be_http:shop:web",
			Requests: uint64(10 * i), Responses: [6]uint64{4: uint64(i)}}}}, by, at)
	}
	rt := book.view()[0]
	if len(rt.requests) != dcm.TrafficSamples || rt.requests[len(rt.requests)-1] != 5 || rt.errs[len(rt.errs)-1] != 0.5 {
		t.Fatalf("rates: %d samples, last %v req/s and %v err/s; want %d, 5 and 0.5", len(rt.requests),
			rt.requests[len(rt.requests)-1], rt.errs[len(rt.errs)-1], dcm.TrafficSamples)
	}
}
