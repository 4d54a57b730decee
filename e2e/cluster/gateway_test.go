package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/e2e/kapitest"
	"github.com/dcm-router/dcm/internal/testkit"
	"github.com/dcm-router/dcm/system"
)

// installGatewayCRDs installs the Gateway API's standard CRDs of the
// version in go.mod, from the module cache, and waits until discovery
// serves them. They stay for the package's other tests: no dcm of theirs
// watches them (no --gateway-addresses).
func installGatewayCRDs(t *testing.T) {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/gateway-api").Output()
	if err != nil {
		t.Fatalf("finding sigs.k8s.io/gateway-api in the module cache: %v", err)
	}
	files, err := filepath.Glob(filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "standard", "gateway.networking.k8s.io_*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no standard CRDs: %v", err)
	}
	dyn := adminDynamic(t)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(string(b)), 4096)
		for {
			var u unstructured.Unstructured
			if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if u.GetKind() != "CustomResourceDefinition" {
				continue
			}
			if _, err := dyn.Resource(crdGVR).Create(context.Background(), &u, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("%s: %v", f, err)
			}
		}
	}
	testkit.Eventually(t, "discovery serves gateway.networking.k8s.io/v1", 30*time.Second, func() error {
		list, err := env.admin.Discovery().ServerResourcesForGroupVersion(gwv1.GroupVersion.String())
		if err != nil {
			return err
		}
		have := map[string]bool{}
		for _, r := range list.APIResources {
			have[r.Name] = true
		}
		for _, r := range []string{"gatewayclasses", "gateways", "httproutes", "tlsroutes", "referencegrants"} {
			if !have[r] {
				return fmt.Errorf("%s not served yet", r)
			}
		}
		return nil
	})
}

func gatewayAdmin(t *testing.T) gwclient.Interface {
	t.Helper()
	c, err := gwclient.NewForConfig(env.cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// gatewayFixture is one test's Gateway API objects: a GatewayClass of
// dcm's (default) controllerName, a Gateway with an HTTP listener on
// port, an HTTPRoute for host to the Service web.
type gatewayFixture struct {
	ns, class, host string
	gw              gwclient.Interface
}

func newGatewayFixture(t *testing.T, port int32) gatewayFixture {
	t.Helper()
	installGatewayCRDs(t)
	ns := kapitest.Namespace(t, env.admin)
	f := gatewayFixture{ns: ns, class: "dcm-" + ns, host: "web." + ns + ".test", gw: gatewayAdmin(t)}
	ctx := context.Background()
	// The app: a Deployment and its Service (and an Ingress on another
	// host, which keeps serving beside the Gateway).
	createApp(t, ns, "web", 2, "ingress."+ns+".test", "/")
	class := &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: f.class}, Spec: gwv1.GatewayClassSpec{ControllerName: system.DefaultGatewayControllerName}}
	if _, err := f.gw.GatewayV1().GatewayClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = f.gw.GatewayV1().GatewayClasses().Delete(context.Background(), f.class, metav1.DeleteOptions{})
	})
	g := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gw"}, Spec: gwv1.GatewaySpec{GatewayClassName: gwv1.ObjectName(f.class),
		Listeners: []gwv1.Listener{{Name: "http", Port: port, Protocol: gwv1.HTTPProtocolType}}}}
	if _, err := f.gw.GatewayV1().Gateways(ns).Create(ctx, g, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: gwv1.HTTPRouteSpec{
		CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "gw"}}},
		Hostnames:       []gwv1.Hostname{gwv1.Hostname(f.host)},
		Rules: []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: gwv1.BackendRef{
			BackendObjectReference: gwv1.BackendObjectReference{Name: "web", Port: ptr.To(gwv1.PortNumber(80))}}}}}}}}
	if _, err := f.gw.GatewayV1().HTTPRoutes(ns).Create(ctx, r, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return f
}

// startGatewayDCM runs dcm as shipped but for the Gateway flags: a pool
// of its own in 127.0.20.0/24 (distinct per test) and high ports.
func startGatewayDCM(t *testing.T, ns, pool string, httpPort int) *harness.Stack {
	t.Helper()
	o := dcmOptions(t, ns)
	o.Config = func(c *system.Config) {
		c.Namespaces, c.HTTPSRedirectPort = []string{ns}, 443
		c.GatewayAddresses, c.GatewayHTTPPorts, c.GatewayHTTPSPorts = []string{pool}, []int{httpPort}, []int{httpPort + 363}
	}
	return harness.Start(t, o)
}

func conditionIs(conds []metav1.Condition, typ, status string, gen int64) error {
	for _, c := range conds {
		if c.Type == typ {
			if string(c.Status) != status || c.ObservedGeneration != gen {
				return fmt.Errorf("%s %s (%s: %s) generation %d, want %s at %d", typ, c.Status, c.Reason, c.Message, c.ObservedGeneration, status, gen)
			}
			return nil
		}
	}
	return fmt.Errorf("no %s condition in %+v", typ, conds)
}

// gatewayStatusOK checks the status dcm wrote on the class, the Gateway
// (with the pool's first address) and the HTTPRoute.
func (f gatewayFixture) statusOK(addr string) error {
	ctx := context.Background()
	c, err := f.gw.GatewayV1().GatewayClasses().Get(ctx, f.class, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if err := conditionIs(c.Status.Conditions, "Accepted", "True", c.Generation); err != nil {
		return fmt.Errorf("GatewayClass: %w", err)
	}
	g, err := f.gw.GatewayV1().Gateways(f.ns).Get(ctx, "gw", metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, typ := range []string{"Accepted", "Programmed"} {
		if err := conditionIs(g.Status.Conditions, typ, "True", g.Generation); err != nil {
			return fmt.Errorf("Gateway: %w", err)
		}
	}
	if len(g.Status.Addresses) != 1 || g.Status.Addresses[0].Value != addr {
		return fmt.Errorf("Gateway addresses %+v, want %s", g.Status.Addresses, addr)
	}
	if len(g.Status.Listeners) != 1 || g.Status.Listeners[0].AttachedRoutes != 1 {
		return fmt.Errorf("Gateway listeners %+v, want one with 1 attached route", g.Status.Listeners)
	}
	for _, typ := range []string{"Accepted", "Programmed", "ResolvedRefs"} {
		if err := conditionIs(g.Status.Listeners[0].Conditions, typ, "True", g.Generation); err != nil {
			return fmt.Errorf("listener: %w", err)
		}
	}
	r, err := f.gw.GatewayV1().HTTPRoutes(f.ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		return err
	}
	if len(r.Status.Parents) != 1 || r.Status.Parents[0].ControllerName != system.DefaultGatewayControllerName {
		return fmt.Errorf("HTTPRoute parents %+v", r.Status.Parents)
	}
	for _, typ := range []string{"Accepted", "ResolvedRefs"} {
		if err := conditionIs(r.Status.Parents[0].Conditions, typ, "True", r.Generation); err != nil {
			return fmt.Errorf("HTTPRoute: %w", err)
		}
	}
	return nil
}

// gatewayBackend finds the route dcm made of rule 0 of the HTTPRoute web
// in the snapshot.
func gatewayBackend(s *harness.Stack, ns string) (*dcm.Backend, error) {
	snap := s.Engine.Snapshot()
	for _, b := range snap.Backends {
		if b.Route.Namespace == ns && b.Route.Source == dcm.SourceHTTPRoute && b.Route.Object == "web" {
			return b, nil
		}
	}
	var names []string
	for _, b := range snap.Backends {
		names = append(names, b.Name)
	}
	return nil, fmt.Errorf("no backend of HTTPRoute %s/web among %v", ns, names)
}

// TestGatewayHTTPRouteStatusAndSnapshot: against the real API server with
// the standard CRDs, dcm (its ServiceAccount's RBAC) accepts a
// GatewayClass of its controllerName, gives the Gateway the pool's first
// address, attaches the HTTPRoute and says so in all three statuses —
// then holds the route in its snapshot with its Gateway fields and the
// Service's pods as servers. Deleting the HTTPRoute takes the route away.
func TestGatewayHTTPRouteStatusAndSnapshot(t *testing.T) {
	f := newGatewayFixture(t, 18080)
	s := startGatewayDCM(t, f.ns, "127.0.20.8/30", 18080)
	s.Eventually("GatewayClass, Gateway and HTTPRoute status", 30*time.Second, func() error { return f.statusOK("127.0.20.8") })
	s.Eventually("the snapshot holds the route with its Gateway fields and pods", 30*time.Second, func() error {
		b, err := gatewayBackend(s, f.ns)
		if err != nil {
			return err
		}
		g := b.Route.Gateway
		if g == nil || g.Gateway != f.ns+"/gw" || g.Listener != "http" || g.Bind != "127.0.20.8:18080" ||
			!slices.Equal(g.Hostnames, []string{f.host}) || len(g.Matches) != 1 || g.Matches[0].Path != "/" || g.Unresolved {
			return fmt.Errorf("route %+v gateway %+v", b.Route, g)
		}
		if b.Route.Kind != dcm.KindHTTP || b.Route.Host != "" || len(b.Route.Services) != 1 || b.Route.Services[0].Name != "web" {
			return fmt.Errorf("route %+v", b.Route)
		}
		pods, err := readyPods(f.ns, "web")()
		if err != nil {
			return err
		}
		var servers []string
		for _, sv := range b.Servers {
			servers = append(servers, sv.Pod)
		}
		slices.Sort(servers)
		if len(pods) != 2 || !slices.Equal(servers, pods) {
			return fmt.Errorf("servers of pods %v, ready pods %v", servers, pods)
		}
		return nil
	})
	// The Ingress beside it still serves.
	s.Serves("ingress."+f.ns+".test", "/", 2, readyPods(f.ns, "web"))
	if err := f.gw.GatewayV1().HTTPRoutes(f.ns).Delete(context.Background(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Eventually("the route gone from the snapshot", 30*time.Second, func() error {
		if _, err := gatewayBackend(s, f.ns); err == nil {
			return errors.New("still there")
		}
		return nil
	})
}

// gatewayGet sends one request to a Gateway listener's address (in
// 127.0.0.0/8) with a Host header.
func gatewayGet(bind, host, path string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+bind+path, nil)
	if err != nil {
		return 0, "", err
	}
	req.Host = host
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b)), err
}

// TestGatewayHTTPRouteTraffic: requests to the Gateway's address and
// listener port, for the HTTPRoute's host, reach exactly the Service's
// ready pods; another host gets 404; the route deleted, its host gets 404
// too — all without a reload. Needs HAProxy's side of the Gateway API
// (the pre-bound Gateway frontends and their matching).
func TestGatewayHTTPRouteTraffic(t *testing.T) {
	f := newGatewayFixture(t, 18081)
	s := startGatewayDCM(t, f.ns, "127.0.20.12/30", 18081)
	s.Eventually("GatewayClass, Gateway and HTTPRoute status", 30*time.Second, func() error { return f.statusOK("127.0.20.12") })
	pid, reloads := s.WorkerPID(), s.Reloads()
	bind := "127.0.20.12:18081"
	s.Eventually("the Gateway serves the route's pods", 30*time.Second, func() error {
		want, err := readyPods(f.ns, "web")()
		if err != nil {
			return err
		}
		got := map[string]int{}
		for range 12 {
			code, body, err := gatewayGet(bind, f.host, "/")
			if err != nil {
				return err
			}
			if code != http.StatusOK {
				return fmt.Errorf("HTTP %d: %s", code, body)
			}
			got[body]++
		}
		if names := slices.Sorted(maps.Keys(got)); len(want) != 2 || !slices.Equal(names, want) {
			return fmt.Errorf("served by %v, ready pods %v", names, want)
		}
		return nil
	})
	if code, _, err := gatewayGet(bind, "other."+f.ns+".test", "/"); err != nil || code != http.StatusNotFound {
		t.Errorf("another host: %d %v, want 404", code, err)
	}
	if err := f.gw.GatewayV1().HTTPRoutes(f.ns).Delete(context.Background(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Eventually("the deleted route's host gets 404", 30*time.Second, func() error {
		code, body, err := gatewayGet(bind, f.host, "/")
		if err != nil || code != http.StatusNotFound {
			return fmt.Errorf("%d %q %v", code, body, err)
		}
		return nil
	})
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("reloaded: pid %d → %d, reloads %v → %v", pid, s.WorkerPID(), reloads, s.Reloads())
	}
}
