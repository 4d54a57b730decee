package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/haproxy"
	"github.com/dcm-router/dcm/dcm/kube"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/internal/testkit"
)

// tlsPKI is what the TLS routes of a test are made of: the CA clients
// trust for the frontend's certificates, the CA that signs the pods', and
// the store both kinds of PEM are fetched from.
type tlsPKI struct {
	front, pods *testkit.CA
	store       *testkit.CertStore
}

func newTLSPKI(t *testing.T) tlsPKI {
	return tlsPKI{front: testkit.NewCA(t), pods: testkit.NewCA(t), store: &testkit.CertStore{}}
}

// edgeRouteFor is an edge route of namespace test for host, its certificate
// signed by the frontend CA.
func (k tlsPKI) edgeRouteFor(t *testing.T, name, host string) (dcm.Route, testkit.Leaf) {
	leaf := k.front.Leaf(t, host)
	r := poolRoute(name, host, "/")
	r.Kind = dcm.KindEdge
	r.TLS = &dcm.TLSRef{Secret: "test/" + name + "-tls", Version: k.store.Put("test/"+name+"-tls", leaf.PEM())}
	return r, leaf
}

// reencryptRouteFor is a reencrypt route of namespace test for host whose
// pods must present a certificate for <name>.test.svc signed by ca.
func (k tlsPKI) reencryptRouteFor(t *testing.T, name, host string, caPEM []byte) (dcm.Route, testkit.Leaf) {
	r, leaf := k.edgeRouteFor(t, name, host)
	r.Kind = dcm.KindReencrypt
	r.Upstream = &dcm.UpstreamTLS{CA: "secret:test/pods-ca", Version: k.store.Put("secret:test/pods-ca", caPEM), ServerName: name + ".test.svc"}
	return r, leaf
}

// withTLSRoutes is withRoutes with reencrypt routes' servers named after
// their upstream TLS, as the sources name them.
func withTLSRoutes(base dcm.Desired, routes []dcm.Route, pods []pod) dcm.Desired {
	d := withRoutes(base, routes, pods)
	for i, b := range d.Backends {
		nb := b.WithUpstreamNames()
		d.Backends[i] = &nb
	}
	return d
}

// caFiles lists the CA files in HAProxy's work directory.
func caFiles(t *testing.T, s *harness.Stack) []string {
	t.Helper()
	s.Engine.FlushFiles() // written behind the syncs
	entries, err := os.ReadDir(filepath.Join(s.Dir, haproxy.CAsDir))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, haproxy.CAsDir+"/"+e.Name())
	}
	return out
}

// TestTLSRoutesWithoutReload: 16 times an edge route and a reencrypt route
// are created and answer from their pods through real TLS — the client
// verifies the route's certificate; for reencrypt HAProxy connects to a
// pod that terminates TLS itself with a certificate for <svc>.test.svc
// signed by the destination CA, and verifies it — then are deleted and
// answer 503 with the default certificate, all through spares (HTTP ones
// for edge, reencrypt ones for reencrypt) with the HAProxy worker and the
// reload count unchanged. The CA file is there while a reencrypt server
// uses it and gone after.
func TestTLSRoutesWithoutReload(t *testing.T) {
	k := newTLSPKI(t)
	app := startPod(t, "127.0.6.1", "app")
	base := desiredApp(app.endpoint(dcm.StateReady))
	src := harness.NewStaticSource(base)
	s := harness.Start(t, harness.Options{Source: src, Certs: k.store, CAs: k.store})
	pid, reloads := s.WorkerPID(), s.Reloads()
	spares := s.Spares()
	if got := len(s.Engine.Snapshot().Pool); got != spares {
		t.Fatalf("%d free spares at start, want %d", got, spares)
	}
	caFile := ""
	start := time.Now()
	for i := range 16 {
		ename, rname := fmt.Sprintf("e%d", i), fmt.Sprintf("re%d", i)
		ehost, rhost := ename+".test", rname+".test"
		ep := startPod(t, fmt.Sprintf("127.0.6.%d", 10+i), "pod-"+ename)
		rp := pod(testkit.StartTLSBackend(t, fmt.Sprintf("127.0.6.%d", 40+i), "pod-"+rname, k.pods.Leaf(t, rname+".test.svc")))
		er, eleaf := k.edgeRouteFor(t, ename, ehost)
		rr, rleaf := k.reencryptRouteFor(t, rname, rhost, k.pods.CertPEM())
		caFile = haproxy.CAFile(rr.Upstream.Version)
		src.Set(withTLSRoutes(base, []dcm.Route{er, rr}, []pod{ep, rp}))
		servedWith(s, ehost, ep.Name, k.front, eleaf)
		servedWith(s, rhost, rp.Name, k.front, rleaf)
		for _, want := range []struct {
			route      dcm.Route
			kind, pool string
		}{{er, "edge", "http"}, {rr, "reencrypt", "reencrypt"}} {
			b := s.Backend(want.route.BackendName())
			if b.Name != "be_"+want.kind+":test:"+want.route.Name || !strings.HasPrefix(b.Slot, "be_"+want.pool+":_pool:") {
				t.Fatalf("round %d: backend %s slot %q", i, b.Name, b.Slot)
			}
		}
		// The engine writes the files right after HAProxy acknowledged the
		// batch that served the route: wait for that write.
		s.Eventually(fmt.Sprintf("round %d: the CA file on disk", i), 5*time.Second, func() error {
			if got := caFiles(t, s); !slices.Equal(got, []string{caFile}) {
				return fmt.Errorf("CA files %q, want %q", got, caFile)
			}
			return nil
		})
		filesEqualRuntime(t, s)

		src.Set(base)
		s.Eventually(ehost+" is gone", 5*time.Second, func() error { return notServedWith(s, ehost, eleaf) })
		s.Eventually(rhost+" is gone", 5*time.Second, func() error { return notServedWith(s, rhost, rleaf) })
		s.Eventually(ename+"'s and "+rname+"'s spares are back", 5*time.Second, func() error {
			if n := len(s.Engine.Snapshot().Pool); n != spares {
				return fmt.Errorf("%d spares free", n)
			}
			return nil
		})
		answers(s, "app.test", "/", app.Name)
	}
	t.Logf("16 rounds of an edge and a reencrypt route created/served/deleted in %s", time.Since(start).Round(time.Millisecond))
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("worker %d → %d, reloads %v → %v: routes reloaded", pid, s.WorkerPID(), reloads, s.Reloads())
	}
	if got := caFiles(t, s); len(got) != 0 {
		t.Errorf("CA files %q left with no reencrypt route", got)
	}
	filesEqualRuntime(t, s)
	if got := s.Counter("dcm_runtime_errors_total"); got != 0 {
		t.Errorf("%v runtime errors", got)
	}
}

// TestReencryptPoolExhausted: reencrypt routes beyond the reencrypt spares
// reload exactly once, with reason pool-exhausted, and the overflowing
// route is served (its servers rendered in the cfg with their CA file).
func TestReencryptPoolExhausted(t *testing.T) {
	k := newTLSPKI(t)
	app := startPod(t, "127.0.7.1", "app")
	base := desiredApp(app.endpoint(dcm.StateReady))
	src := harness.NewStaticSource(base)
	s := harness.Start(t, harness.Options{Source: src, Certs: k.store, CAs: k.store, Config: harness.PoolSize(2)})
	pid := s.WorkerPID()
	var routes []dcm.Route
	var leaves []testkit.Leaf
	var pods []pod
	for i := range 3 {
		name := fmt.Sprintf("rx%d", i)
		r, leaf := k.reencryptRouteFor(t, name, name+".test", k.pods.CertPEM())
		routes, leaves = append(routes, r), append(leaves, leaf)
		pods = append(pods, pod(testkit.StartTLSBackend(t, fmt.Sprintf("127.0.7.%d", 10+i), "pod-"+name, k.pods.Leaf(t, name+".test.svc"))))
	}
	src.Set(withTLSRoutes(base, routes[:2], pods[:2]))
	servedWith(s, "rx0.test", pods[0].Name, k.front, leaves[0])
	servedWith(s, "rx1.test", pods[1].Name, k.front, leaves[1])
	if s.Reloads() != 0 || s.WorkerPID() != pid {
		t.Fatalf("%v reloads for routes that fit the pool", s.Reloads())
	}
	src.Set(withTLSRoutes(base, routes, pods))
	servedWith(s, "rx2.test", pods[2].Name, k.front, leaves[2])
	s.Eventually("one reload", 5*time.Second, func() error {
		if n := s.Counter("dcm_reloads_total", "reason", string(dcm.ReasonPoolExhausted)); n != 1 {
			return fmt.Errorf("%v pool-exhausted reloads", n)
		}
		return nil
	})
	for i := range 3 {
		servedWith(s, routes[i].Host, pods[i].Name, k.front, leaves[i])
	}
	if n := s.Reloads(); n != 1 {
		t.Errorf("%v reloads in all, want the one pool-exhausted", n)
	}
	if s.WorkerPID() == pid {
		t.Error("the worker did not change across the reload")
	}
}

// TestReencryptVerifiesPods: a pod whose certificate the destination CA
// did not sign, or that names another host than the route's server name,
// gets no request: HAProxy answers 503. Without verification it would
// answer 200.
func TestReencryptVerifiesPods(t *testing.T) {
	k := newTLSPKI(t)
	rogue := testkit.NewCA(t)
	app := startPod(t, "127.0.7.1", "app")
	base := desiredApp(app.endpoint(dcm.StateReady))
	src := harness.NewStaticSource(base)
	s := harness.Start(t, harness.Options{Source: src, Certs: k.store, CAs: k.store})
	good, goodLeaf := k.reencryptRouteFor(t, "good", "good.test", k.pods.CertPEM())
	unsigned, unsignedLeaf := k.reencryptRouteFor(t, "unsigned", "unsigned.test", k.pods.CertPEM())
	misnamed, misnamedLeaf := k.reencryptRouteFor(t, "misnamed", "misnamed.test", k.pods.CertPEM())
	pods := []pod{
		pod(testkit.StartTLSBackend(t, "127.0.7.20", "pod-good", k.pods.Leaf(t, "good.test.svc"))),
		pod(testkit.StartTLSBackend(t, "127.0.7.21", "pod-unsigned", rogue.Leaf(t, "unsigned.test.svc"))),
		pod(testkit.StartTLSBackend(t, "127.0.7.22", "pod-misnamed", k.pods.Leaf(t, "other.test.svc"))),
	}
	src.Set(withTLSRoutes(base, []dcm.Route{good, unsigned, misnamed}, pods))
	servedWith(s, "good.test", "pod-good", k.front, goodLeaf)
	for _, bad := range []struct {
		host string
		leaf testkit.Leaf
	}{{"unsigned.test", unsignedLeaf}, {"misnamed.test", misnamedLeaf}} {
		s.Eventually(bad.host+" answers 503", 5*time.Second, func() error {
			code, body, got, err := testkit.HTTPSGet(s.HTTPSAddr, bad.host, "/", k.front.Pool())
			switch {
			case err != nil:
				return err
			case got.SerialNumber.Cmp(bad.leaf.Cert.SerialNumber) != 0:
				return fmt.Errorf("certificate serial %s, not the route's", got.SerialNumber)
			case code != http.StatusServiceUnavailable:
				return fmt.Errorf("HTTP %d %q", code, body)
			}
			return nil
		})
	}
	if n := s.Reloads(); n != 0 {
		t.Errorf("%v reloads", n)
	}
}

// TestReencryptCARotation: the destination CA of a live reencrypt route
// changes (to a bundle of the old CA and a new one, as a CA rotation
// starts) under a concurrent HTTPS load: new servers with the new CA file
// are added next to the old ones before those leave, so no request fails;
// the old CA file goes once its last server is deleted; the worker and
// the reload count stay.
func TestReencryptCARotation(t *testing.T) {
	k := newTLSPKI(t)
	next := testkit.NewCA(t)
	app := startPod(t, "127.0.7.1", "app")
	base := desiredApp(app.endpoint(dcm.StateReady))
	src := harness.NewStaticSource(base)
	s := harness.Start(t, harness.Options{Source: src, Certs: k.store, CAs: k.store})
	pid, reloads := s.WorkerPID(), s.Reloads()
	pods := []pod{
		pod(testkit.StartTLSBackend(t, "127.0.7.30", "shop", k.pods.Leaf(t, "shop.test.svc"))),
		pod(testkit.StartTLSBackend(t, "127.0.7.31", "shop", k.pods.Leaf(t, "shop.test.svc"))),
	}
	shop, leaf := k.reencryptRouteFor(t, "shop", "shop.test", k.pods.CertPEM())
	withShop := func(r dcm.Route) dcm.Desired {
		d := withRoutes(base, []dcm.Route{r}, pods[:1])
		for i, sb := range d.Backends {
			b := *sb // a copy: d shares its backends
			if b.Name == r.BackendName() {
				b.Endpoints = append(b.Endpoints, dcm.Endpoint{Name: "shop-2:https", Addr: pods[1].Addr, Port: pods[1].Port, Weight: 1, State: dcm.StateReady, Pod: "shop-2"})
			}
			nb := b.WithUpstreamNames()
			d.Backends[i] = &nb
		}
		return d
	}
	src.Set(withShop(shop))
	servedWith(s, "shop.test", "shop", k.front, leaf)
	oldFile := haproxy.CAFile(shop.Upstream.Version)

	load := startHTTPSLoad(s, "shop.test", k.front, 3)
	load.answersMore(t, 30)
	rotated := shop
	rotated.Upstream = &dcm.UpstreamTLS{CA: shop.Upstream.CA, ServerName: shop.Upstream.ServerName,
		Version: k.store.Put(shop.Upstream.CA, append(k.pods.CertPEM(), next.CertPEM()...))}
	newFile := haproxy.CAFile(rotated.Upstream.Version)
	tag := "." + dcm.UpstreamTag(rotated.Upstream)
	src.Set(withShop(rotated))
	s.Eventually("only servers with the new CA, and only its file", 10*time.Second, func() error {
		b := s.Backend(rotated.BackendName())
		if len(b.Servers) != 2 {
			return fmt.Errorf("%d servers", len(b.Servers))
		}
		for _, srv := range b.Servers {
			if !strings.HasSuffix(srv.Name, tag) || srv.Upstream == nil || *srv.Upstream != *rotated.Upstream {
				return fmt.Errorf("server %s with %+v", srv.Name, srv.Upstream)
			}
		}
		if got := caFiles(t, s); !slices.Equal(got, []string{newFile}) {
			return fmt.Errorf("CA files %q, want %q (was %q)", got, newFile, oldFile)
		}
		return nil
	})
	load.answersMore(t, 30)
	ok, fail, _ := load.finish()
	t.Logf("CA rotated under load: %d requests, %d failed", ok+len(fail), len(fail))
	if len(fail) > 0 || ok == 0 {
		t.Fatalf("%d requests failed during the rotation (%d ok): %q", len(fail), ok, fail[:min(len(fail), 5)])
	}
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("worker %d → %d, reloads %v → %v", pid, s.WorkerPID(), reloads, s.Reloads())
	}
	if got := s.Counter("dcm_runtime_errors_total"); got != 0 {
		t.Errorf("%v runtime errors", got)
	}
	filesEqualRuntime(t, s)
}

// TestIngressReencrypt: the Kubernetes path of a reencrypt route, against
// the demo cluster — a kubernetes.io/tls Secret holding the host's
// certificate and, in ca.crt, the CA of the pods (as cert-manager writes
// it), and an Ingress whose spec.tls names it and whose dcm.io/backend-ca
// names it too: the host is served over TLS with the Secret's certificate
// and HAProxy reaches the Service's pod over TLS, verifying its
// certificate for secure.demo.svc (the default server name). A new ca.crt
// is picked up at runtime; a ca.crt that is not a CA is rejected (metric)
// and the last valid one stays. No reload, the same worker throughout.
func TestIngressReencrypt(t *testing.T) {
	k := newTLSPKI(t)
	next := testkit.NewCA(t)
	s := harness.Start(t, harness.Options{})
	s.DemoServes("web.demo.localhost", "/", "demo", "web", 2)
	pid, reloads := s.WorkerPID(), s.Reloads()
	ctx := t.Context()
	const host = "secure.demo.localhost"
	p := testkit.StartTLSBackend(t, "127.0.7.40", "secure-pod", k.pods.Leaf(t, "secure.demo.svc"))
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "secure"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443}}}}
	if _, err := s.Client.CoreV1().Services("demo").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "demo", Name: "secure-1", Labels: map[string]string{discoveryv1.LabelServiceName: "secure"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(p.Port))}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{p.Addr}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "demo", Name: "secure-pod"}}},
	}
	if _, err := s.Client.DiscoveryV1().EndpointSlices("demo").Create(ctx, sl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	leaf := k.front.Leaf(t, host)
	secret := func(ca []byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "secure-tls"}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{corev1.TLSCertKey: leaf.CertPEM, corev1.TLSPrivateKeyKey: leaf.KeyPEM, kube.CAKey: ca}}
	}
	secrets := s.Client.CoreV1().Secrets("demo")
	if _, err := secrets.Create(ctx, secret(k.pods.CertPEM()), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ing := ingress("secure", host, "/")
	ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service = &networkingv1.IngressServiceBackend{Name: "secure", Port: networkingv1.ServiceBackendPort{Name: "https"}}
	ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{host}, SecretName: "secure-tls"}}
	ing.Annotations = map[string]string{kube.AnnotationBackendCA: "secure-tls"}
	if _, err := s.Client.NetworkingV1().Ingresses("demo").Create(ctx, ing, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	name := dcm.BackendName(dcm.KindReencrypt, "demo", "secure")
	servedWith(s, host, "secure-pod", k.front, leaf)
	b := s.Backend(name)
	if !strings.HasPrefix(b.Slot, "be_reencrypt:_pool:") || len(b.Servers) != 1 || b.Servers[0].Upstream == nil ||
		b.Servers[0].Upstream.ServerName != "secure.demo.svc" || b.Servers[0].Upstream.CA != "secret:demo/secure-tls" {
		t.Fatalf("backend %s slot %q servers %+v", b.Name, b.Slot, b.Servers)
	}
	first := b.Servers[0].Upstream.Version

	// A new ca.crt (the old CA and the next one): new servers, no reload.
	if _, err := secrets.Update(ctx, secret(append(k.pods.CertPEM(), next.CertPEM()...)), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Eventually("the new CA in use", 10*time.Second, func() error {
		b := s.Backend(name)
		if len(b.Servers) != 1 || b.Servers[0].Upstream == nil || b.Servers[0].Upstream.Version == first {
			return fmt.Errorf("servers %+v", b.Servers)
		}
		return nil
	})
	servedWith(s, host, "secure-pod", k.front, leaf)
	second := s.Backend(name).Servers[0].Upstream.Version

	// A ca.crt that is no CA: rejected, the last valid CA stays.
	rejected := s.Counter("dcm_rejected_objects_total", "reason", dcm.RejectInvalidValue)
	if _, err := secrets.Update(ctx, secret(k.pods.Leaf(t, "x.demo.svc").CertPEM), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Eventually("the leaf as CA rejected", 10*time.Second, func() error {
		if got := s.Counter("dcm_rejected_objects_total", "reason", dcm.RejectInvalidValue); got != rejected+1 {
			return fmt.Errorf("%v rejections", got)
		}
		return nil
	})
	servedWith(s, host, "secure-pod", k.front, leaf)
	if b := s.Backend(name); len(b.Servers) != 1 || b.Servers[0].Upstream.Version != second {
		t.Errorf("after a bad CA: servers %+v, want the CA %s kept", b.Servers, second)
	}
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("worker %d → %d, reloads %v → %v", pid, s.WorkerPID(), reloads, s.Reloads())
	}
}
