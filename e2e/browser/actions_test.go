package browser

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/dcm-router/dcm/dcm"
)

// TestDrainFromDetailPage: draining a server from its backend's page, through
// the confirmation dialog, turns its chip to drain and HAProxy sends that pod
// no new request. Without JavaScript the same page works with plain forms
// and a confirm checkbox.
func TestDrainFromDetailPage(t *testing.T) {
	p := startPortal(t)
	tab := newTab(t)
	pagePath := "/backends/" + webBackend
	signIn(t, tab, p.PortalURL, p.admin, pagePath)
	open(t, tab, p.PortalURL+pagePath)
	marker := randomToken(t)
	eval[string](t, tab, `window.__loaded = `+jsString(marker))

	srvs := servers(p.Stack, webBackend)
	if len(srvs) != 2 {
		t.Fatalf("web has %d servers, want 2", len(srvs))
	}
	target, other := srvs[0], srvs[1]
	row := fmt.Sprintf(`#server-rows tr[data-server=%q]`, target.Name)
	do(t, tab, chromedp.Click(chromedp.CSS(row+` button[data-action=drain]`)))
	waitFor(t, tab, "the confirmation dialog opens", 2*time.Second, `document.getElementById('confirm-dialog').open`)
	if title := textOf(t, tab, "#confirm-dialog h2"); title != "Drain "+target.Name+"?" {
		t.Errorf("the dialog asks %q", title)
	}
	if st := servers(p.Stack, webBackend)[0].State; st != dcm.StateReady {
		t.Fatalf("the server is %s before the confirmation", st)
	}
	do(t, tab, chromedp.Click(chromedp.CSS(`#confirm-dialog button[value=ok]`)))

	waitFor(t, tab, "the row and the chip show drain", 2*time.Second,
		fmt.Sprintf(`document.querySelector(%s).dataset.state === 'drain' && document.querySelector('.chips [data-server=%q]').dataset.state === 'drain'`, jsString(row), target.Name),
		fmt.Sprintf(`document.querySelector(%s).dataset.state`, jsString(row)))
	if got := servers(p.Stack, webBackend); got[0].State != dcm.StateDrain {
		t.Fatalf("the engine has %s in %s", target.Name, got[0].State)
	}
	served, err := p.Served(webHost, "/", 20)
	if err != nil {
		t.Fatal(err)
	}
	if served[target.Pod] != 0 || served[other.Pod] != 20 {
		t.Fatalf("after draining %s, 20 requests went to %v", target.Pod, served)
	}
	if got := eval[string](t, tab, `window.__loaded`); got != marker {
		t.Errorf("the page was reloaded")
	}
	readmeShot(t, tab, "backend")

	overview := siblingTab(t, tab)
	open(t, overview, p.PortalURL+"/")
	if st := eval[string](t, overview, fmt.Sprintf(`document.querySelector('#backend-rows .chip[data-server=%q]').dataset.state`, target.Name)); st != "drain" {
		t.Errorf("the overview shows %s as %s", target.Name, st)
	}
	readmeShot(t, overview, "overview")

	// Without JavaScript: the form needs its confirm checkbox, then posts
	// and comes back to the page, which shows the server in maint.
	static := siblingTab(t, tab)
	disableScripts(t, static)
	do(t, static, chromedp.Navigate(p.PortalURL+pagePath))
	form := fmt.Sprintf(`#server-rows tr[data-server=%q] form.actions:not(.weight)`, other.Name)
	do(t, static, chromedp.Click(chromedp.CSS(form+` button[value=maint]`)))
	// Proved below, once the confirmed maint is in: it is the only action
	// on the server.
	unconfirmed := p.Engine.Snapshot().Seq
	do(t, static, chromedp.Click(chromedp.CSS(form+` input[name=confirm]`)))
	// The API answers the form with a redirect back to the page.
	if _, err := chromedp.Run(static, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.CSS(form+` button[value=maint]`)))); err != nil {
		t.Fatal(err)
	}
	if loc := eval[string](t, static, `location.pathname`); loc != pagePath {
		t.Fatalf("the form came back to %s, want %s", loc, pagePath)
	}
	p.Eventually("the form's maint reaches HAProxy", 5*time.Second, func() error {
		if st := servers(p.Stack, webBackend)[1].State; st != dcm.StateMaint {
			return fmt.Errorf("%s is %s", other.Name, st)
		}
		return nil
	})
	evs, _ := p.Engine.Events(unconfirmed)
	actions := 0
	for _, ev := range evs {
		if ev.Type == dcm.EventAction && ev.Object != nil && strings.HasSuffix(ev.Object.Name, "/"+other.Name) {
			actions++
		}
	}
	if actions != 1 {
		t.Errorf("%d actions on %s since the click without the confirm checkbox, want 1 (the confirmed maint)", actions, other.Name)
	}
	p.Eventually("the page rendered again shows maint", 5*time.Second, func() error {
		do(t, static, chromedp.Navigate(p.PortalURL+pagePath))
		if st := eval[string](t, static, fmt.Sprintf(`document.querySelector('#server-rows tr[data-server=%q]').dataset.state`, other.Name)); st != "maint" {
			return fmt.Errorf("the row shows %s", st)
		}
		return nil
	})
	// The live tab followed without a reload.
	waitFor(t, tab, "the live page shows maint", 2*time.Second,
		fmt.Sprintf(`document.querySelector('#server-rows tr[data-server=%q]').dataset.state === 'maint'`, other.Name))

	// The audit log says who did what, and which commands HAProxy got.
	events := siblingTab(t, tab)
	open(t, events, p.PortalURL+"/events")
	// textContent: the commands sit in closed <details>.
	log := eval[string](t, events, `document.getElementById('event-list').textContent`)
	for _, want := range []string{webBackend + "/" + target.Name + " set to drain by alice", webBackend + "/" + other.Name + " set to maint by alice",
		"set-state " + webBackend + "/" + target.Name + " drain"} {
		if !strings.Contains(log, want) {
			t.Errorf("the audit log lacks %q:\n%s", want, log)
		}
	}
	eval[bool](t, events, `document.querySelector('#event-list > li[data-type=applied] details').open = true`)
	readmeShot(t, events, "events")
}
