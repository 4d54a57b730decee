package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/kube"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/e2e/kapitest"
	"github.com/dcm-router/dcm/internal/testkit"
)

// echoHeadersPod is a pod of the pod network that answers with the
// request's headers as JSON, and sets X-Powered-By and X-Debug on its
// response for the response actions to rewrite.
func echoHeadersPod(t *testing.T, x, y byte) testkit.Backend {
	t.Helper()
	l := podListener(t, x, y, 8080)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Powered-By", "pod")
		w.Header().Set("X-Debug", "secret")
		_ = json.NewEncoder(w).Encode(r.Header)
	}), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return testkit.Backend{Name: "hdr", Addr: env.pods.Addr(x, y).String(), Port: 8080}
}

// headersRoute is a Route of host to the Service manual with header actions.
func headersRoute(ns, name, host string, request, response []any) *unstructured.Unstructured {
	u := osRoute(ns, name, host, "", "manual", 100, nil)
	u.Object["spec"].(map[string]any)["httpHeaders"] = map[string]any{"actions": map[string]any{"request": request, "response": response}}
	return u
}

func hset(name, value string) any {
	return map[string]any{"name": name, "action": map[string]any{"type": "Set", "set": map[string]any{"value": value}}}
}

func hdel(name string) any {
	return map[string]any{"name": name, "action": map[string]any{"type": "Delete"}}
}

// TestRouteHeaderActions: through the real API server and the real
// haproxy, a Route's spec.httpHeaders.actions set and delete request
// headers as the pod sees them and response headers as the client sees
// them; changed to header names HAProxy has never seen, they apply with
// the same worker and no reload. A Route whose actions the CRD accepts but
// dcm does not serve (a Content-Length rewrite) is refused alone, with its
// reason in its status, while the first keeps its actions.
func TestRouteHeaderActions(t *testing.T) {
	ns := kapitest.Namespace(t, env.admin)
	ctx := context.Background()
	installRouteCRD(t)
	t.Cleanup(func() { removeRouteCRD(t) })
	createService(t, ns, "manual", nil)
	pod := echoHeadersPod(t, 250, 16)
	if _, err := env.admin.DiscoveryV1().EndpointSlices(ns).Create(ctx, handSlice(ns, []testkit.Backend{pod}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := startRouteDCM(t, ns, nil)
	routes := adminDynamic(t).Resource(kube.RouteGVR).Namespace(ns)
	rHost := "hdr." + ns + ".test"
	if _, err := routes.Create(ctx, headersRoute(ns, "hdr", rHost,
		[]any{hset("X-Tenant", "t=%[req.hdr(X-Org),lower]"), hdel("X-Client-Secret")},
		[]any{hset("X-Frame-Options", "DENY"), hdel("X-Debug")}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	admitted(t, routes, "hdr", "True", "")
	expect := func(what string, check func(pod, client http.Header) error) {
		t.Helper()
		s.Eventually(what, 15*time.Second, func() error {
			req, err := http.NewRequest(http.MethodGet, "http://"+s.HTTPAddr+"/", nil)
			if err != nil {
				return err
			}
			req.Host = rHost
			req.Header.Set("X-Org", "ACME")
			req.Header.Set("X-Client-Secret", "s3cr3t")
			resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			var seen http.Header
			if err := json.NewDecoder(resp.Body).Decode(&seen); err != nil {
				return fmt.Errorf("status %d: %w", resp.StatusCode, err)
			}
			return check(seen, resp.Header)
		})
	}
	expect("the first actions", func(p, c http.Header) error {
		return allOf(header(p, "X-Tenant", "t=acme"), header(p, "X-Client-Secret", ""),
			header(c, "X-Frame-Options", "DENY"), header(c, "X-Debug", ""), header(c, "X-Powered-By", "pod"))
	})
	pid, reloads := s.WorkerPID(), s.Reloads()

	u, err := routes.Get(ctx, "hdr", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u.Object["spec"].(map[string]any)["httpHeaders"] = map[string]any{"actions": map[string]any{
		"request":  []any{hset("X-Never-Seen-"+ns, "new")},
		"response": []any{hset("Content-Security-Policy", "default-src 'self'; img-src *"), hdel("X-Powered-By")},
	}}
	if _, err := routes.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("the changed actions", func(p, c http.Header) error {
		return allOf(header(p, "X-Never-Seen-"+ns, "new"), header(p, "X-Tenant", ""), header(p, "X-Client-Secret", "s3cr3t"),
			header(c, "Content-Security-Policy", "default-src 'self'; img-src *"), header(c, "X-Powered-By", ""),
			header(c, "X-Debug", "secret"), header(c, "X-Frame-Options", ""))
	})
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Fatalf("worker %d reloads %v, was %d %v", s.WorkerPID(), s.Reloads(), pid, reloads)
	}

	if _, err := routes.Create(ctx, headersRoute(ns, "bad", "bad."+ns+".test", []any{hset("Content-Length", "0")}, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	admitted(t, routes, "bad", "False", dcm.RejectUnsupported)
	if code, _, _ := s.Get("bad."+ns+".test", "/"); code == http.StatusOK {
		t.Error("the refused Route is served")
	}
	expect("the first Route after the refusal", func(p, c http.Header) error {
		return allOf(header(p, "X-Never-Seen-"+ns, "new"), header(c, "X-Powered-By", ""))
	})
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Fatalf("worker %d reloads %v, was %d %v", s.WorkerPID(), s.Reloads(), pid, reloads)
	}
}

func header(h http.Header, name, want string) error {
	vs := h.Values(name)
	if want == "" && len(vs) == 0 || len(vs) == 1 && vs[0] == want {
		return nil
	}
	return fmt.Errorf("%s: %q, want %q", name, vs, want)
}

func allOf(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// TestIngressHeaderAnnotations: an Ingress's dcm.io/response-headers,
// added and changed through the real API server (to a new name and a
// value fetched from the pod's response), reach the client without a
// reload.
func TestIngressHeaderAnnotations(t *testing.T) {
	ns := kapitest.Namespace(t, env.admin)
	host := "web." + ns + ".test"
	createApp(t, ns, "web", 1, host, "/")
	s := harness.Start(t, dcmOptions(t, ns))
	s.Serves(host, "/", 1, readyPods(ns, "web"))
	pid, reloads := s.WorkerPID(), s.Reloads()
	ctx := context.Background()
	annotate := func(v string) {
		t.Helper()
		ing, err := env.admin.NetworkingV1().Ingresses(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ing.Annotations = map[string]string{kube.AnnotationResponseHeaders: v}
		if _, err := env.admin.NetworkingV1().Ingresses(ns).Update(ctx, ing, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	expect := func(name, want string) {
		t.Helper()
		s.Eventually(name+": "+want, 15*time.Second, func() error {
			req, err := http.NewRequest(http.MethodGet, "http://"+s.HTTPAddr+"/", nil)
			if err != nil {
				return err
			}
			req.Host = host
			resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
			if err != nil {
				return err
			}
			resp.Body.Close()
			return header(resp.Header, name, want)
		})
	}
	annotate("X-Frame-Options: DENY\nX-Seen-" + ns + ": 1")
	expect("X-Frame-Options", "DENY")
	expect("X-Seen-"+ns, "1")
	annotate("X-Other-" + ns + ": %[res.hdr(Content-Type),lower]")
	expect("X-Other-"+ns, "text/plain; charset=utf-8")
	expect("X-Frame-Options", "")
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Fatalf("worker %d reloads %v, was %d %v", s.WorkerPID(), s.Reloads(), pid, reloads)
	}
}
