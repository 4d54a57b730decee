package browser

import (
	"testing"
	"time"

	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/system"
)

// TestTrafficSparkline: a backend's page draws its route's request rate
// as an SVG polyline from the rates dcm reads from HAProxy, and the line
// changes when requests flow through HAProxy to the route.
func TestTrafficSparkline(t *testing.T) {
	p := startPortalWith(t, harness.Options{Config: func(c *system.Config) { c.TrafficInterval = 200 * time.Millisecond }})
	tab := newTab(t)
	pagePath := "/backends/" + webBackend
	signIn(t, tab, p.PortalURL, p.admin, pagePath)
	open(t, tab, p.PortalURL+pagePath)
	// The page polls at the traffic interval, but no faster than once a
	// second: a few samples arrive within seconds.
	waitFor(t, tab, "the sparkline has samples", 10*time.Second,
		`Number(document.querySelector('#traffic [data-role=sparkline]').dataset.samples) >= 2`)
	before := eval[string](t, tab, `document.querySelector('#traffic [data-role=requests]').getAttribute('points')`)
	load := p.StartLoad(webHost, "/")
	waitFor(t, tab, "the line rises with the requests", 10*time.Second,
		`(() => { const pts = document.querySelector('#traffic [data-role=requests]').getAttribute('points').split(' ');
			const y = Number(pts[pts.length - 1].split(',')[1]); return y < 30 && /requests\/s/.test(document.querySelector('#traffic [data-role=rates]').textContent); })()`,
		`document.querySelector('#traffic [data-role=requests]').getAttribute('points') + ' | ' + document.querySelector('#traffic [data-role=rates]').textContent`)
	if ok, fail, last := load.Finish(); ok == 0 || fail > 0 {
		t.Errorf("load: %d ok, %d failed (%s)", ok, fail, last)
	}
	after := eval[string](t, tab, `document.querySelector('#traffic [data-role=requests]').getAttribute('points')`)
	if after == before {
		t.Errorf("the polyline did not change: %q", after)
	}
}
