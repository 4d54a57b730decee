package browser

import (
	"fmt"
	"testing"
	"time"

	"github.com/dcm-router/dcm/e2e/harness"
)

// TestShowcaseBackends: the demo as make run starts it lists a backend for
// each kind of route on /backends (http, edge, passthrough, reencrypt, the
// canary, the sticky route and the OpenShift Route), each with a ready
// server; its screenshot is the one docs/demo.md and the README show.
func TestShowcaseBackends(t *testing.T) {
	needBrowser(t)
	admin := randomToken(t)
	s := harness.Start(t, harness.WithTokens(t, harness.Options{Showcase: true}, admin+" admin alice\n"))
	tab := newTab(t)
	signIn(t, tab, s.PortalURL, admin, "/backends")
	open(t, tab, s.PortalURL+"/backends")
	hosts := []string{"web.demo.localhost", "secure.demo.localhost", "pass.demo.localhost", "reencrypt.demo.localhost",
		"canary.demo.localhost", "sticky.demo.localhost", "route.demo.localhost"}
	for _, h := range hosts {
		js := fmt.Sprintf(`[...document.querySelectorAll('#backend-rows [data-backend]')].some(r => r.innerText.includes(%q) && r.querySelector('.chip[data-state=ready]'))`, h)
		waitFor(t, tab, "a backend of "+h+" with a ready server on /backends", 20*time.Second, js,
			`[...document.querySelectorAll('#backend-rows [data-backend]')].map(r => r.dataset.backend)`)
	}
	readmeShot(t, tab, "demo-backends")
}
