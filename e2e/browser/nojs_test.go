package browser

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestPagesWithAndWithoutJavaScript: every page is complete without
// JavaScript — the filters and the what-if are GET forms the server
// applies — and with it
// the same filters apply as you type and the address follows them.
func TestPagesWithAndWithoutJavaScript(t *testing.T) {
	p := startPortal(t)
	tab := newTab(t)
	signIn(t, tab, p.PortalURL, p.admin, "/")
	static := siblingTab(t, tab)
	disableScripts(t, static)

	rows := `[...document.querySelectorAll('#backend-rows > [data-backend]')].filter(r => !r.hidden).map(r => r.dataset.backend).join(' ')`
	pages := []struct {
		path string
		// expr is JavaScript evaluated on the page; want its result.
		expr, want string
	}{
		{"/", rows, "be_http:demo:api be_http:demo:shop be_http:demo:web"},
		{"/", `document.querySelector('#summary [data-bind="text=servers"]').textContent`, "5"},
		{"/backends?q=shop", rows, "be_http:demo:api be_http:demo:shop"},
		{"/backends?q=%2Fapi", rows, "be_http:demo:api"},
		{"/backends?namespace=nope", `document.getElementById('no-match').hidden ? 'rows' : 'none'`, "none"},
		{"/backends?state=drain", rows, ""},
		{"/backends/" + webBackend, `document.querySelectorAll('#server-rows tr').length + ' ' + document.querySelector('#route-info').innerText.includes('web.demo.localhost')`, "2 true"},
		{"/backends/be_http:demo:nope", `document.querySelector('main').innerText.includes('manages no backend be_http:demo:nope')`, "true"},
		{"/events?type=applied", `[...new Set([...document.querySelectorAll('#event-list > li')].map(li => li.dataset.type))].join(' ')`, "applied"},
		{"/events?q=be_http%3Ademo%3Aapi", `[...document.querySelectorAll('#event-list > li')].every(li => li.innerText.includes('be_http:demo:api')) && document.querySelectorAll('#event-list > li').length > 0`, "true"},
		{"/config", `document.querySelector('#files').innerText.includes('backend be_http:demo:web') + ' ' + !document.querySelector('#drift .ok').hidden`, "true true"},
		// The what-if form asks the server, which runs the same planner.
		{"/whatif", `document.querySelector('#wi-workload').options.length + ' ' + document.querySelector('#preview [data-bind="show=empty"]').hidden`, "4 false"},
		{"/whatif?workload=demo%2FDeployment%2Fweb&replicas=4", `document.getElementById('preview').dataset.source + ' ' + document.querySelector('#preview .verdict').textContent + ' ' + document.querySelectorAll('#pv-steps [data-op="add-server"]').length + ' ' + document.querySelectorAll('#pv-traffic tr').length`,
			"server No reload · 6 runtime commands 2 4"}, // add-server, enable-health, set-state ready ×2
	}
	for _, pg := range pages {
		do(t, static, chromedp.Navigate(p.PortalURL+pg.path))
		if got := eval[any](t, static, `String(`+pg.expr+`)`); got != pg.want {
			t.Errorf("%s without JavaScript: %s = %q, want %q", pg.path, pg.expr, got, pg.want)
		}
	}

	// With JavaScript the filter applies as you type.
	open(t, tab, p.PortalURL+"/backends")
	do(t, tab, chromedp.SendKeys(chromedp.CSS(`#backend-filter input[name=q]`), "shop"))
	waitFor(t, tab, "typing filters the list", 2*time.Second, rows+` === 'be_http:demo:api be_http:demo:shop'`, rows)
	do(t, tab, chromedp.SetValue(chromedp.CSS(`#backend-filter select[name=state]`), "drain"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('backend-filter').dispatchEvent(new Event('input', {bubbles: true}))`))
	waitFor(t, tab, "the state filter applies", 2*time.Second, rows+` === '' && !document.getElementById('no-match').hidden`, rows)
	if loc := eval[string](t, tab, `location.pathname + location.search`); loc != "/backends?q=shop&state=drain" {
		t.Errorf("the address does not follow the filter: %s", loc)
	}
	do(t, tab, chromedp.Reload())
	waitFor(t, tab, "the filter survives a reload", 5*time.Second, rows+` === '' && document.querySelector('#backend-filter input[name=q]').value === 'shop'`, rows)

	// The events filter, as you type, on events that arrive live too.
	open(t, tab, p.PortalURL+"/events")
	do(t, tab, chromedp.SetValue(chromedp.CSS(`#event-filter select[name=type]`), "action"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('event-filter').dispatchEvent(new Event('input', {bubbles: true}))`))
	visible := `[...document.querySelectorAll('#event-list > li')].filter(li => !li.hidden)`
	waitFor(t, tab, "only actions show", 2*time.Second, visible+`.length === 0`)
	srv := servers(p.Stack, webBackend)[0]
	if err := p.Engine.SetServerWeight("tester", webBackend, srv.Name, 7); err != nil {
		t.Fatal(err)
	}
	waitFor(t, tab, "the live action shows, the rest stays hidden", 3*time.Second,
		visible+`.length === 1 && `+visible+`[0].innerText.includes('weight set to 7 by tester')`,
		visible+`.map(li => li.innerText)`)
	if !strings.Contains(textOf(t, tab, "#event-count"), "1 of the latest") {
		t.Errorf("the count says %q", textOf(t, tab, "#event-count"))
	}
}
