package cluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/kube"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/e2e/kapitest"
	"github.com/dcm-router/dcm/internal/testkit"
)

// startPathPod is a pod at 10.X.x.y that answers with the path and query
// it was sent.
func startPathPod(t *testing.T, x, y byte, name string) testkit.Backend {
	t.Helper()
	l := podListener(t, x, y, 0)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.RequestURI)
	}), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	a := l.Addr().(*net.TCPAddr)
	return testkit.Backend{Name: name, Addr: a.IP.String(), Port: a.Port}
}

// TestOpenShiftRouteRewriteTarget: against the real kube-apiserver, a
// Route for /foo with OpenShift's rewrite-target "/": the pod sees
// /foo/bar as /bar and /foo as /, the query kept. The annotation changed
// to /v2, the pod sees /v2/bar: the same worker, no reload.
func TestOpenShiftRouteRewriteTarget(t *testing.T) {
	installRouteCRD(t)
	t.Cleanup(func() { removeRouteCRD(t) })
	ns := kapitest.Namespace(t, env.admin)
	ctx := context.Background()
	host := "rw." + ns + ".test"
	pod := startPathPod(t, 254, 1, "rw-pod")
	createService(t, ns, "rw", nil)
	sl := handSlice(ns, []testkit.Backend{pod})
	sl.Labels[discoveryv1.LabelServiceName] = "rw"
	sl.Ports[0].Port = &[]int32{int32(pod.Port)}[0]
	if _, err := env.admin.DiscoveryV1().EndpointSlices(ns).Create(ctx, sl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	u := osRoute(ns, "rw", host, "/foo", "rw", 100, nil)
	u.Object["spec"].(map[string]any)["port"] = map[string]any{"targetPort": "http"}
	u.SetAnnotations(map[string]string{kube.AnnotationRouteRewriteTarget: "/"})
	routes := adminDynamic(t).Resource(kube.RouteGVR).Namespace(ns)
	if _, err := routes.Create(ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := harness.Start(t, dcmOptions(t, ns))
	expect := func(path, want string) {
		t.Helper()
		s.Eventually(path+" reaches the pod as "+want, 15*time.Second, func() error {
			code, body, err := pathGet(s, host, path)
			if err != nil {
				return err
			}
			if code != 200 || body != want {
				return fmt.Errorf("HTTP %d, the pod saw %q", code, body)
			}
			return nil
		})
	}
	expect("/foo/bar?x=1", "/bar?x=1")
	expect("/foo", "/")
	admitted(t, routes, "rw", "True", "")
	pid, reloads := s.WorkerPID(), s.Reloads()

	cur, err := routes.Get(ctx, "rw", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.SetAnnotations(map[string]string{kube.AnnotationRouteRewriteTarget: "/v2"})
	if _, err := routes.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("/foo/bar", "/v2/bar")
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("worker %d → %d, reloads %v → %v", pid, s.WorkerPID(), reloads, s.Reloads())
	}
}

// TestOpenShiftRouteServerKnobs: against the real kube-apiserver, a
// Route with OpenShift's pod-concurrent-connections and
// haproxy.health.check.interval: its server carries maxconn 2 and is
// named after its 2s interval. Both annotations changed under a load, the
// server follows the new limit and is replaced by one named after the new
// interval, the old one deleted once idle: no failed request, the same
// worker, no reload.
func TestOpenShiftRouteServerKnobs(t *testing.T) {
	installRouteCRD(t)
	t.Cleanup(func() { removeRouteCRD(t) })
	ns := kapitest.Namespace(t, env.admin)
	ctx := context.Background()
	host := "knobs." + ns + ".test"
	pod := startPod(t, 254, 2, 0, "knobs-pod")
	createService(t, ns, "knobs", nil)
	sl := handSlice(ns, []testkit.Backend{pod})
	sl.Labels[discoveryv1.LabelServiceName] = "knobs"
	sl.Ports[0].Port = &[]int32{int32(pod.Port)}[0]
	if _, err := env.admin.DiscoveryV1().EndpointSlices(ns).Create(ctx, sl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	u := osRoute(ns, "knobs", host, "", "knobs", 100, nil)
	u.Object["spec"].(map[string]any)["port"] = map[string]any{"targetPort": "http"}
	u.SetAnnotations(map[string]string{kube.AnnotationRouteMaxConn: "2", kube.AnnotationRouteCheckInterval: "2s"})
	routes := adminDynamic(t).Resource(kube.RouteGVR).Namespace(ns)
	if _, err := routes.Create(ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := harness.Start(t, dcmOptions(t, ns))
	backend := "be_http:" + ns + ":route_knobs"
	serving := func(suffix string, maxconn int) func() error {
		return func() error {
			live := s.Backend(backend).Servers
			if len(live) != 1 || !strings.HasSuffix(live[0].Name, suffix) || live[0].MaxConn != maxconn || live[0].State != dcm.StateReady {
				return fmt.Errorf("servers %+v", live)
			}
			if code, body, err := s.Get(host, "/"); err != nil || code != 200 || body != "knobs-pod" {
				return fmt.Errorf("HTTP %d %q %v", code, body, err)
			}
			return nil
		}
	}
	s.Eventually("one server, maxconn 2, named after 2s", 15*time.Second, serving(".i2000", 2))
	admitted(t, routes, "knobs", "True", "")
	pid, reloads := s.WorkerPID(), s.Reloads()

	load := s.StartLoad(host, "/")
	cur, err := routes.Get(ctx, "knobs", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.SetAnnotations(map[string]string{kube.AnnotationRouteMaxConn: "5", kube.AnnotationRouteCheckInterval: "1s"})
	if _, err := routes.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Eventually("one server, maxconn 5, named after 1s, the old one gone", 30*time.Second, serving(".i1000", 5))
	ok, fail, last := load.Finish()
	if fail > 0 || ok == 0 {
		t.Errorf("load through the change: %d ok, %d failed (%s)", ok, fail, last)
	}
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("worker %d → %d, reloads %v → %v", pid, s.WorkerPID(), reloads, s.Reloads())
	}
}

// pathGet is one request for host and path through dcm's HTTP frontend:
// its status and body.
func pathGet(s *harness.Stack, host, path string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+s.HTTPAddr+path, nil)
	if err != nil {
		return 0, "", err
	}
	req.Host = host
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}
