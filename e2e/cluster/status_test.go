package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/dcm-router/dcm/dcm/kube"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/e2e/kapitest"
	"github.com/dcm-router/dcm/internal/testkit"
	"github.com/dcm-router/dcm/system"
)

// statusDCM starts dcm on ns as dcmOptions does, Routes rechecked soon
// (the tests install the CRD), and config on top.
func statusDCM(t *testing.T, ns string, config func(c *system.Config)) *harness.Stack {
	t.Helper()
	o := dcmOptions(t, ns)
	o.Config = func(c *system.Config) {
		c.Namespaces, c.HTTPSRedirectPort = []string{ns}, 443
		c.RoutesRecheck, c.RoutesMaxRecheck = 200*time.Millisecond, time.Second
		config(c)
	}
	return harness.Start(t, o)
}

// routeEntries is a Route's status.ingress by routerName.
func routeEntries(u *unstructured.Unstructured) map[string]map[string]any {
	entries, _, _ := unstructured.NestedSlice(u.Object, "status", "ingress")
	out := map[string]map[string]any{}
	for _, e := range entries {
		if m, ok := e.(map[string]any); ok {
			name, _ := m["routerName"].(string)
			out[name] = m
		}
	}
	return out
}

// entryHost waits until the Route's entry of router says host.
func entryHost(t *testing.T, routes dynamic.ResourceInterface, name, router, host string) {
	t.Helper()
	testkit.Eventually(t, fmt.Sprintf("Route %s: %s's entry for %s", name, router, host), 15*time.Second, func() error {
		u, err := routes.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if e := routeEntries(u)[router]; e == nil || e["host"] != host {
			return fmt.Errorf("status.ingress %v", routeEntries(u))
		}
		return nil
	})
}

// ingressAddress is the ADDRESS column `kubectl get ingress` prints: the
// API server's own table of the Ingress (kubectl asks for it the same way).
func ingressAddress(t *testing.T, ns, name string) (string, error) {
	t.Helper()
	raw, err := env.admin.NetworkingV1().RESTClient().Get().Namespace(ns).Resource("ingresses").Name(name).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(context.Background())
	if err != nil {
		return "", err
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		return "", err
	}
	for i, c := range table.ColumnDefinitions {
		if c.Name == "Address" && len(table.Rows) == 1 {
			return fmt.Sprint(table.Rows[0].Cells[i]), nil
		}
	}
	return "", fmt.Errorf("no Address column in %+v", table.ColumnDefinitions)
}

// TestIngressStatusPublished: with --publish-service, the Ingresses dcm
// serves show the Service's ClusterIP in status.loadBalancer.ingress (and
// `kubectl get ingress`'s ADDRESS), then its load balancer's address once
// it has one; an Ingress moved to another class is cleared; and updates
// that change nothing dcm writes cost no write.
func TestIngressStatusPublished(t *testing.T) {
	ctx := context.Background()
	ns := kapitest.Namespace(t, env.admin)
	host := "web." + ns + ".test"
	createApp(t, ns, "web", 1, host, "/")
	ings := env.admin.NetworkingV1().Ingresses(ns)
	if _, err := ings.Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"ingressClassName":"dcm"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// dcm's own Service, as deploy/ would put a load balancer in front.
	front, err := env.admin.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "front"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "dcm"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := statusDCM(t, ns, func(c *system.Config) { c.IngressClass, c.PublishService = "dcm", ns+"/front" })
	s.Serves(host, "/", 1, readyPods(ns, "web"))
	address := func(want string) {
		t.Helper()
		testkit.Eventually(t, "kubectl get ingress shows "+want, 15*time.Second, func() error {
			got, err := ingressAddress(t, ns, "web")
			if err == nil && got != want {
				err = fmt.Errorf("ADDRESS %q", got)
			}
			return err
		})
	}
	address(front.Spec.ClusterIP)

	// A load balancer hands the Service an address: published instead.
	front.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.80"}}
	if _, err := env.admin.CoreV1().Services(ns).UpdateStatus(ctx, front, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	address("192.0.2.80")
	// Counted once the API server's answer is in: maybe after the read.
	testkit.Eventually(t, "two writes counted", 5*time.Second, func() error {
		if w := s.System.Kube().StatusWrites(); w != 2 {
			return fmt.Errorf("%d status writes, want 2 (ClusterIP, load balancer)", w)
		}
		return nil
	})
	writes := s.System.Kube().StatusWrites()

	// Updates dcm has nothing to say about: no write.
	for i := range 20 {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"test/n":"%d"}}}`, i)
		if _, err := ings.Patch(ctx, "web", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2 * time.Second)
	if got := s.System.Kube().StatusWrites(); got != writes {
		t.Errorf("20 updates that change nothing cost %d status writes", got-writes)
	}

	// Moved to another class: no longer dcm's, its status is cleared.
	if _, err := ings.Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"ingressClassName":"other"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "status cleared", 15*time.Second, func() error {
		ing, err := ings.Get(ctx, "web", metav1.GetOptions{})
		if err == nil && len(ing.Status.LoadBalancer.Ingress) != 0 {
			err = fmt.Errorf("status %v", ing.Status.LoadBalancer.Ingress)
		}
		return err
	})
	time.Sleep(time.Second)
	total := s.System.Kube().StatusWrites()
	t.Logf("status writes: %d (ClusterIP, load balancer, cleared)", total)
	if total != 3 {
		t.Errorf("%d status writes, want 3", total)
	}
}

// leaseConfig makes replicas of one router: one Lease, short durations.
func leaseConfig(lease string, c *system.Config) {
	c.LeaderElectionLease = lease
	c.LeaseDuration, c.RenewDeadline, c.LeaderElectRetryPeriod = 4*time.Second, 3*time.Second, 500*time.Millisecond
	c.PublishAddresses = []string{"192.0.2.10"}
}

// TestStatusLeaderElection: two replicas of one router (one Lease): both
// serve, exactly one writes Route and Ingress status; when it stops, the
// other takes over within the lease duration and writes what changes next.
func TestStatusLeaderElection(t *testing.T) {
	installRouteCRD(t)
	t.Cleanup(func() { removeRouteCRD(t) })
	ctx := context.Background()
	ns := kapitest.Namespace(t, env.admin)
	host := "web." + ns + ".test"
	createApp(t, ns, "web", 1, host, "/")
	routes := adminDynamic(t).Resource(kube.RouteGVR).Namespace(ns)
	if _, err := routes.Create(ctx, osRoute(ns, "r", "r."+ns+".test", "", "web", 100, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lease := "dcm-status-" + ns
	replicas := []*harness.Stack{
		statusDCM(t, ns, func(c *system.Config) { leaseConfig(lease, c) }),
		statusDCM(t, ns, func(c *system.Config) { leaseConfig(lease, c) }),
	}
	for _, s := range replicas {
		s.Serves(host, "/", 1, readyPods(ns, "web"))
		s.Serves("r."+ns+".test", "/", 1, readyPods(ns, "web"))
	}
	var leader, follower *harness.Stack
	testkit.Eventually(t, "exactly one leader", 15*time.Second, func() error {
		a, b := replicas[0].System.Kube().Leading(), replicas[1].System.Kube().Leading()
		if a == b {
			return fmt.Errorf("leading: %v, %v", a, b)
		}
		leader, follower = replicas[0], replicas[1]
		if b {
			leader, follower = replicas[1], replicas[0]
		}
		return nil
	})
	entryHost(t, routes, "r", kube.DefaultRouterName, "r."+ns+".test")
	testkit.Eventually(t, "Ingress status", 15*time.Second, func() error {
		got, err := ingressAddress(t, ns, "web")
		if err == nil && got != "192.0.2.10" {
			err = fmt.Errorf("ADDRESS %q", got)
		}
		return err
	})
	// A change of host: the leader writes it, the follower nothing.
	setHost := func(h string) {
		t.Helper()
		patch := fmt.Sprintf(`{"spec":{"host":%q}}`, h)
		if _, err := routes.Patch(ctx, "r", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		entryHost(t, routes, "r", kube.DefaultRouterName, h)
	}
	setHost("r2." + ns + ".test")
	time.Sleep(time.Second)
	if w := follower.System.Kube().StatusWrites(); w != 0 {
		t.Errorf("the follower wrote status %d times", w)
	}
	t.Logf("leader's status writes: %d", leader.System.Kube().StatusWrites())
	if leader.System.Kube().StatusWrites() < 3 {
		t.Errorf("the leader wrote status %d times, want at least 3 (Route, Ingress, new host)", leader.System.Kube().StatusWrites())
	}

	stopped := time.Now()
	leader.Stop()
	testkit.Eventually(t, "the follower leads", 10*time.Second, func() error {
		if !follower.System.Kube().Leading() {
			return fmt.Errorf("not leading after %s", time.Since(stopped))
		}
		return nil
	})
	took := time.Since(stopped)
	t.Logf("failover: the follower leads %s after the leader stopped", took.Round(10*time.Millisecond))
	if cfg := follower.System.Config(); took > cfg.LeaseDuration {
		t.Errorf("failover took %s, more than the lease duration %s", took, cfg.LeaseDuration)
	}
	setHost("r3." + ns + ".test")
	// dcm counts its write once the API server's answer is in, which may
	// come after the test has read the Route.
	testkit.Eventually(t, "the new leader counts its write", 5*time.Second, func() error {
		if w := follower.System.Kube().StatusWrites(); w == 0 {
			return fmt.Errorf("no status written")
		}
		return nil
	})
	follower.Serves("r3."+ns+".test", "/", 1, readyPods(ns, "web"))
}

// statusWatch counts the changes of a Route's status.ingress and checks
// that an entry, once there, never goes away (no flapping).
type statusWatch struct {
	changes int
	lost    []string
}

func watchStatus(t *testing.T, routes dynamic.ResourceInterface, name string, routers []string) (*statusWatch, func()) {
	t.Helper()
	w, err := routes.Watch(context.Background(), metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	sw := &statusWatch{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var last []any
		seen := map[string]bool{}
		for ev := range w.ResultChan() {
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok || ev.Type != watch.Modified && ev.Type != watch.Added {
				continue
			}
			entries, _, _ := unstructured.NestedSlice(u.Object, "status", "ingress")
			if fmt.Sprint(entries) != fmt.Sprint(last) {
				sw.changes++
				last = entries
			}
			have := routeEntries(u)
			for _, r := range routers {
				if have[r] != nil {
					seen[r] = true
				} else if seen[r] {
					sw.lost = append(sw.lost, fmt.Sprintf("%s's entry gone at version %s", r, u.GetResourceVersion()))
				}
			}
		}
	}()
	return sw, func() { w.Stop(); <-done }
}

// TestRouterNamesKeepTheirEntries: two routers of other names (two
// deployments, each its own Lease) admit the same Route; over 100 updates
// of it, 4 of which change its host, each keeps its own entry, never
// removes the other's, and writes once per change of what it says.
func TestRouterNamesKeepTheirEntries(t *testing.T) {
	installRouteCRD(t)
	t.Cleanup(func() { removeRouteCRD(t) })
	ctx := context.Background()
	ns := kapitest.Namespace(t, env.admin)
	createApp(t, ns, "web", 1, "web."+ns+".test", "/")
	routes := adminDynamic(t).Resource(kube.RouteGVR).Namespace(ns)
	if _, err := routes.Create(ctx, osRoute(ns, "r", "r."+ns+".test", "", "web", 100, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	routers := []string{"alpha", "beta"}
	stacks := map[string]*harness.Stack{}
	for _, name := range routers {
		stacks[name] = statusDCM(t, ns, func(c *system.Config) {
			c.RouterName, c.RouterCanonicalHostname = name, name+".apps.example.com"
		})
	}
	for _, name := range routers {
		entryHost(t, routes, "r", name, "r."+ns+".test")
	}
	sw, stop := watchStatus(t, routes, "r", routers)
	const updates, hostChanges = 100, 4
	last := "r." + ns + ".test"
	for i := range updates {
		spec := ""
		if (i+1)%(updates/hostChanges) == 0 {
			last = fmt.Sprintf("r%d.%s.test", i, ns)
			spec = fmt.Sprintf(`,"spec":{"host":%q}`, last)
		}
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"test/n":"%d"}}%s}`, i, spec)
		if _, err := routes.Patch(ctx, "r", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range routers {
		entryHost(t, routes, "r", name, last)
	}
	time.Sleep(2 * time.Second)
	stop()
	writes := 0
	for _, name := range routers {
		writes += int(stacks[name].System.Kube().StatusWrites())
	}
	t.Logf("%d updates (%d of the host): %d status writes by both routers, %d changes of status.ingress seen", updates, hostChanges, writes, sw.changes)
	if bound := len(routers) * (1 + hostChanges); writes > bound {
		t.Errorf("%d status writes, want at most %d (one per router per change)", writes, bound)
	}
	if len(sw.lost) > 0 {
		t.Errorf("entries flapped: %v", sw.lost)
	}
	u, err := routes.Get(ctx, "r", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	entries := routeEntries(u)
	if got := slices.Sorted(maps.Keys(entries)); !slices.Equal(got, routers) {
		t.Errorf("status.ingress routers %v, want %v", got, routers)
	}
	for _, name := range routers {
		if c := entries[name]["routerCanonicalHostname"]; c != name+".apps.example.com" {
			t.Errorf("%s's routerCanonicalHostname %v", name, c)
		}
	}
}

// TestStatusContentionBacksOff: two deployments that share a router name
// but disagree on what its entry says (here its canonical host name), each
// with a Lease of its own, would rewrite each other's entry for ever; the
// contention tracker makes each give up after the second change by the
// other, so the writes stop within a few.
func TestStatusContentionBacksOff(t *testing.T) {
	installRouteCRD(t)
	t.Cleanup(func() { removeRouteCRD(t) })
	ctx := context.Background()
	ns := kapitest.Namespace(t, env.admin)
	createApp(t, ns, "web", 1, "web."+ns+".test", "/")
	routes := adminDynamic(t).Resource(kube.RouteGVR).Namespace(ns)
	if _, err := routes.Create(ctx, osRoute(ns, "r", "r."+ns+".test", "", "web", 100, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var stacks []*harness.Stack
	for _, canonical := range []string{"one.example.com", "two.example.com"} {
		stacks = append(stacks, statusDCM(t, ns, func(c *system.Config) { c.RouterCanonicalHostname = canonical }))
	}
	entryHost(t, routes, "r", kube.DefaultRouterName, "r."+ns+".test")
	time.Sleep(10 * time.Second)
	writes := stacks[0].System.Kube().StatusWrites() + stacks[1].System.Kube().StatusWrites()
	t.Logf("two disagreeing writers of one entry: %d status writes in 10s", writes)
	// Each writes once, takes back the other's first change, and gives up
	// at the second: at most 2 + 2, with one more for a write that
	// crossed another's in flight.
	if writes > 5 {
		t.Errorf("%d status writes in 10s: a write storm", writes)
	}
	u, err := routes.Get(ctx, "r", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(routeEntries(u)); n != 1 {
		t.Errorf("%d entries, want 1: %v", n, routeEntries(u))
	}
}

// TestStatusLeaderKilled: the leader is the dcm binary, killed (SIGKILL:
// no release of the Lease); the in-process replica takes over once the
// Lease has run out, within the lease duration and two (jittered) retries, and writes
// the status of an Ingress created after the kill.
func TestStatusLeaderKilled(t *testing.T) {
	ns := kapitest.Namespace(t, env.admin)
	createApp(t, ns, "web", 1, "web."+ns+".test", "/")
	lease := "dcm-status-" + ns
	var cfg system.Config
	leaseConfig(lease, &cfg)
	bin := buildDCM(t)
	args := []string{"--kubeconfig", writeKubeconfig(t, serviceAccountConfig(t, "dcm-system", "dcm")),
		"--work-dir", testkit.ShortDir(t), "--listen", "127.0.0.1:0",
		"--http-bind", testkit.FreeAddr(t), "--https-bind", testkit.FreeAddr(t), "--namespace", ns, "--routes=false",
		"--leader-election-lease", lease, "--leader-election-lease-duration", cfg.LeaseDuration.String(),
		"--leader-election-renew-deadline", cfg.RenewDeadline.String(), "--leader-election-retry-period", cfg.LeaderElectRetryPeriod.String(),
		"--publish-address", strings.Join(cfg.PublishAddresses, ",")}
	cmd := exec.Command(bin, args...)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("the dcm binary's log:\n%s", stderr.String())
		}
	})
	testkit.Eventually(t, "the binary leads and writes the Ingress's status", 60*time.Second, func() error {
		got, err := ingressAddress(t, ns, "web")
		if err == nil && got != "192.0.2.10" {
			err = fmt.Errorf("ADDRESS %q", got)
		}
		return err
	})
	follower := statusDCM(t, ns, func(c *system.Config) { leaseConfig(lease, c) })
	follower.Serves("web."+ns+".test", "/", 1, readyPods(ns, "web"))
	if follower.System.Kube().Leading() {
		t.Fatal("two leaders")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	killed := time.Now()
	testkit.Eventually(t, "the replica leads", 20*time.Second, func() error {
		if !follower.System.Kube().Leading() {
			return fmt.Errorf("not leading after %s", time.Since(killed))
		}
		return nil
	})
	took := time.Since(killed)
	t.Logf("failover after SIGKILL: the replica leads %s after the leader died (lease %s, retry %s)",
		took.Round(10*time.Millisecond), cfg.LeaseDuration, cfg.LeaderElectRetryPeriod)
	// The replica takes the Lease once it has seen no renewal for the
	// lease duration, counted from when it saw the last one: it looks
	// every retry period, stretched by client-go's jitter (up to 2.2×),
	// so the last renewal seen and the look that finds it expired each add
	// up to one such period.
	if bound := cfg.LeaseDuration + 2*cfg.LeaderElectRetryPeriod*22/10; took > bound {
		t.Errorf("failover took %s, more than %s", took, bound)
	}
	if w := follower.System.Kube().StatusWrites(); w != 0 {
		t.Errorf("the replica wrote %d statuses that were there already", w)
	}
	createIngress(t, ns, "later", "later."+ns+".test", "/", "web")
	testkit.Eventually(t, "the new leader writes a new Ingress's status", 15*time.Second, func() error {
		got, err := ingressAddress(t, ns, "later")
		if err == nil && got != "192.0.2.10" {
			err = fmt.Errorf("ADDRESS %q", got)
		}
		return err
	})
}
