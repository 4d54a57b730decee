package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dcm-router/dcm/dcm/kube"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/e2e/kapitest"
	"github.com/dcm-router/dcm/internal/testkit"
	"github.com/dcm-router/dcm/system"
)

// TestOpenShiftRouteHTTPOptions: against the real kube-apiserver, an edge
// Route annotated with OpenShift's timeout and hsts_header: with a server
// timeout of 1s by flag, a 1.5s request passes under the Route's 3s; the
// header is on HTTPS responses only (the Route allows plain HTTP); both
// annotations changed, the request gets 504 and the header its new value.
// The same worker, no reload.
func TestOpenShiftRouteHTTPOptions(t *testing.T) {
	installRouteCRD(t)
	t.Cleanup(func() { removeRouteCRD(t) })
	ns := kapitest.Namespace(t, env.admin)
	ctx := context.Background()
	host := "opts." + ns + ".test"
	front := testkit.NewCA(t)
	pod := startPod(t, 252, 9, 0, "opts-pod")
	createService(t, ns, "opts", nil)
	sl := handSlice(ns, []testkit.Backend{pod})
	sl.Labels[discoveryv1.LabelServiceName] = "opts"
	sl.Ports[0].Port = &[]int32{int32(pod.Port)}[0]
	if _, err := env.admin.DiscoveryV1().EndpointSlices(ns).Create(ctx, sl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	leaf := front.Leaf(t, host)
	u := osRoute(ns, "opts", host, "", "opts", 100, nil)
	u.Object["spec"].(map[string]any)["port"] = map[string]any{"targetPort": "http"}
	u.Object["spec"].(map[string]any)["tls"] = map[string]any{"termination": "edge", "insecureEdgeTerminationPolicy": "Allow",
		"certificate": string(leaf.CertPEM), "key": string(leaf.KeyPEM)}
	u.SetAnnotations(map[string]string{kube.AnnotationRouteTimeout: "3s", kube.AnnotationRouteHSTS: "max-age=100;preload"})
	routes := adminDynamic(t).Resource(kube.RouteGVR).Namespace(ns)
	if _, err := routes.Create(ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	o := dcmOptions(t, ns)
	base := o.Config
	o.Config = func(c *system.Config) { base(c); c.Timeouts.Server = time.Second }
	s := harness.Start(t, o)

	expect := func(what string, scheme string, ms, code int, hsts string) {
		t.Helper()
		s.Eventually(what, 15*time.Second, func() error {
			got, h, err := optsGet(s, scheme, host, ms, front)
			if err != nil {
				return err
			}
			if got != code || h != hsts {
				return fmt.Errorf("HTTP %d, Strict-Transport-Security %q", got, h)
			}
			return nil
		})
	}
	expect("a 1.5s request under the Route's 3s, with its HSTS", "https", 1500, 200, "max-age=100;preload")
	admitted(t, routes, "opts", "True", "")
	pid, reloads := s.WorkerPID(), s.Reloads()
	expect("no HSTS over plain HTTP", "http", 0, 200, "")

	cur, err := routes.Get(ctx, "opts", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.SetAnnotations(map[string]string{kube.AnnotationRouteTimeout: "1200ms", kube.AnnotationRouteHSTS: "max-age=5; includeSubDomains"})
	if _, err := routes.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("the new HSTS", "https", 0, 200, "max-age=5;includeSubDomains")
	expect("a 1.5s request cut under the Route's 1.2s", "https", 1500, 504, "")
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("worker %d → %d, reloads %v → %v", pid, s.WorkerPID(), reloads, s.Reloads())
	}
}

// optsGet is one request for host through dcm's HTTP or HTTPS frontend,
// slowed by the pod for ms: its status and Strict-Transport-Security.
func optsGet(s *harness.Stack, scheme, host string, ms int, ca *testkit.CA) (int, string, error) {
	addr := s.HTTPAddr
	if scheme == "https" {
		addr = s.HTTPSAddr
	}
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("%s://%s/?ms=%d", scheme, addr, ms), nil)
	if err != nil {
		return 0, "", err
	}
	req.Host = host
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{ServerName: host, RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}}}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Strict-Transport-Security"), nil
}
