package browser

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestReloadFromConfigPage: a reload asked for on /config (through its
// confirmation) reloads HAProxy; the reload event carries no state, so the
// overview fetches the snapshot again and shows the new worker and the
// reason, live; the files still equal the runtime afterwards.
func TestReloadFromConfigPage(t *testing.T) {
	p := startPortal(t)
	config := newTab(t)
	signIn(t, config, p.PortalURL, p.admin, "/config")
	open(t, config, p.PortalURL+"/config")
	overview := siblingTab(t, config)
	open(t, overview, p.PortalURL+"/")
	oldPID := p.WorkerPID()
	if got := textOf(t, overview, `#haproxy [data-bind="text=pid"]`); got != strconv.Itoa(oldPID) {
		t.Fatalf("the overview shows worker %s, HAProxy runs %d", got, oldPID)
	}
	if !eval[bool](t, config, `!document.querySelector('#drift .ok').hidden`) {
		t.Fatalf("the drift check before the reload: %s", textOf(t, config, "#drift"))
	}

	do(t, config, chromedp.SetValue(chromedp.ID("reload-reason"), "portal test"),
		chromedp.Click(chromedp.CSS(`button[data-action=reload]`)))
	waitFor(t, config, "the confirmation dialog opens", 2*time.Second, `document.getElementById('confirm-dialog').open`)
	do(t, config, chromedp.Click(chromedp.CSS(`#confirm-dialog button[value=ok]`)))

	p.Eventually("HAProxy reloads", 10*time.Second, func() error {
		if pid := p.WorkerPID(); pid == oldPID {
			return fmt.Errorf("worker still %d", pid)
		}
		return nil
	})
	newPID := strconv.Itoa(p.WorkerPID())
	waitFor(t, overview, "the overview shows the reload", 3*time.Second,
		`document.querySelector('#haproxy [data-bind="text=pid"]').textContent === `+jsString(newPID)+
			` && document.querySelector('#last-reload [data-bind="text=reasons"]').textContent === 'manual'`+
			` && document.querySelector('#summary [data-bind="text=reloads"]').textContent === '1'`,
		`document.getElementById('last-reload').innerText`)
	if n := eval[int](t, overview, chipsJS(webBackend)); n != 2 {
		t.Errorf("after the reload the overview shows %d web chips", n)
	}
	waitFor(t, config, "the files still equal the runtime", 5*time.Second, `!document.querySelector('#drift .ok').hidden`,
		`document.getElementById('drift').innerText`)

	events := siblingTab(t, config)
	open(t, events, p.PortalURL+"/events")
	log := textOf(t, events, "#event-list")
	for _, want := range []string{"asked for a reload: portal test", "alice", "reloaded in"} {
		if !strings.Contains(log, want) {
			t.Errorf("the audit log lacks %q:\n%s", want, log)
		}
	}
}
