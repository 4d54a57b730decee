package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/plan"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/internal/testkit"
	"github.com/dcm-router/dcm/system"
)

const (
	edgeBackend = "be_edge:demo:web"
	webSecret   = "demo/web-tls"
)

// edgeWeb gives the demo's web Ingress spec.tls with Secret demo/web-tls
// holding a certificate of ca, and waits until HAProxy serves web over
// HTTPS with it. It returns a function that rotates the certificate, by
// updating the Secret as an admin would, and waits until HAProxy serves
// the new one.
func edgeWeb(t *testing.T, p portal) (rotate func()) {
	t.Helper()
	ca := testkit.NewCA(t)
	ctx := context.Background()
	secrets := p.Client.CoreV1().Secrets("demo")
	secret := func(l testkit.Leaf) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web-tls"}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{corev1.TLSCertKey: l.CertPEM, corev1.TLSPrivateKeyKey: l.KeyPEM}}
	}
	serves := func(step string, want testkit.Leaf) {
		t.Helper()
		p.Eventually(step, 20*time.Second, func() error {
			code, _, leaf, err := testkit.HTTPSGet(p.HTTPSAddr, webHost, "/", ca.Pool())
			switch {
			case err != nil:
				return err
			case code != 200:
				return fmt.Errorf("HTTP %d", code)
			case leaf.SerialNumber.Cmp(want.Cert.SerialNumber) != 0:
				return fmt.Errorf("serial %s", leaf.SerialNumber)
			}
			return nil
		})
	}
	first := ca.Leaf(t, webHost)
	if _, err := secrets.Create(ctx, secret(first), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ing, err := p.Client.NetworkingV1().Ingresses("demo").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{webHost}, SecretName: "web-tls"}}
	if _, err := p.Client.NetworkingV1().Ingresses("demo").Update(ctx, ing, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	serves("web served over HTTPS with the Secret's certificate", first)
	p.Eventually("the snapshot shows web as an edge route with its certificate", 10*time.Second, func() error {
		backends := p.Engine.Snapshot().Backends
		i := slices.IndexFunc(backends, func(b *dcm.Backend) bool { return b.Name == edgeBackend })
		if i < 0 {
			return fmt.Errorf("no backend %s yet", edgeBackend)
		}
		if b := backends[i]; b.Route.TLS == nil || b.Route.TLS.Version == "" {
			return fmt.Errorf("%s: certificate %+v", edgeBackend, b.Route.TLS)
		}
		return nil
	})
	return func() {
		t.Helper()
		next := ca.Leaf(t, webHost)
		if _, err := secrets.Update(ctx, secret(next), metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		serves("the rotated certificate served", next)
	}
}

// shown is a preview as the page shows it: where it was computed, the
// verdict, and each step as "phase | reload badge | op | op…".
type shown struct {
	Source  string   `json:"source"`
	Verdict string   `json:"verdict"`
	Steps   []string `json:"steps"`
	Note    string   `json:"note"`
}

const shownJS = `(() => {
	const pv = document.getElementById('preview');
	const note = document.getElementById('wi-cert-note');
	return {
		source: pv.dataset.source,
		verdict: pv.querySelector('.verdict').textContent.trim(),
		steps: [...pv.querySelectorAll('#pv-steps .step')].map((li) => {
			const badge = li.querySelector('.badge');
			return [li.querySelector('[data-bind="text=phase"]').textContent.trim(), badge.hidden ? '' : badge.textContent.trim(),
				...[...li.querySelectorAll('[data-role=ops] li')].map((o) => o.textContent.trim())].join(' | ');
		}),
		note: note.hidden ? '' : note.textContent.trim(),
	};
})()`

// chooseCert picks a route in the form's "Rotate a certificate", as a user does.
func chooseCert(t testing.TB, tab whatifTab, backend string) {
	t.Helper()
	eval[bool](t, tab.Context, fmt.Sprintf(`(() => {
		const c = document.getElementById('wi-cert');
		c.value = %s;
		c.dispatchEvent(new Event('input', { bubbles: true }));
		return c.value === %[1]s;
	})()`, jsString(backend)))
}

// wasmShows waits until the page shows a preview of the wasm planner of n
// steps, the last one last, and returns it.
func wasmShows(t testing.TB, tab whatifTab, what, verdict string, n int, last string) shown {
	t.Helper()
	waitFor(t, tab.Context, what, 10*time.Second, fmt.Sprintf(`(() => {
		const s = %s;
		return s.source === 'wasm' && s.verdict.startsWith(%s) && s.steps.length === %d && s.steps[%[3]d - 1].startsWith(%s);
	})()`, shownJS, jsString(verdict), n, jsString(last)), shownJS, `JSON.stringify(window.dcmWhatIf)`)
	return eval[shown](t, tab.Context, shownJS)
}

// noJSShows opens /whatif with the form's values in a tab without
// JavaScript: the server's planner answers.
func noJSShows(t testing.TB, tab context.Context, p portal, q url.Values) shown {
	t.Helper()
	do(t, tab, chromedp.Navigate(p.PortalURL+"/whatif?"+q.Encode()))
	return eval[shown](t, tab, shownJS)
}

// TestWhatIfRotateCert: with runtime certificates, rotating web's
// certificate previews one cert-update and no reload, in the browser's
// planner and in the server's for the form without JavaScript alike, alone
// and stacked with a scale; the page names the Secret and offers no Apply
// for it. Updating the Secret then makes exactly that command, without a
// reload.
func TestWhatIfRotateCert(t *testing.T) {
	p := startPortalWith(t, harness.Options{})
	rotate := edgeWeb(t, p)
	tab := openWhatIf(t, p)
	static := siblingTab(t, tab.Context)
	disableScripts(t, static)

	if label := eval[string](t, tab.Context, fmt.Sprintf(`document.querySelector('#wi-cert option[value=%q]')?.textContent || ''`, edgeBackend)); label != "web.demo.localhost/ · "+edgeBackend+" · Secret "+webSecret {
		t.Errorf("the form offers web's certificate as %q", label)
	}
	chooseCert(t, tab, edgeBackend)
	op := "cert-update " + webHost + " " + webSecret + "@"
	got := wasmShows(t, tab, "the rotation previewed", "No reload · 1 runtime command", 1, "certificate rotated")
	// One op: phase, an empty reload badge, the op.
	if !strings.HasPrefix(got.Steps[0], "certificate rotated |  | "+op) || strings.Count(got.Steps[0], " | ") != 2 {
		t.Errorf("the rotation's steps: %q, want one cert-update of %s", got.Steps, webHost)
	}
	if !strings.Contains(got.Note, "comes from Secret "+webSecret) || !strings.Contains(got.Note, "update that Secret") {
		t.Errorf("the page does not say where the certificate comes from and how it is rotated: %q", got.Note)
	}
	if !eval[bool](t, tab.Context, `document.getElementById('wi-apply').disabled`) {
		t.Error("Apply is offered for a rotation")
	}
	if what := textOf(t, tab.Context, "#wi-apply-what"); !strings.Contains(what, "updating its Secret ("+webSecret+")") {
		t.Errorf("the Apply section reads %q", what)
	}
	server := noJSShows(t, static, p, url.Values{"workload": {""}, "replicas": {"0"}, "cert": {edgeBackend}})
	if server.Source != "server" || server.Verdict != got.Verdict || !slices.Equal(server.Steps, got.Steps) || server.Note != got.Note {
		t.Errorf("without JavaScript the server's planner shows\n%+v\nthe browser's\n%+v", server, got)
	}
	lastSim := eval[string](t, tab.Context, `window.dcmWhatIf.lastSim`)
	do(t, tab.Context, chromedp.EmulateViewport(1280, 1500))
	readmeShot(t, tab.Context, "whatif-cert")
	do(t, tab.Context, chromedp.EmulateViewport(1280, 900))

	// Stacked after a scale, in the form: the server gets the same order.
	preview(t, tab, 3)
	stacked := wasmShows(t, tab, "the scale then the rotation", "No reload", 3, "certificate rotated")
	if !strings.HasPrefix(stacked.Steps[0], "new pods start") {
		t.Errorf("scale then rotation: steps %q", stacked.Steps)
	}
	server = noJSShows(t, static, p, url.Values{"workload": {webWorkload}, "replicas": {"3"}, "cert": {edgeBackend}})
	if server.Verdict != stacked.Verdict || !slices.Equal(server.Steps, stacked.Steps) {
		t.Errorf("scale then rotation without JavaScript:\n%+v\nin the browser:\n%+v", server, stacked)
	}
	// The same through the stack of events: the rotation comes last too.
	chooseCert(t, tab, "")
	eval[bool](t, tab.Context, fmt.Sprintf(`(() => {
		const kind = document.getElementById('wi-add-kind');
		kind.value = 'rotate-cert'; kind.dispatchEvent(new Event('change'));
		document.getElementById('wi-add-cert').value = %s;
		document.getElementById('wi-add').click();
		return true;
	})()`, jsString(edgeBackend)))
	steps, err := json.Marshal(stacked.Steps)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, tab.Context, "the stacked rotation previewed", 10*time.Second, fmt.Sprintf(`JSON.stringify(%s.steps) === %s`, shownJS, jsString(string(steps))), shownJS)
	if s := textOf(t, tab.Context, "#wi-stack"); !strings.Contains(s, "rotate the certificate of Secret "+webSecret) {
		t.Errorf("the stack reads %q", s)
	}

	// Rotating for real: exactly the previewed command, no reload.
	var sim dcm.Simulation
	if err := json.Unmarshal([]byte(lastSim), &sim); err != nil {
		t.Fatalf("the browser's preview: %v", err)
	}
	seq, pid, reloads := p.Engine.Snapshot().Seq, p.WorkerPID(), p.Reloads()
	rotate()
	var want []string
	for _, st := range sim.Steps {
		for _, o := range st.Ops {
			want = append(want, fmt.Sprintf("%s %s %s", o.Kind, o.Cert.Host, o.Cert.Secret))
		}
	}
	// HAProxy serves the new certificate once the commands are acknowledged,
	// a moment before the engine has written the files and published them.
	p.Eventually("the rotation's commands are published", 5*time.Second, func() error {
		evs, _ := p.Engine.Events(seq)
		var did []string
		for _, ev := range evs {
			for _, o := range ev.Ops {
				if plan.IsCertOp(o) {
					did = append(did, fmt.Sprintf("%s %s %s", o.Kind, o.Cert.Host, o.Cert.Secret))
				}
			}
		}
		if !reflect.DeepEqual(did, want) {
			return fmt.Errorf("updating the Secret made the certificate commands %q, the preview showed %q", did, want)
		}
		return nil
	})
	if p.WorkerPID() != pid || p.Reloads() != reloads {
		t.Errorf("HAProxy reloaded: worker %d → %d, dcm_reloads_total %v → %v", pid, p.WorkerPID(), reloads, p.Reloads())
	}
}

// TestWhatIfRotateCertReloads: without runtime certificates (slots mode
// has none), rotating web's certificate previews a reload for cert-changed
// and no certificate command, in both planners; updating the Secret then
// reloads for that reason.
func TestWhatIfRotateCertReloads(t *testing.T) {
	p := startPortalWith(t, harness.Options{Config: func(c *system.Config) { c.Mode, c.Slots = dcm.ModeSlots, 2 }})
	rotate := edgeWeb(t, p)
	tab := openWhatIf(t, p)
	chooseCert(t, tab, edgeBackend)
	got := wasmShows(t, tab, "the rotation previewed", "Reload (cert-changed)", 1, "certificate rotated")
	if last := got.Steps[len(got.Steps)-1]; !strings.HasPrefix(last, "certificate rotated | reload: cert-changed") || strings.Contains(last, "cert-update") {
		t.Errorf("the rotation's step: %q, want a reload for cert-changed without a certificate command", last)
	}
	if r := eval[string](t, tab.Context, `document.querySelector('#preview .verdict').dataset.reload`); r != "true" {
		t.Errorf("the verdict is not marked as a reload: %q", r)
	}
	static := siblingTab(t, tab.Context)
	disableScripts(t, static)
	server := noJSShows(t, static, p, url.Values{"cert": {edgeBackend}})
	if server.Source != "server" || server.Verdict != got.Verdict || !slices.Equal(server.Steps, got.Steps) {
		t.Errorf("without JavaScript the server's planner shows\n%+v\nthe browser's\n%+v", server, got)
	}

	before := p.Counter("dcm_reloads_total", "reason", string(dcm.ReasonCertChanged))
	rotate()
	p.Eventually("the reload for cert-changed is counted", 10*time.Second, func() error {
		if n := p.Counter("dcm_reloads_total", "reason", string(dcm.ReasonCertChanged)) - before; n != 1 {
			return fmt.Errorf("dcm_reloads_total{reason=cert-changed} grew by %v, want 1", n)
		}
		return nil
	})
}
