package browser

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/internal/testkit"
	"github.com/dcm-router/dcm/system"
)

// twoReplicas runs two dcm replicas, each with its own HAProxy, watching
// one demo cluster (the first runs it), given each other with --peers:
// the same list on both, each finds itself in it by --listen. They share
// the token file, as replicas of one Deployment share a Secret.
func twoReplicas(t *testing.T) (a, b portal) {
	t.Helper()
	needBrowser(t)
	addrA, addrB := testkit.FreeAddr(t), testkit.FreeAddr(t)
	peers := []string{"http://" + addrA, "http://" + addrB}
	peered := func(listen string) func(*system.Config) {
		return func(c *system.Config) { c.Listen, c.Peers = listen, peers }
	}
	a = portal{admin: randomToken(t), viewer: randomToken(t)}
	tokens := a.admin + " admin alice\n" + a.viewer + " viewer victor\n"
	a.Stack = harness.Start(t, harness.WithTokens(t, harness.Options{Config: peered(addrA)}, tokens))
	b = portal{admin: a.admin, viewer: a.viewer}
	b.Stack = harness.Start(t, harness.WithTokens(t, harness.Options{Config: peered(addrB), Cluster: a.Cluster}, tokens))
	a.DemoServes(webHost, "/", "demo", "web", 2)
	b.DemoServes(webHost, "/", "demo", "web", 2)
	return a, b
}

// fleetRows is the overview's replica rows: name → state, worker PID.
const fleetRows = `Object.fromEntries([...document.querySelectorAll('#fleet-rows tr')].map((tr) =>
	[tr.dataset.replica, tr.dataset.state + ' ' + tr.querySelector('td:nth-child(3)').textContent]))`

// TestFleetTwoReplicasApplyWaitsForBoth: the overview of one replica lists
// both, each with its own HAProxy's worker PID, both having applied the
// latest change; Apply of a scale from the what-if page waits until both
// replicas have applied it: the compare table has a column per replica,
// and the verdict comes only once each replica's own prediction event
// says actual = predicted — by then both HAProxies serve the new pods.
func TestFleetTwoReplicasApplyWaitsForBoth(t *testing.T) {
	a, b := twoReplicas(t)
	nameA, nameB := a.System.PortalAddr(), b.System.PortalAddr()
	tab := newTab(t)
	signIn(t, tab, a.PortalURL, a.admin, "/")
	want := fmt.Sprintf(`(() => { const r = %s; return r[%s] === 'latest %d' && r[%s] === 'latest %d'; })()`,
		fleetRows, jsString(nameA), a.WorkerPID(), jsString(nameB), b.WorkerPID())
	waitFor(t, tab, "the overview lists both replicas, each in step", 20*time.Second, want,
		"JSON.stringify("+fleetRows+")", `document.getElementById('fleet').innerText`)
	if n := eval[int](t, tab, `document.querySelectorAll('#fleet-rows tr').length`); n != 2 {
		t.Errorf("the overview lists %d replicas, want 2 (each once)", n)
	}
	eval[bool](t, tab, `(document.getElementById('fleet').scrollIntoView({ block: 'center' }), true)`)
	readmeShot(t, tab, "fleet")

	wt := openWhatIf(t, a)
	preview(t, wt, 5)
	previewShows(t, wt, "No reload", dcm.OpAddServer, 3)
	// Replica b's HAProxy worker is stopped (SIGSTOP) for the Apply: b's
	// engine cannot apply the scale until it runs again, while a's can.
	// Within the admin socket's 5s read timeout, so b then applies it at
	// runtime as predicted rather than fall back to a reload.
	pidB := b.WorkerPID()
	resume := func() { _ = syscall.Kill(pidB, syscall.SIGCONT) }
	t.Cleanup(resume)
	if err := syscall.Kill(pidB, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	applyPreview(t, wt, 5)
	waitFor(t, wt.Context, "the page waits for replica b, a having applied the scale", 4*time.Second, fmt.Sprintf(`(() => {
		const v = document.getElementById('cmp-verdict');
		return v.dataset.applied === '1' && v.dataset.match === '' && v.textContent.includes('Waiting for 1 of 2 replicas') && v.textContent.includes(%s);
	})()`, jsString(nameB)), `document.getElementById('compare').innerText`)
	if !eval[bool](t, wt.Context, `document.getElementById('wi-apply').disabled`) {
		t.Error("Apply is offered again while a replica has not applied the last one")
	}
	eval[bool](t, wt.Context, `(document.getElementById('compare').scrollIntoView({ block: 'center' }), true)`)
	readmeShot(t, wt.Context, "fleet-whatif")
	resume()
	waitFor(t, wt.Context, "every replica applied the scale", 45*time.Second,
		`(() => { const v = document.getElementById('cmp-verdict'); return v.dataset.replicas === '2' && v.dataset.applied === '2'; })()`,
		`document.getElementById('compare').innerText`)
	// Both HAProxies have the three new servers by the time the page says so.
	for _, s := range []portal{a, b} {
		if n := len(servers(s.Stack, webBackend)); n < 5 {
			t.Errorf("the page says every replica applied the scale, but %s's HAProxy has %d servers of web, want 5", s.System.PortalAddr(), n)
		}
	}
	actualMatches(t, wt)
	cols := eval[[]string](t, wt.Context, `[...document.querySelectorAll('#cmp-head th[data-replica]')].map((th) => th.dataset.replica + ' ' + th.dataset.state)`)
	if len(cols) != 2 || cols[0] != nameA+" match" || cols[1] != nameB+" match" {
		t.Errorf("the compare table's replica columns are %q, want %q and %q, each matching", cols, nameA+" match", nameB+" match")
	}
	adds := eval[[]string](t, wt.Context, `[...document.querySelectorAll('#cmp-rows tr')].filter((tr) => tr.cells[0].textContent.endsWith('add-server')).flatMap((tr) => [...tr.cells].slice(1).map((td) => td.textContent))`)
	if fmt.Sprint(adds) != "[3 3 3]" {
		t.Errorf("add-server: predicted, then actual on each replica %v, want [3 3 3]", adds)
	}
	screenshot(t, wt.Context, "fleet-whatif-applied")
	b.DemoServes(webHost, "/", "demo", "web", 5)
	a.DemoServes(webHost, "/", "demo", "web", 5)
}
