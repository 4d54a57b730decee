package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/e2e/kapitest"
	"github.com/dcm-router/dcm/internal/testkit"
	"github.com/dcm-router/dcm/system"
)

// fleetAPI calls a replica's portal with a token and decodes the answer.
func fleetAPI(t *testing.T, method, url, token, body string, into any) int {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if into != nil && resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(b, into); err != nil {
			t.Fatalf("%s %s: %v: %s", method, url, err, b)
		}
	}
	return resp.StatusCode
}

// bindPortalRole makes ServiceAccount ns/sa with the portal role (none: "").
func bindPortalRole(t *testing.T, ns, sa, role string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := env.admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if role != "" {
		rb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + sa},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: sa}}}
		if _, err := env.admin.RbacV1().ClusterRoleBindings().Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = env.admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), rb.Name, metav1.DeleteOptions{})
		})
	}
	return serviceAccountConfig(t, ns, sa).BearerToken
}

// TestFleetOfTwoReplicas: two dcm replicas, each with its own HAProxy,
// watch one real API server and know each other by --peers. Either's
// GET /api/v1/fleet lists both, asked with the caller's Kubernetes token
// (each replica checks it with TokenReview and SubjectAccessReview), each
// with its own worker PID and the same applied state. A scale made on one
// replica is predicted by both first, and each reports its own verdict:
// actual = predicted on both, and both HAProxies serve the new pods.
func TestFleetOfTwoReplicas(t *testing.T) {
	ctx := context.Background()
	ns := kapitest.Namespace(t, env.admin)
	host := "fleet." + ns + ".test"
	createApp(t, ns, "fleet", 1, host, "/")
	if err := kapitest.Apply(ctx, env.admin, deployFile("portal-rbac.yaml")); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	viewer := bindPortalRole(t, ns, "viewer", "dcm-viewer")
	operator := bindPortalRole(t, ns, "operator", "dcm-operator")

	addrA, addrB := testkit.FreeAddr(t), testkit.FreeAddr(t)
	peers := []string{"http://" + addrA, "http://" + addrB}
	replica := func(listen string) *harness.Stack {
		o := dcmOptions(t, ns)
		base := o.Config
		o.Config = func(c *system.Config) { base(c); c.Listen, c.Peers = listen, peers }
		return harness.Start(t, o)
	}
	a, b := replica(addrA), replica(addrB)
	a.Serves(host, "/", 1, readyPods(ns, "fleet"))
	b.Serves(host, "/", 1, readyPods(ns, "fleet"))

	var f dcm.Fleet
	a.Eventually("a's fleet view lists both replicas in step", 10*time.Second, func() error {
		if code := fleetAPI(t, "GET", a.PortalURL+"/api/v1/fleet", viewer, "", &f); code != 200 {
			return fmt.Errorf("HTTP %d", code)
		}
		if !f.InStep || len(f.Replicas) != 2 {
			return fmt.Errorf("%+v", f)
		}
		return nil
	})
	for i, s := range []*harness.Stack{a, b} {
		r := f.Replicas[i]
		if r.Name != s.System.PortalAddr() || r.Self != (i == 0) || r.Status.HAProxy.PID != s.WorkerPID() || !r.Latest {
			t.Errorf("replica %d is %+v (status %+v), want %s, worker %d, latest", i, r, r.Status, s.System.PortalAddr(), s.WorkerPID())
		}
	}
	if f.Replicas[0].Status.Applied != f.Replicas[1].Status.Applied || f.Replicas[0].Status.Applied == "" {
		t.Errorf("the replicas serve the same objects but their applied digests are %q and %q", f.Replicas[0].Status.Applied, f.Replicas[1].Status.Applied)
	}
	// A viewer may read the fleet but not make a replica expect a change.
	if code := fleetAPI(t, "POST", b.PortalURL+"/api/v1/expect", viewer, `{"namespace":"`+ns+`","kind":"Deployment","name":"fleet","replicas":2}`, nil); code != 403 {
		t.Errorf("a viewer's POST /api/v1/expect: HTTP %d, want 403", code)
	}

	var scaled struct {
		Fleet []struct {
			Name  string `json:"name"`
			Self  bool   `json:"self"`
			Seq   uint64 `json:"seq"`
			Error string `json:"error"`
		} `json:"fleet"`
	}
	if code := fleetAPI(t, "POST", a.PortalURL+"/api/v1/scale", operator, `{"namespace":"`+ns+`","kind":"Deployment","name":"fleet","replicas":2}`, &scaled); code != 202 {
		t.Fatalf("scale: HTTP %d", code)
	}
	if len(scaled.Fleet) != 2 || scaled.Fleet[1].Name != addrB || scaled.Fleet[1].Error != "" {
		t.Fatalf("the scale was followed by %+v, want a and %s", scaled.Fleet, addrB)
	}
	for _, r := range scaled.Fleet {
		q := fmt.Sprintf("/api/v1/fleet/events?since=%d", r.Seq)
		if !r.Self {
			q += "&replica=" + r.Name
		}
		a.Eventually("the prediction of "+r.Name, 30*time.Second, func() error {
			var page struct{ Events []dcm.Event }
			if code := fleetAPI(t, "GET", a.PortalURL+q, operator, "", &page); code != 200 {
				return fmt.Errorf("HTTP %d", code)
			}
			for _, ev := range page.Events {
				if ev.Type != dcm.EventPrediction {
					continue
				}
				if !ev.Prediction.Match || ev.Prediction.Predicted[fmt.Sprintf("be_http:%s:fleet add-server", ns)] != 1 {
					t.Errorf("%s: %s: %+v", r.Name, ev.Message, ev.Prediction)
				}
				return nil
			}
			return fmt.Errorf("no prediction event among %d", len(page.Events))
		})
	}
	a.Serves(host, "/", 2, readyPods(ns, "fleet"))
	b.Serves(host, "/", 2, readyPods(ns, "fleet"))
	a.Eventually("both replicas in step after the scale", 10*time.Second, func() error {
		if fleetAPI(t, "GET", b.PortalURL+"/api/v1/fleet", viewer, "", &f); !f.InStep {
			return fmt.Errorf("%+v", f)
		}
		return nil
	})
}

// forwardFromPod accepts at the pod address 10.X.254.y:8080 and forwards
// each connection to to (a replica's portal on loopback): the replica as
// the pod network sees it, for EndpointSlices the API server accepts.
func forwardFromPod(t *testing.T, y byte, to string) string {
	t.Helper()
	l := podListener(t, 254, y, 8080)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer in.Close()
				out, err := net.DialTimeout("tcp", to, 5*time.Second)
				if err != nil {
					return
				}
				defer out.Close()
				go func() { _, _ = io.Copy(out, in) }()
				_, _ = io.Copy(in, out)
			}()
		}
	}()
	return l.Addr().(*net.TCPAddr).IP.String()
}

// peerSlice is the EndpointSlice of Service ns/dcm-peers for one replica:
// pod name, its address, the portal's port named api.
func peerSlice(t *testing.T, ns, pod, addr string) {
	t.Helper()
	name, port, ready := "api", int32(8080), true
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dcm-peers-" + pod,
		Labels: map[string]string{discoveryv1.LabelServiceName: "dcm-peers"}},
		AddressType: discoveryv1.AddressTypeIPv4, Ports: []discoveryv1.EndpointPort{{Name: &name, Port: &port}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: &ready},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: pod}}}}
	if _, err := env.admin.DiscoveryV1().EndpointSlices(ns).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestFleetFoundThroughEndpointSlices: with --peer-service, each replica
// finds the others in the real API server's EndpointSlices of the Service
// (read with deploy/'s ServiceAccount), itself by its pod's name
// ($POD_NAME): each lists both replicas once, by pod name, in step. The
// pods' addresses are in the test's pod network, forwarded to the
// replicas' portals on loopback.
func TestFleetFoundThroughEndpointSlices(t *testing.T) {
	ns := kapitest.Namespace(t, env.admin)
	host := "peers." + ns + ".test"
	createApp(t, ns, "peers", 1, host, "/")
	if err := kapitest.Apply(context.Background(), env.admin, deployFile("portal-rbac.yaml")); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	viewer := bindPortalRole(t, ns, "viewer", "dcm-viewer")
	replica := func(pod string) *harness.Stack {
		// Read by New (kube.SelfPod), as a pod's downward API sets it.
		t.Setenv("POD_NAME", pod)
		o := dcmOptions(t, ns)
		base := o.Config
		o.Config = func(c *system.Config) { base(c); c.PeerService = ns + "/dcm-peers:api" }
		return harness.Start(t, o)
	}
	a := replica("replica-a")
	b := replica("replica-b")
	peerSlice(t, ns, "replica-a", forwardFromPod(t, 10, a.System.PortalAddr()))
	peerSlice(t, ns, "replica-b", forwardFromPod(t, 11, b.System.PortalAddr()))
	a.Serves(host, "/", 1, readyPods(ns, "peers"))
	b.Serves(host, "/", 1, readyPods(ns, "peers"))
	for _, s := range []struct {
		stack *harness.Stack
		self  string
	}{{a, "replica-a"}, {b, "replica-b"}} {
		var f dcm.Fleet
		s.stack.Eventually(s.self+"'s fleet view lists both replicas by pod", 15*time.Second, func() error {
			if code := fleetAPI(t, "GET", s.stack.PortalURL+"/api/v1/fleet", viewer, "", &f); code != 200 {
				return fmt.Errorf("HTTP %d", code)
			}
			if !f.InStep || len(f.Replicas) != 2 {
				return fmt.Errorf("%+v", f)
			}
			return nil
		})
		if r := f.Replicas[0]; r.Name != s.self || !r.Self {
			t.Errorf("%s lists itself first as %+v", s.self, r)
		}
		pids := map[string]int{"replica-a": a.WorkerPID(), "replica-b": b.WorkerPID()}
		for _, r := range f.Replicas {
			if r.Status == nil || r.Status.HAProxy.PID != pids[r.Name] {
				t.Errorf("%s lists %+v, want worker %d", s.self, r, pids[r.Name])
			}
		}
	}
}
