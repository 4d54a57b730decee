package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/kube"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/e2e/kapitest"
	"github.com/dcm-router/dcm/internal/injection"
	"github.com/dcm-router/dcm/internal/testkit"
	"github.com/dcm-router/dcm/system"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

const routeCRDName = "routes.route.openshift.io"

// routeCRD is the smallest CRD that serves route.openshift.io/v1 Routes:
// no schema beyond "an object", so the API server stores whatever a test
// writes and dcm alone must refuse what cannot reach HAProxy.
func routeCRD() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": routeCRDName},
		"spec": map[string]any{
			"group": "route.openshift.io", "scope": "Namespaced",
			"names": map[string]any{"plural": "routes", "singular": "route", "kind": "Route", "listKind": "RouteList"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema":       map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
				"subresources": map[string]any{"status": map[string]any{}},
			}},
		},
	}}
}

func adminDynamic(t *testing.T) dynamic.Interface {
	t.Helper()
	d, err := dynamic.NewForConfig(env.cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// routesServed asks discovery, as dcm does.
func routesServed() (bool, error) {
	list, err := env.admin.Discovery().ServerResourcesForGroupVersion(kube.RouteGVR.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, r := range list.APIResources {
		if r.Name == "routes" {
			return true, nil
		}
	}
	return false, nil
}

func waitRoutesServed(t *testing.T, want bool) {
	t.Helper()
	testkit.Eventually(t, "the Routes API's discovery", 60*time.Second, func() error {
		got, err := routesServed()
		if err == nil && got != want {
			err = fmt.Errorf("served=%v, want %v", got, want)
		}
		return err
	})
}

// installRouteCRD installs the Route CRD and waits until discovery serves it.
func installRouteCRD(t *testing.T) {
	t.Helper()
	if _, err := adminDynamic(t).Resource(crdGVR).Create(context.Background(), routeCRD(), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	waitRoutesServed(t, true)
}

// removeRouteCRD deletes the Route CRD (and so every Route) and waits until
// discovery no longer serves it.
func removeRouteCRD(t *testing.T) {
	t.Helper()
	err := adminDynamic(t).Resource(crdGVR).Delete(context.Background(), routeCRDName, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	waitRoutesServed(t, false)
}

// lockedBuffer collects dcm's log lines from its goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// routeStack is a dcm started by startRouteDCM.
type routeStack struct {
	*harness.Stack
	// RoutesAsked counts dcm's requests for the Routes API's discovery
	// document, as they leave for the API server: its rechecks while the
	// API is absent.
	RoutesAsked *atomic.Int64
}

// startRouteDCM runs dcm as dcmOptions does, its log also to logTo.
func startRouteDCM(t *testing.T, ns string, logTo *lockedBuffer) routeStack {
	t.Helper()
	o := dcmOptions(t, ns)
	asked := &atomic.Int64{}
	discoveryPath := "/apis/" + kube.RouteGVR.GroupVersion().String()
	o.Kubernetes.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.URL.Path == discoveryPath {
				asked.Add(1)
			}
			return rt.RoundTrip(r)
		})
	}
	// The tests install the Route CRD while dcm runs: ask again soon
	// whether it is served.
	watchNS := o.Config
	o.Config = func(c *system.Config) {
		watchNS(c)
		c.RoutesRecheck, c.RoutesMaxRecheck = 200*time.Millisecond, time.Second
	}
	if logTo != nil {
		o.LogTo = logTo
	}
	return routeStack{Stack: harness.Start(t, o), RoutesAsked: asked}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func osRoute(ns, name, host, path string, to string, toWeight int64, alternates map[string]int64) *unstructured.Unstructured {
	spec := map[string]any{
		"host": host, "path": path,
		"to": map[string]any{"kind": "Service", "name": to, "weight": toWeight},
		// The pods' port (the Service's targetPort), as OpenShift reads it.
		"port": map[string]any{"targetPort": int64(8080)},
	}
	var alts []any
	for name, w := range alternates {
		alts = append(alts, map[string]any{"kind": "Service", "name": name, "weight": w})
	}
	if alts != nil {
		spec["alternateBackends"] = alts
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "route.openshift.io/v1", "kind": "Route",
		"metadata": map[string]any{"namespace": ns, "name": name},
		"spec":     spec,
	}}
}

const absentLog = "OpenShift Routes API not served"

// TestOpenShiftRoutes: against the real kube-apiserver. Without the Route
// CRD dcm says so once (a log line, a portal event) and serves Ingresses; the CRD installed, dcm finds
// the API on its own and serves Routes through the real haproxy, all
// without a reload: http (numeric targetPort = the pods' port), an 80/20
// split over alternateBackends, edge with the Route's inline certificate
// and each insecureEdgeTerminationPolicy, passthrough by SNI, host and path changed in place, deleted → 503.
func TestOpenShiftRoutes(t *testing.T) {
	removeRouteCRD(t) // a previous run's
	ns := kapitest.Namespace(t, env.admin)
	ctx := context.Background()
	ingHost := "web." + ns + ".test"
	createApp(t, ns, "web", 2, ingHost, "/")
	createApp(t, ns, "canary", 1, "canary."+ns+".test", "/")
	logs := &lockedBuffer{}
	s := startRouteDCM(t, ns, logs)
	s.Serves(ingHost, "/", 2, readyPods(ns, "web"))
	pid, reloads := s.WorkerPID(), s.Reloads()

	// Without the CRD: several rechecks pass, one line says so, Ingresses work.
	asked := s.RoutesAsked.Load()
	s.Eventually("three more rechecks of the Routes API", 15*time.Second, func() error {
		if n := s.RoutesAsked.Load() - asked; n < 3 {
			return fmt.Errorf("%d rechecks", n)
		}
		return nil
	})
	if n := strings.Count(logs.String(), absentLog); n != 1 {
		t.Fatalf("%d log lines say the Routes API is absent, want 1:\n%s", n, logs.String())
	}
	s.Serves(ingHost, "/", 2, readyPods(ns, "web"))
	if n := sourceEvents(s.Stack, kube.NoticeRoutesAbsent); n != 1 {
		t.Errorf("%d portal events say the Routes API is absent, want 1", n)
	}

	installRouteCRD(t)
	t.Cleanup(func() { removeRouteCRD(t) })
	routes := adminDynamic(t).Resource(kube.RouteGVR).Namespace(ns)
	create := func(u *unstructured.Unstructured) {
		t.Helper()
		if _, err := routes.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// http, picked up once the API appears.
	rHost := "r." + ns + ".test"
	create(osRoute(ns, "r", rHost, "", "web", 100, nil))
	s.Serves(rHost, "/", 2, readyPods(ns, "web"))
	admitted(t, routes, "r", "True", "")
	if !strings.Contains(logs.String(), "OpenShift Routes API served now") || sourceEvents(s.Stack, kube.NoticeRoutesServed) != 1 {
		t.Errorf("no log line or no single portal event says the Routes API appeared")
	}

	t.Run("alternateBackends 80/20", func(t *testing.T) {
		host := "split." + ns + ".test"
		create(osRoute(ns, "split", host, "", "web", 80, map[string]int64{"canary": 20}))
		webPods, err := readyPods(ns, "web")()
		if err != nil {
			t.Fatal(err)
		}
		canaryPods, err := readyPods(ns, "canary")()
		if err != nil {
			t.Fatal(err)
		}
		s.Serves(host, "/", 3, func() ([]string, error) { return append(webPods, canaryPods...), nil })
		const n = 2000
		got, err := s.Served(host, "/", n)
		if err != nil {
			t.Fatal(err)
		}
		web := 0
		for _, p := range webPods {
			web += got[p]
		}
		share := float64(web) / n
		t.Logf("web %d of %d (%.1f %%), answers %v", web, n, 100*share, got)
		if share < 0.75 || share > 0.85 {
			t.Errorf("web got %.1f %% of the requests, want 80 ± 5", 100*share)
		}
	})

	t.Run("edge with an inline certificate", func(t *testing.T) {
		ca := testkit.NewCA(t)
		host := "edge." + ns + ".test"
		leaf := ca.Leaf(t, host)
		u := osRoute(ns, "edge", host, "", "web", 100, nil)
		u.Object["spec"].(map[string]any)["tls"] = map[string]any{"termination": "edge",
			"certificate": string(leaf.CertPEM), "key": string(leaf.KeyPEM), "insecureEdgeTerminationPolicy": "Allow"}
		create(u)
		s.Eventually(host+" served over TLS with the Route's certificate", 15*time.Second, func() error {
			code, _, got, err := testkit.HTTPSGet(s.HTTPSAddr, host, "/", ca.Pool())
			switch {
			case err != nil:
				return err
			case code != http.StatusOK:
				return fmt.Errorf("HTTP %d", code)
			case got.SerialNumber.Cmp(leaf.Cert.SerialNumber) != 0:
				return fmt.Errorf("serial %s, want %s", got.SerialNumber, leaf.Cert.SerialNumber)
			}
			return nil
		})
		// insecureEdgeTerminationPolicy: plain HTTP served (Allow), then
		// redirected, then refused, each a change in place.
		plain := func(want int, location string) func() error {
			return func() error {
				code, loc, err := plainGet(s.HTTPAddr, host, "/p?q")
				if err != nil || code != want || loc != location {
					return fmt.Errorf("plain HTTP: %d %q %v, want %d %q", code, loc, err, want, location)
				}
				return nil
			}
		}
		s.Eventually("Allow: plain HTTP served", 15*time.Second, plain(http.StatusOK, ""))
		for _, step := range []struct {
			policy   string
			code     int
			location string
		}{{"Redirect", http.StatusFound, "https://" + host + "/p?q"}, {"None", http.StatusServiceUnavailable, ""}} {
			cur, err := routes.Get(ctx, "edge", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cur.Object["spec"].(map[string]any)["tls"].(map[string]any)["insecureEdgeTerminationPolicy"] = step.policy
			if _, err := routes.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			s.Eventually(step.policy+": plain HTTP", 15*time.Second, plain(step.code, step.location))
		}
		// The key is on disk for HAProxy, never in a snapshot.
		if strings.Contains(fmt.Sprintf("%+v", s.Engine.Snapshot()), "PRIVATE KEY") {
			t.Error("the snapshot carries the key")
		}
	})

	t.Run("passthrough by SNI", func(t *testing.T) {
		host := "pt." + ns + ".test"
		u := osRoute(ns, "pt", host, "", "web", 100, nil)
		u.Object["spec"].(map[string]any)["tls"] = map[string]any{"termination": "passthrough"}
		create(u)
		// The pods speak plain HTTP: they answer the ClientHello with an
		// HTTP error, which only a passed-through connection can show.
		s.Eventually(host+" passes through to a pod", 15*time.Second, func() error {
			_, _, _, err := testkit.InsecureHTTPSGet(s.HTTPSAddr, host, "/")
			if err == nil || !strings.Contains(err.Error(), "server gave HTTP response to HTTPS client") {
				return fmt.Errorf("want the pod's plain HTTP answer to the ClientHello, got %v", err)
			}
			return nil
		})
	})

	t.Run("host and path changed in place, then deleted", func(t *testing.T) {
		u, err := routes.Get(ctx, "r", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		moved := "moved." + ns + ".test"
		u.Object["spec"].(map[string]any)["host"] = moved
		u.Object["spec"].(map[string]any)["path"] = "/api"
		if _, err = routes.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		s.Serves(moved, "/api/x", 2, readyPods(ns, "web"))
		s.Eventually("the old host answers 503", 15*time.Second, func() error { return s.ExpectStatus(rHost, "/", http.StatusServiceUnavailable) })
		if err := s.ExpectStatus(moved, "/apix", http.StatusServiceUnavailable); err != nil {
			t.Errorf("/apix on the moved route: %v (Prefix matches whole path elements)", err)
		}
		if err := routes.Delete(ctx, "r", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		s.Eventually("the deleted Route answers 503", 15*time.Second, func() error { return s.ExpectStatus(moved, "/api", http.StatusServiceUnavailable) })
	})

	// The Ingress served throughout.
	s.Serves(ingHost, "/", 2, readyPods(ns, "web"))

	t.Run("a Route younger than an Ingress on its host/path", func(t *testing.T) {
		create(osRoute(ns, "late", ingHost, "/", "canary", 100, nil))
		ref := dcm.ObjectRef{Kind: kube.KindRoute, Namespace: ns, Name: "late"}
		s.Eventually("the Route refused as a conflict", 15*time.Second, func() error {
			for _, r := range s.Engine.Snapshot().Rejected {
				if r.Object == ref && r.Reason == dcm.RejectConflict && strings.Contains(r.Message, "Ingress "+ns+"/web, which is older") {
					return nil
				}
			}
			return fmt.Errorf("not refused as a conflict: %+v", s.Engine.Snapshot().Rejected)
		})
		admitted(t, routes, "late", "False", dcm.RejectConflict)
		s.Serves(ingHost, "/", 2, readyPods(ns, "web"))
		if err := env.admin.NetworkingV1().Ingresses(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		s.Serves(ingHost, "/", 1, readyPods(ns, "canary"))
		admitted(t, routes, "late", "True", "")
		for _, r := range s.Engine.Snapshot().Rejected {
			if r.Object == ref {
				t.Errorf("still refused once the Ingress is gone: %+v", r)
			}
		}
	})

	// Nothing reloaded.
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("HAProxy reloaded: worker %d → %d, reloads %v → %v", pid, s.WorkerPID(), reloads, s.Reloads())
	}
	if n := strings.Count(logs.String(), absentLog); n != 1 {
		t.Errorf("%d log lines say the Routes API is absent, want 1", n)
	}
}

// TestRouteHostileValues: the injection corpus — every string and number of a Route that dcm
// reads, with each hostile value of the corpus, through the real API server
// (whose CRD stores anything) into dcm and the real haproxy: each Route is
// refused alone with its reason, nothing of it reaches the cfg, the maps or
// a command, and a valid Route next to them serves without a reload.
func TestRouteHostileValues(t *testing.T) {
	installRouteCRD(t)
	t.Cleanup(func() { removeRouteCRD(t) })
	ns := kapitest.Namespace(t, env.admin)
	ctx := context.Background()
	host := "web." + ns + ".test"
	createApp(t, ns, "web", 1, host, "/")
	s := startRouteDCM(t, ns, nil)
	s.Serves(host, "/", 1, readyPods(ns, "web"))
	routes := adminDynamic(t).Resource(kube.RouteGVR).Namespace(ns)
	ok := "ok." + ns + ".test"
	if _, err := routes.Create(ctx, &unstructured.Unstructured{Object: injection.Route(ns, "ok", ok)}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Serves(ok, "/ok", 1, readyPods(ns, "web"))
	pid, reloads := s.WorkerPID(), s.Reloads()

	want := map[string]int{}
	names := map[string]string{} // Route name → case
	n := 0
	var firstSet func(map[string]any)
	var firstReason string
	add := func(what, reason string, set func(map[string]any)) {
		n++
		if n == 1 {
			firstSet, firstReason = set, reason
		}
		name := fmt.Sprintf("%s-%d", injection.Marker, n)
		r := injection.Route(ns, name, fmt.Sprintf("%s-%d.%s.test", injection.Marker, n, ns))
		set(r)
		if _, err := routes.Create(ctx, &unstructured.Unstructured{Object: r}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		want[reason]++
		names[name] = what + " → " + reason
	}
	for _, f := range injection.RouteFields {
		if f.Meta {
			continue
		}
		for _, v := range f.Values() {
			add(f.Name+"/"+v.Name, f.Reason, func(r map[string]any) { f.Set(r, v.V) })
		}
	}
	for _, f := range injection.RouteNumberFields {
		for _, v := range f.Values {
			add(fmt.Sprintf("%s/%d", f.Name, v), f.Reason, func(r map[string]any) { f.Set(r, v) })
		}
	}
	s.Eventually("every Route of the corpus refused", 60*time.Second, func() error {
		if got := s.Counter("dcm_rejected_objects_total"); int(got) < n {
			return fmt.Errorf("%v refusals, want %d", got, n)
		}
		return nil
	})
	for reason, k := range want {
		if got := s.Counter("dcm_rejected_objects_total", "reason", reason); int(got) != k {
			t.Errorf("dcm_rejected_objects_total{reason=%q} = %v, want %d", reason, got, k)
		}
	}
	refused := map[string]dcm.Rejection{}
	for _, r := range s.Engine.Snapshot().Rejected {
		if r.Object.Kind == kube.KindRoute {
			refused[r.Object.Name] = r
		}
	}
	for name, what := range names {
		r, ok := refused[name]
		if !ok || !strings.HasSuffix(what, " → "+r.Reason) || strings.ContainsFunc(r.Message, func(c rune) bool { return c < 0x20 || c > 0x7e }) {
			t.Errorf("%s (%s): refused as %+v", name, what, r)
		}
	}
	t.Logf("%d hostile Routes refused, by reason %v", n, want)
	// status.ingress says so, written once: no update loop.
	admitted(t, routes, "ok", "True", "")
	admitted(t, routes, injection.Marker+"-1", "False", firstReason)
	s.Eventually("every Route has dcm's status", 60*time.Second, func() error {
		list, err := routes.List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, u := range list.Items {
			if entries, _, _ := unstructured.NestedSlice(u.Object, "status", "ingress"); len(entries) != 1 {
				return fmt.Errorf("Route %s: status.ingress %v", u.GetName(), entries)
			}
		}
		return nil
	})
	before, err := routes.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// One more refused Route, created now: once its status is written,
	// dcm's status writer has gone past every write queued before it, so a
	// Route it kept rewriting would have a new resourceVersion by then.
	late := injection.Route(ns, "late", "late."+ns+".test")
	firstSet(late)
	if _, err := routes.Create(ctx, &unstructured.Unstructured{Object: late}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	admitted(t, routes, "late", "False", firstReason)
	after, err := routes.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A list's own resourceVersion moves with any write in the cluster:
	// compare the Routes'.
	versions := map[string]string{}
	for _, u := range before.Items {
		versions[u.GetName()] = u.GetResourceVersion()
	}
	for _, u := range after.Items {
		if v, ok := versions[u.GetName()]; ok && v != u.GetResourceVersion() {
			t.Errorf("Route %s still written after dcm settled: resourceVersion %s → %s", u.GetName(), v, u.GetResourceVersion())
		}
	}
	s.Serves(ok, "/ok", 1, readyPods(ns, "web"))
	noRouteTrace(t, s.Stack)
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("HAProxy reloaded (worker %d → %d, %v reloads) for Routes that were all refused", pid, s.WorkerPID(), s.Reloads()-reloads)
	}
}

// admitted waits until dcm's entry of the Route's status.ingress has the
// condition Admitted with status and reason, as OpenShift's routers write it.
func admitted(t *testing.T, routes dynamic.ResourceInterface, name, status, reason string) {
	t.Helper()
	testkit.Eventually(t, fmt.Sprintf("Route %s Admitted %s %s", name, status, reason), 15*time.Second, func() error {
		u, err := routes.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		entries, _, _ := unstructured.NestedSlice(u.Object, "status", "ingress")
		for _, e := range entries {
			m, _ := e.(map[string]any)
			conds, _ := m["conditions"].([]any)
			if m["routerName"] != kube.DefaultRouterName || len(conds) != 1 {
				continue
			}
			c, _ := conds[0].(map[string]any)
			if c["type"] == "Admitted" && c["status"] == status && (reason == "" && c["reason"] == nil || c["reason"] == reason) {
				return nil
			}
		}
		return fmt.Errorf("status.ingress %v", entries)
	})
}

// sourceEvents counts the portal's source events with reason.
func sourceEvents(s *harness.Stack, reason string) int {
	evs, _ := s.Engine.Events(0)
	n := 0
	for _, ev := range evs {
		if ev.Type == dcm.EventSource && ev.Reason == reason {
			n++
		}
	}
	return n
}

// plainGet sends one plain HTTP request through HAProxy without following
// a redirect.
func plainGet(addr, host, path string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return 0, "", err
	}
	req.Host = host
	c := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location"), nil
}

// noRouteTrace fails when the corpus's marker is in haproxy.cfg, a map
// file or an admin-socket command.
func noRouteTrace(t *testing.T, s *harness.Stack) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(s.Dir, "maps", "*.map"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range append(files, filepath.Join(s.Dir, "haproxy.cfg")) {
		b, err := os.ReadFile(name)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(injection.Marker)) {
			t.Errorf("%s holds a value of the injection corpus", name)
		}
	}
	cmds := s.Commands()
	if len(cmds) == 0 {
		t.Error("no admin-socket command recorded: the check proves nothing")
	}
	for _, c := range cmds {
		if strings.Contains(c, injection.Marker) {
			t.Errorf("command %q", c)
		}
	}
}

// TestOpenShiftReencryptRoute: a reencrypt Route through the real API
// server, its certificate, key and destinationCACertificate inline: HTTPS
// reaches a pod that terminates TLS with a certificate for
// <service>.<namespace>.svc signed by that CA, which HAProxy verifies;
// with another CA put in the Route in place, the pod is refused (503), and
// with the right one back it serves again. The Route is created while dcm
// runs (its CA file added at runtime), or is there when dcm starts (its
// CA file loaded from the startup configuration, then deleted at runtime):
// same worker, no reload throughout.
func TestOpenShiftReencryptRoute(t *testing.T) {
	installRouteCRD(t)
	t.Cleanup(func() { removeRouteCRD(t) })
	for _, tc := range []struct {
		name    string
		atStart bool
	}{
		{name: "created while dcm runs"},
		{name: "there when dcm starts", atStart: true},
	} {
		t.Run(tc.name, func(t *testing.T) { testOpenShiftReencryptRoute(t, tc.atStart) })
	}
}

func testOpenShiftReencryptRoute(t *testing.T, atStart bool) {
	ns := kapitest.Namespace(t, env.admin)
	ctx := context.Background()
	host := "secure." + ns + ".test"
	front, podCA, rogue := testkit.NewCA(t), testkit.NewCA(t), testkit.NewCA(t)
	pod := startTLSPod(t, 253, 7, "secure-pod", podCA.Leaf(t, "secure."+ns+".svc"))
	createService(t, ns, "secure", nil)
	sl := handSlice(ns, []testkit.Backend{pod})
	sl.Labels[discoveryv1.LabelServiceName] = "secure"
	sl.Ports[0].Port = ptr.To(int32(pod.Port))
	if _, err := env.admin.DiscoveryV1().EndpointSlices(ns).Create(ctx, sl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	leaf := front.Leaf(t, host)
	u := osRoute(ns, "secure", host, "", "secure", 100, nil)
	spec := u.Object["spec"].(map[string]any)
	spec["port"] = map[string]any{"targetPort": "http"}
	spec["tls"] = map[string]any{"termination": "reencrypt", "certificate": string(leaf.CertPEM), "key": string(leaf.KeyPEM),
		"destinationCACertificate": string(podCA.CertPEM())}
	routes := adminDynamic(t).Resource(kube.RouteGVR).Namespace(ns)
	create := func() {
		t.Helper()
		if _, err := routes.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if atStart {
		create()
	}
	s := startRouteDCM(t, ns, nil)
	pid, reloads := s.WorkerPID(), s.Reloads()
	rec := s.Subscribe(t)
	if !atStart {
		create()
	}
	expect := expectBehindTLS(s.Stack, host, front, leaf)
	expect("the verified pod serves", http.StatusOK, "secure-pod")
	admitted(t, routes, "secure", "True", "")
	if added := slices.ContainsFunc(s.Commands(), func(c string) bool { return strings.HasPrefix(c, "new ssl ca-file") }); added == atStart {
		t.Fatalf("CA file added at runtime: %v, want %v", added, !atStart)
	}
	setCA := func(ca *testkit.CA) {
		t.Helper()
		cur, err := routes.Get(ctx, "secure", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Object["spec"].(map[string]any)["tls"].(map[string]any)["destinationCACertificate"] = string(ca.CertPEM())
		if _, err := routes.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setCA(rogue)
	expect("the pod refused under another CA", http.StatusServiceUnavailable, "")
	setCA(podCA)
	expect("the pod verified again", http.StatusOK, "secure-pod")
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("worker %d → %d, reloads %v → %v (reasons %v)", pid, s.WorkerPID(), reloads, s.Reloads(), rec.ReloadReasons())
		for _, ev := range rec.Events() {
			if ev.Type == dcm.EventSyncError {
				t.Logf("sync error: %s %s ops %+v", ev.Reason, ev.Message, ev.Ops)
			}
		}
	}
}
