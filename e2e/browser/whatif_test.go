package browser

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/static"
	"github.com/dcm-router/dcm/system"
)

const webWorkload = "demo/Deployment/web"

// openWhatIf signs in as the admin, opens /whatif and waits until the
// planner's WebAssembly runs in its worker.
func openWhatIf(t testing.TB, p portal) (tab whatifTab) {
	t.Helper()
	if a := static.New(); !a.Has(static.PlannerWasm) {
		t.Fatal("this build carries no planner WebAssembly (static/dist/dcm.wasm): run make wasm before go test, as make test does")
	}
	tab = whatifTab{newTab(t)}
	signIn(t, tab.Context, p.PortalURL, p.admin, "/whatif")
	open(t, tab.Context, p.PortalURL+"/whatif")
	waitFor(t, tab.Context, "the planner starts in its worker", 20*time.Second,
		`window.dcmWhatIf.source === 'wasm' && window.dcmWhatIf.plannerMs !== null`, `JSON.stringify(window.dcmWhatIf)`)
	return tab
}

// preview asks for a scale of web in the form, as a user does.
func preview(t testing.TB, tab whatifTab, replicas int) {
	t.Helper()
	eval[bool](t, tab.Context, fmt.Sprintf(`(() => {
		document.getElementById('wi-replicas').value = '%d';
		const w = document.getElementById('wi-workload');
		w.value = %s;
		w.dispatchEvent(new Event('input', { bubbles: true }));
		return true;
	})()`, replicas, jsString(webWorkload)))
}

// previewShows waits until the page shows a preview computed by the wasm
// planner with a verdict starting with verdict and n ops of kind op on web.
func previewShows(t testing.TB, tab whatifTab, verdict string, op dcm.OpKind, n int) {
	t.Helper()
	waitFor(t, tab.Context, "the preview: "+verdict, 10*time.Second, fmt.Sprintf(`(() => {
		const pv = document.getElementById('preview');
		const ops = [...pv.querySelectorAll('#pv-steps [data-op=%q]')];
		return pv.dataset.source === 'wasm' &&
			pv.querySelector('.verdict').textContent.startsWith(%s) &&
			ops.length === %d && ops.every((li) => li.textContent.includes(%s));
	})()`, op, jsString(verdict), n, jsString(webBackend+"/")),
		`document.querySelector('#preview .verdict').textContent`, `document.getElementById('pv-steps').innerText`,
		`JSON.stringify(window.dcmWhatIf)`)
}

// applyPreview clicks Apply and confirms.
func applyPreview(t testing.TB, tab whatifTab, replicas int) {
	t.Helper()
	waitFor(t, tab.Context, "Apply is offered", 5*time.Second,
		fmt.Sprintf(`!document.getElementById('wi-apply').disabled && document.getElementById('wi-apply').textContent.endsWith('to %d')`, replicas),
		`document.getElementById('wi-apply').textContent`)
	do(t, tab.Context, chromedp.Click(chromedp.ID("wi-apply")))
	waitFor(t, tab.Context, "the confirmation dialog opens", 2*time.Second, `document.getElementById('confirm-dialog').open`)
	do(t, tab.Context, chromedp.Click(chromedp.CSS(`#confirm-dialog button[value=ok]`)))
}

// actualMatches waits until the page sets the engine's verdict on the
// prediction beside the preview: actual = predicted, no row differs.
func actualMatches(t testing.TB, tab whatifTab) {
	t.Helper()
	waitFor(t, tab.Context, "the page shows actual = predicted", 45*time.Second,
		`document.getElementById('cmp-verdict').dataset.match === 'true' && document.querySelectorAll('#cmp-rows tr').length > 0 && document.querySelectorAll('#cmp-rows tr.diff').length === 0`,
		`document.getElementById('compare').innerText`, `document.getElementById('wi-apply-msg').innerText`)
}

// TestWhatIfScaleOut: the preview of "scale web to 5", computed in the
// browser, shows three add-server ops and no reload, and agrees with the
// server's planner; Apply scales, the page shows actual = predicted, and
// HAProxy serves the 5 pods without a reload.
func TestWhatIfScaleOut(t *testing.T) {
	p := startPortal(t)
	tab := openWhatIf(t, p)
	pid := p.WorkerPID()
	preview(t, tab, 5)
	previewShows(t, tab, "No reload", dcm.OpAddServer, 3)

	server := p.Engine.Simulate([]dcm.WhatIf{{Kind: dcm.WhatIfScale, Namespace: "demo", Workload: &dcm.WorkloadRef{Kind: "Deployment", Name: "web"}, Replicas: 5}})
	got := eval[map[string]float64](t, tab.Context, `(() => { const s = JSON.parse(window.dcmWhatIf.lastSim); return { seq: s.seq, ops: s.ops, reloads: s.reloads, ready: s.after.ready, memory: s.after.memoryBytes }; })()`)
	want := map[string]float64{"seq": float64(server.Seq), "ops": float64(server.Ops), "reloads": 0, "ready": float64(server.After.Ready), "memory": float64(server.After.MemoryBytes)}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("the browser's preview has %s = %v, the server's planner %v", k, got[k], v)
		}
	}
	if n := eval[int](t, tab.Context, `document.querySelectorAll('#pv-traffic tr').length`); n != 5 {
		t.Errorf("the traffic table lists %d servers after the scale, want 5", n)
	}
	// Tall enough for the steps and the traffic table.
	do(t, tab.Context, chromedp.EmulateViewport(1280, 1900))
	readmeShot(t, tab.Context, "whatif")
	do(t, tab.Context, chromedp.EmulateViewport(1280, 900))

	applyPreview(t, tab, 5)
	actualMatches(t, tab)
	if n := eval[int](t, tab.Context, `[...document.querySelectorAll('#cmp-ops li')].filter((li) => li.dataset.op === 'add-server').length`); n != 3 {
		t.Errorf("the page lists %d add-server commands HAProxy got, want 3:\n%s", n, textOf(t, tab.Context, "#cmp-ops"))
	}
	p.DemoServes(webHost, "/", "demo", "web", 5)
	if p.WorkerPID() != pid || p.Reloads() != 0 {
		t.Errorf("HAProxy reloaded: worker %d → %d, dcm_reloads_total %v", pid, p.WorkerPID(), p.Reloads())
	}
	screenshot(t, tab.Context, "whatif-applied")
}

// TestWhatIfSlotsPredictsReload: with one free slot per backend, the
// preview of scaling web from 2 to 5 predicts a reload for slots-exhausted;
// Apply makes exactly that reload and the page shows actual = predicted.
func TestWhatIfSlotsPredictsReload(t *testing.T) {
	// Pods that take a while to turn ready, as real ones do: dcm sees them
	// not ready first, as the preview assumes. (Pods already ready when dcm
	// first sees them reach the reload's files ready, and then fewer
	// set-state commands follow than the preview shows: the page and
	// dcm_prediction_mismatch_total report that difference.)
	p := startPortalWith(t, harness.Options{Config: func(c *system.Config) {
		c.Mode, c.Slots, c.DemoReadinessDelay = dcm.ModeSlots, 1, 2*time.Second
	}})
	t.Cleanup(func() {
		if t.Failed() {
			evs, _ := p.Engine.Events(0)
			for _, ev := range evs {
				t.Logf("event %d %s %s %v %+v", ev.Seq, ev.Type, ev.Message, ev.Ops, ev.Prediction)
			}
		}
	})
	tab := openWhatIf(t, p)
	pid := p.WorkerPID()
	reloads := p.Counter("dcm_reloads_total", "reason", string(dcm.ReasonSlotsExhausted))
	preview(t, tab, 5)
	previewShows(t, tab, "Reload (slots-exhausted)", dcm.OpAddServer, 0)
	if r := eval[string](t, tab.Context, `document.querySelector('#preview .verdict').dataset.reload`); r != "true" {
		t.Errorf("the verdict is not marked as a reload: %q", r)
	}
	if txt := textOf(t, tab.Context, "#pv-steps"); !strings.Contains(txt, "reload: slots-exhausted") {
		t.Errorf("no step shows the reload and its reason:\n%s\n%s\n%s", txt, textOf(t, tab.Context, "#preview"), eval[string](t, tab.Context, `JSON.stringify(window.dcmWhatIf)`))
	}
	applyPreview(t, tab, 5)
	actualMatches(t, tab)
	p.DemoServes(webHost, "/", "demo", "web", 5)
	if p.WorkerPID() == pid {
		t.Error("the predicted reload did not happen")
	}
	if n := p.Counter("dcm_reloads_total", "reason", string(dcm.ReasonSlotsExhausted)) - reloads; n != 1 {
		t.Errorf("dcm_reloads_total{reason=slots-exhausted} grew by %v, want 1", n)
	}
	screenshot(t, tab.Context, "whatif-slots")
}

// TestWhatIfStalePreviewRefused: a preview held while the backend it
// touches moves says so; Apply is refused with 409, nothing is scaled, and
// the page computes the preview again from the new state.
func TestWhatIfStalePreviewRefused(t *testing.T) {
	p := startPortal(t)
	tab := openWhatIf(t, p)
	preview(t, tab, 4)
	previewShows(t, tab, "No reload", dcm.OpAddServer, 2)
	do(t, tab.Context, chromedp.Click(chromedp.ID("wi-hold")))
	// An unrelated event (a server observed) may still recompute the
	// preview up to the click: what must not happen is a preview computed
	// from the state the scale below moves.
	before := p.Engine.Snapshot().Seq

	p.Scale("demo", "web", 3) // someone else scales web meanwhile
	p.DemoServes(webHost, "/", "demo", "web", 3)
	waitFor(t, tab.Context, "the held preview says the state moved", 5*time.Second,
		`document.getElementById('preview').dataset.moved === 'true' && !document.getElementById('pv-moved').hidden`)
	seq := eval[float64](t, tab.Context, `Number(document.getElementById('preview').dataset.seq)`)
	if seq > float64(before) {
		t.Fatalf("a held preview was computed again from the moved state (seq %v, the scale came after %v)", seq, before)
	}
	previewShows(t, tab, "No reload", dcm.OpAddServer, 2)

	applyPreview(t, tab, 4)
	waitFor(t, tab.Context, "the page says the preview was stale", 5*time.Second,
		`document.getElementById('wi-apply-msg').dataset.kind === 'stale'`, `document.getElementById('wi-apply-msg').innerText`)
	// The page showed the server's refusal; had the scale gone through, the
	// Deployment's spec.replicas would say 4 already.
	if n := p.DesiredReplicas("demo", "web"); n != 3 {
		t.Errorf("after a refused apply web wants %d replicas, want 3", n)
	}
	// Computed again from the state that moved: 3 → 4 is one server more.
	waitFor(t, tab.Context, "the preview is computed again", 5*time.Second,
		fmt.Sprintf(`Number(document.getElementById('preview').dataset.seq) > %v && document.querySelectorAll('#pv-steps [data-op="add-server"]').length === 1`, seq),
		`document.getElementById('pv-steps').innerText`)
}

// whatifTab is a tab on /whatif.
type whatifTab struct{ context.Context }

// TestWhatIfStackedEvents: events stacked after the scale — a pod deleted,
// a route deleted — are previewed together, in order, and removing one
// from the stack previews without it; Apply is only offered for a scale
// alone.
func TestWhatIfStackedEvents(t *testing.T) {
	p := startPortal(t)
	tab := openWhatIf(t, p)
	preview(t, tab, 3)
	previewShows(t, tab, "No reload", dcm.OpAddServer, 1)
	pod := p.ReadyPods("demo", "shop")[0]
	// The pod field suggests what matches the typed text, not every pod, and
	// refuses a pod the live state does not have.
	typed := pod[:len(pod)-1]
	do(t, tab.Context, chromedp.SendKeys(`#wi-add-pod`, typed))
	suggested := `[...document.querySelectorAll('#wi-pods option')].map((o) => o.value)`
	waitFor(t, tab.Context, "suggestions of the typed text", 5*time.Second, fmt.Sprintf(`(() => {
		const s = %s;
		return s.includes(%s) && s.every((v) => v.includes(%s));
	})()`, suggested, jsString("demo/"+pod), jsString(typed)), suggested)
	if n := eval[int](t, tab.Context, `(() => {
		document.getElementById('wi-add-pod').value = 'demo/no-such-pod';
		document.getElementById('wi-add').click();
		return document.querySelectorAll('#wi-stack li').length;
	})()`); n != 0 {
		t.Fatalf("a pod that does not exist was stacked (%d events)", n)
	}
	eval[bool](t, tab.Context, fmt.Sprintf(`(() => {
		const kind = document.getElementById('wi-add-kind');
		kind.value = 'delete-pod'; kind.dispatchEvent(new Event('change'));
		document.getElementById('wi-add-pod').value = %s;
		document.getElementById('wi-add').click();
		kind.value = 'delete-route'; kind.dispatchEvent(new Event('change'));
		document.getElementById('wi-add-backend').value = 'be_http:demo:api';
		document.getElementById('wi-add').click();
		return true;
	})()`, jsString("demo/"+pod)))
	phases := `[...document.querySelectorAll('#pv-steps .step [data-bind="text=phase"]')].map((e) => e.textContent).join(' | ')`
	waitFor(t, tab.Context, "the stack is previewed in order", 10*time.Second, fmt.Sprintf(`(() => {
		const s = JSON.parse(window.dcmWhatIf.lastSim);
		return document.querySelectorAll('#wi-stack li').length === 2 &&
			s.backends.join(' ') === 'be_http:demo:api be_http:demo:shop be_http:demo:web' &&
			%s.endsWith('route deleted');
	})()`, phases), phases, `document.getElementById('wi-stack').innerText`)
	if got := textOf(t, tab.Context, "#wi-stack"); !strings.Contains(got, "delete pod demo/"+pod) || !strings.Contains(got, "delete route be_http:demo:api") {
		t.Errorf("the stack reads %q", got)
	}
	if !eval[bool](t, tab.Context, `document.getElementById('wi-apply').disabled`) {
		t.Error("Apply is offered for a stack it cannot make")
	}
	// Remove the route deletion: the preview no longer touches api.
	do(t, tab.Context, chromedp.Click(chromedp.CSS(`#wi-stack li:nth-child(2) button`)))
	waitFor(t, tab.Context, "the preview without the removed event", 10*time.Second,
		`JSON.parse(window.dcmWhatIf.lastSim).backends.join(' ') === 'be_http:demo:shop be_http:demo:web'`)
}
