package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/e2e/kapitest"
)

// viewerToken is the token of a ServiceAccount of ns bound to dcm-viewer
// (deploy/portal-rbac.yaml): what a portal user signs in with.
func viewerToken(t *testing.T, ns string) string {
	t.Helper()
	ctx := context.Background()
	if err := kapitest.Apply(ctx, env.admin, deployFile("portal-rbac.yaml")); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	if _, err := env.admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "viewer"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-viewer"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "dcm-viewer"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "viewer"}}}
	if _, err := env.admin.RbacV1().ClusterRoleBindings().Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), rb.Name, metav1.DeleteOptions{})
	})
	return serviceAccountConfig(t, ns, "viewer").BearerToken
}

// apiSnapshot reads GET /api/v1/snapshot as a portal user.
func apiSnapshot(base, token string) (dcm.Snapshot, error) {
	var s dcm.Snapshot
	req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/snapshot", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return s, json.NewDecoder(resp.Body).Decode(&s)
}

// hasCondition finds a condition of typ with status and reason.
func hasCondition(cs []dcm.Condition, typ, status, reason string) error {
	for _, c := range cs {
		if c.Type == typ {
			if c.Status != status || c.Reason != reason {
				return fmt.Errorf("%s %s %s (%s), want %s %s", typ, c.Status, c.Reason, c.Message, status, reason)
			}
			return nil
		}
	}
	return fmt.Errorf("no %s in %+v", typ, cs)
}

// gatewayAPIOK checks the snapshot's Gateway API picture: the Gateway with
// its class, address and listener, web attached and resolved, cross not
// permitted to reach its Service.
func gatewayAPIOK(s dcm.Snapshot, f gatewayFixture, addr string, port int) error {
	g := s.Gateways
	if g == nil || len(g.Gateways) != 1 {
		return fmt.Errorf("gateways %+v", g)
	}
	v := g.Gateways[0]
	if v.Namespace != f.ns || v.Name != "gw" || v.Class != f.class || v.Address != addr || len(v.Listeners) != 1 {
		return fmt.Errorf("gateway %+v", v)
	}
	if l := v.Listeners[0]; l.Name != "http" || l.Protocol != "HTTP" || l.Port != port || l.AttachedRoutes != 2 {
		return fmt.Errorf("listener %+v", l)
	}
	if err := hasCondition(v.Conditions, "Programmed", "True", "Programmed"); err != nil {
		return err
	}
	want := map[string][2]string{"web": {"True", "ResolvedRefs"}, "cross": {"False", "RefNotPermitted"}}
	for _, r := range g.HTTPRoutes {
		w, ok := want[r.Name]
		if !ok || r.Namespace != f.ns || len(r.Parents) != 1 || r.Parents[0].Gateway != f.ns+"/gw" {
			return fmt.Errorf("httproute %+v", r)
		}
		if err := hasCondition(r.Parents[0].Conditions, "ResolvedRefs", w[0], w[1]); err != nil {
			return fmt.Errorf("%s: %w", r.Name, err)
		}
		delete(want, r.Name)
	}
	if len(want) > 0 {
		return fmt.Errorf("httproutes %+v lack %v", g.HTTPRoutes, want)
	}
	return nil
}

// TestGatewayPortal: the portal shows the Gateway API dcm serves, from
// dcm's own source and real objects: GET /api/v1/snapshot holds the
// Gateway, its listener and both HTTPRoutes with the conditions dcm wrote
// to their status (one route refused a Service of another namespace
// without a ReferenceGrant); in Chromium the overview's Gateway API panel
// shows them, follows a change live (the refused route deleted) and the
// backends page reads the route as its HTTPRoute rule.
func TestGatewayPortal(t *testing.T) {
	f := newGatewayFixture(t, 18082)
	ctx := context.Background()
	if _, err := f.gw.GatewayV1().HTTPRoutes(f.ns).Create(ctx, crossRoute(f.ns, "cross", "cross."+f.ns+".test", "elsewhere"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	token := viewerToken(t, f.ns)
	s := startGatewayDCM(t, f.ns, "127.0.20.100/30", 18082)
	s.Eventually("the snapshot's Gateway API", 30*time.Second, func() error {
		snap, err := apiSnapshot(s.PortalURL, token)
		if err != nil {
			return err
		}
		return gatewayAPIOK(snap, f, "127.0.20.100", 18082)
	})
	// The conditions shown are the ones on the object.
	r, err := f.gw.GatewayV1().HTTPRoutes(f.ns).Get(ctx, "cross", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Status.Parents) != 1 || !written(r.Status.Parents[0].Conditions, "ResolvedRefs", "RefNotPermitted") {
		t.Errorf("cross's status %+v", r.Status.Parents)
	}

	bctx := chromium(t)
	if err := chromedp.Do(bctx, chromedp.Navigate(s.PortalURL+"/login?next=/"), chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SetValue(chromedp.ID("token"), token), chromedp.Submit(chromedp.ID("token")), chromedp.WaitVisible(chromedp.ID("gateways"))); err != nil {
		t.Fatal(err)
	}
	panel := `document.getElementById('gateways').innerText`
	for _, want := range []string{f.ns + "/gw", f.class, "127.0.20.100", f.ns + "/gw http", "18082", f.ns + "/cross",
		"ResolvedRefs False · RefNotPermitted", f.ns + "/web", "Accepted True · Accepted", "Programmed True · Programmed"} {
		browserWait(t, bctx, "the Gateway API panel shows "+want, panel+`.includes(`+strconv.Quote(want)+`)`)
	}
	browserWait(t, bctx, "the feed is live", `document.getElementById('feed').dataset.state === 'live'`)
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`window.__same = true`)); err != nil {
		t.Fatal(err)
	}
	if err := f.gw.GatewayV1().HTTPRoutes(f.ns).Delete(ctx, "cross", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	browserWait(t, bctx, "the deleted HTTPRoute leaves the panel, the listener counts 1 route, without a page load",
		`window.__same === true && !`+panel+`.includes(`+strconv.Quote(f.ns+"/cross")+`) && document.querySelector('#gateways [data-role=listeners] [data-bind="text=attached"]').textContent === '1'`)

	if err := chromedp.Do(bctx, chromedp.Navigate(s.PortalURL+"/backends")); err != nil {
		t.Fatal(err)
	}
	browserWait(t, bctx, "the backends page reads the route as its HTTPRoute rule",
		`document.getElementById('backend-rows').innerText.includes(`+strconv.Quote("HTTPRoute "+f.ns+"/web rule 0 · "+f.host+" · PathPrefix /")+`)`)
}

func written(cs []metav1.Condition, typ, reason string) bool {
	for _, c := range cs {
		if c.Type == typ && c.Reason == reason && c.Status == metav1.ConditionFalse {
			return true
		}
	}
	return false
}

// chromium starts a headless Chromium for one test (skipped, saying so,
// when Debian's chromium package is not installed).
func chromium(t *testing.T) context.Context {
	t.Helper()
	bin := ""
	for _, p := range []string{"/usr/lib/chromium/chromium", "chromium"} {
		if path, err := exec.LookPath(p); err == nil {
			bin = path
			break
		}
	}
	if bin == "" {
		t.Skip("chromium is not installed: install Debian's chromium package (make deps)")
	}
	dir := t.TempDir()
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(dir),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-dev-shm-usage", true))
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc(); _ = os.RemoveAll(dir) })
	return ctx
}

// browserWait polls a JavaScript condition for up to 30 seconds.
func browserWait(t *testing.T, ctx context.Context, what, cond string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](cond))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			page, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
			t.Fatalf("%s: not within 30s (%s): %v\npage:\n%s", what, cond, err, page)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
