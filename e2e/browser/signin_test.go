package browser

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/dcm-router/dcm/dcm"
)

// TestSignIn: a page without a session sends the browser to the login
// form, which refuses a wrong token, takes the demo's token and lands on
// the page asked for, live; signing out ends the session. A viewer's token
// signs in too, to pages without actions, and the API refuses its actions.
func TestSignIn(t *testing.T) {
	p := startPortal(t)
	tab := newTab(t)

	do(t, tab, chromedp.Navigate(p.PortalURL+"/backends?q=web"))
	if loc := eval[string](t, tab, `location.pathname + location.search`); loc != "/login?next=%2Fbackends%3Fq%3Dweb" {
		t.Fatalf("without a session /backends went to %s, want the login form", loc)
	}
	screenshot(t, tab, "login")

	do(t, tab, chromedp.SendKeys(chromedp.ID("token"), "not-a-token-but-long-enough"),
		chromedp.Submit(chromedp.ID("token")),
		chromedp.WaitVisible(chromedp.CSS(`[role=alert]`)))
	if msg := eval[string](t, tab, `document.querySelector('[role=alert]').textContent`); msg != "That token is not valid." {
		t.Fatalf("a wrong token: %q", msg)
	}

	do(t, tab, chromedp.SendKeys(chromedp.ID("token"), p.admin),
		chromedp.Submit(chromedp.ID("token")),
		chromedp.WaitVisible(chromedp.ID("backend-filter")))
	if loc := eval[string](t, tab, `location.pathname + location.search`); loc != "/backends?q=web" {
		t.Fatalf("after signing in at %s, want /backends?q=web", loc)
	}
	waitFor(t, tab, "the feed is live", 10*time.Second, `document.getElementById('feed').dataset.state === 'live'`)
	if who := eval[string](t, tab, `document.querySelector('.who').textContent`); who != "alice" {
		t.Errorf("signed in as %q, want alice", who)
	}

	do(t, tab, chromedp.Click(chromedp.CSS(`.signout button`)), chromedp.WaitVisible(chromedp.ID("token")))
	do(t, tab, chromedp.Navigate(p.PortalURL+"/"))
	if loc := eval[string](t, tab, `location.pathname`); loc != "/login" {
		t.Fatalf("after signing out / went to %s, want /login", loc)
	}

	page := "/backends/" + webBackend
	signIn(t, tab, p.PortalURL, p.viewer, page)
	if n := eval[int](t, tab, `document.querySelectorAll('form.actions, #confirm-dialog').length`); n != 0 {
		t.Errorf("a viewer sees %d action forms", n)
	}
	if head := textOf(t, tab, ".servers thead"); strings.Contains(strings.ToLower(head), "actions") {
		t.Errorf("a viewer sees an actions column: %q", head)
	}
	srv := servers(p.Stack, webBackend)[0]
	code := evalAwait[int](t, tab, fmt.Sprintf(`fetch(%s, {method: 'POST', headers: {'Content-Type': 'application/json',
		'X-CSRF-Token': document.querySelector('meta[name=csrf-token]').content}, body: '{"state":"drain"}'}).then(r => r.status)`,
		jsString("/api/v1/backends/"+webBackend+"/servers/"+srv.Name+"/state")))
	if code != 403 {
		t.Errorf("the viewer's drain got HTTP %d, want 403", code)
	}
	if st := servers(p.Stack, webBackend)[0].State; st != dcm.StateReady {
		t.Errorf("after the viewer's drain, %s is %s", srv.Name, st)
	}
}
