package browser

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// TestScaleAppearsLive: scaling the demo's web app makes its new servers'
// chips appear on / and on /backends without reloading either page (the
// time it took is logged: well under a second on an idle machine, but a
// test is no place for a speed target on two shared cores); the patched pages then read exactly like pages the server
// renders afresh (the script and views/ agree).
func TestScaleAppearsLive(t *testing.T) {
	p := startPortal(t)
	overview := newTab(t)
	signIn(t, overview, p.PortalURL, p.admin, "/")
	open(t, overview, p.PortalURL+"/")
	backends := siblingTab(t, overview)
	open(t, backends, p.PortalURL+"/backends")
	tabs := map[string]context.Context{"/": overview, "/backends": backends}

	marker := randomToken(t)
	for page, tab := range tabs {
		eval[string](t, tab, `window.__loaded = `+jsString(marker))
		if n := eval[int](t, tab, chipsJS(webBackend)); n != 2 {
			t.Fatalf("%s shows %d web chips before scaling, want 2", page, n)
		}
	}

	start := time.Now()
	p.Scale("demo", "web", 4)
	deadline := start.Add(10 * time.Second)
	for _, page := range []string{"/", "/backends"} {
		waitFor(t, tabs[page], "4 web chips on "+page, time.Until(deadline), chipsJS(webBackend)+` === 4`, chipsJS(webBackend))
		t.Logf("%s shows the new chips %s after the scale", page, time.Since(start).Round(time.Millisecond))
	}
	want := make([]string, 0, 4)
	for _, s := range servers(p.Stack, webBackend) {
		want = append(want, s.Name)
	}
	slices.Sort(want)
	for page, tab := range tabs {
		got := eval[[]string](t, tab, fmt.Sprintf(`[...document.querySelectorAll('#backend-rows [data-backend=%q] .chip')].map(c => c.dataset.server).sort()`, webBackend))
		if !slices.Equal(got, want) {
			t.Errorf("%s shows chips %v, the engine has %v", page, got, want)
		}
		if got := eval[string](t, tab, `window.__loaded`); got != marker {
			t.Errorf("%s was reloaded (marker %q)", page, got)
		}
	}

	// Once HAProxy serves the four pods and nothing moves, a page the
	// server renders now must read like the page the script kept live.
	p.DemoServes(webHost, "/", "demo", "web", 4)
	static := siblingTab(t, overview)
	disableScripts(t, static)
	for page, tab := range tabs {
		p.Eventually(page+" reads like a fresh render", 5*time.Second, func() error {
			do(t, static, chromedp.Navigate(p.PortalURL+page))
			for _, region := range []string{"#backend-rows", "#summary", "#backend-count"} {
				expr := `(document.querySelector('` + region + `') || {}).innerText || ''`
				fresh, live := eval[string](t, static, expr), eval[string](t, tab, expr)
				if fresh != live {
					return fmt.Errorf("%s differs:\nserver: %q\nlive:   %q", region, fresh, live)
				}
			}
			return nil
		})
	}
	if state := eval[string](t, static, `document.getElementById('feed').textContent`); state != "static" {
		t.Errorf("without JavaScript the feed indicator says %q, want static", state)
	}
	readmeShot(t, backends, "backends")
}

// disableScripts makes a tab render pages as a browser without JavaScript.
func disableScripts(t *testing.T, tab context.Context) {
	t.Helper()
	if _, err := chromedp.Call(tab, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
		t.Fatal(err)
	}
}

// textOf is the visible text of the first element matching a CSS selector.
func textOf(t testing.TB, tab context.Context, sel string) string {
	t.Helper()
	return eval[string](t, tab, `(document.querySelector(`+jsString(sel)+`) || {}).innerText || ''`)
}
