package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/e2e/harness"
)

// headerPod answers every request with the request's headers as JSON and
// sets two response headers of its own, X-Powered-By and X-Debug, for the
// response actions to replace or delete.
func headerPod(t *testing.T, ip string) pod {
	t.Helper()
	l, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Powered-By", "pod")
		w.Header().Set("X-Debug", "secret")
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(r.Header)
	}), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return pod{Name: "hdr", Addr: ip, Port: l.Addr().(*net.TCPAddr).Port}
}

// headerExchange is what a request with the client's headers sees: the
// headers the pod got and the headers the client got back.
type headerExchange struct {
	pod    http.Header
	client http.Header
}

func exchange(s *harness.Stack, host string, sent map[string]string) (headerExchange, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+s.HTTPAddr+"/", nil)
	if err != nil {
		return headerExchange{}, err
	}
	req.Host = host
	for k, v := range sent {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return headerExchange{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return headerExchange{}, fmt.Errorf("status %d", resp.StatusCode)
	}
	var got http.Header
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		return headerExchange{}, err
	}
	return headerExchange{pod: got, client: resp.Header}, nil
}

// TestHeaderActions: a route's header actions set and delete request
// headers as the pod sees them and response headers as the client sees
// them, including a value taken from a request header; changing them, to
// header names HAProxy has never seen, is a map replace: same worker, no
// reload. A route without actions is untouched.
func TestHeaderActions(t *testing.T) {
	app := startPod(t, "127.0.16.1", "app")
	hp := headerPod(t, "127.0.16.2")
	base := desiredApp(app.endpoint(dcm.StateReady))
	src := harness.NewStaticSource(base)
	s := harness.Start(t, harness.Options{Source: src})
	pid, reloads := s.WorkerPID(), s.Reloads()

	route := func(h *dcm.HeaderActions) dcm.Route {
		return dcm.Route{Namespace: "test", Name: "hdr", Source: dcm.SourceRoute, Object: "hdr", Kind: dcm.KindHTTP,
			Host: "hdr.test", Path: "/", PathType: dcm.PathPrefix, Balance: dcm.BalanceRoundRobin, Headers: h}
	}
	sent := map[string]string{"X-Client-Secret": "s3cr3t", "X-Keep": "kept", "X-Tenant": "ACME"}
	steps := []struct {
		name    string
		actions *dcm.HeaderActions
		check   func(headerExchange) error
	}{
		{"none", nil, func(e headerExchange) error {
			return all(has(e.pod, "X-Client-Secret", "s3cr3t"), has(e.client, "X-Powered-By", "pod"), has(e.client, "X-Debug", "secret"))
		}},
		{"set and delete", &dcm.HeaderActions{
			Request: []dcm.HeaderAction{
				{Name: "X-Forwarded-App", Type: dcm.HeaderSet, Value: "web; v=1 #'\"%%"},
				{Name: "X-Client-Secret", Type: dcm.HeaderDelete},
				{Name: "X-Tenant-Lower", Type: dcm.HeaderSet, Value: "t=%[req.hdr(X-Tenant),lower]"},
			},
			Response: []dcm.HeaderAction{
				{Name: "X-Frame-Options", Type: dcm.HeaderSet, Value: "DENY"},
				{Name: "X-Powered-By", Type: dcm.HeaderSet, Value: "dcm"},
				{Name: "X-Debug", Type: dcm.HeaderDelete},
			},
		}, func(e headerExchange) error {
			return all(has(e.pod, "X-Forwarded-App", `web; v=1 #'"%`), has(e.pod, "X-Client-Secret", ""),
				has(e.pod, "X-Tenant-Lower", "t=acme"), has(e.pod, "X-Keep", "kept"),
				has(e.client, "X-Frame-Options", "DENY"), has(e.client, "X-Powered-By", "dcm"), has(e.client, "X-Debug", ""))
		}},
		{"new names", &dcm.HeaderActions{
			Request:  []dcm.HeaderAction{{Name: "X-Never-Seen-Before-1", Type: dcm.HeaderSet, Value: "one"}, {Name: "X-Keep", Type: dcm.HeaderDelete}},
			Response: []dcm.HeaderAction{{Name: "Content-Security-Policy", Type: dcm.HeaderSet, Value: "default-src 'self'; img-src *"}},
		}, func(e headerExchange) error {
			return all(has(e.pod, "X-Never-Seen-Before-1", "one"), has(e.pod, "X-Keep", ""), has(e.pod, "X-Client-Secret", "s3cr3t"),
				has(e.pod, "X-Forwarded-App", ""), has(e.client, "Content-Security-Policy", "default-src 'self'; img-src *"),
				has(e.client, "X-Powered-By", "pod"), has(e.client, "X-Debug", "secret"), has(e.client, "X-Frame-Options", ""))
		}},
		{"removed", nil, func(e headerExchange) error {
			return all(has(e.pod, "X-Never-Seen-Before-1", ""), has(e.pod, "X-Keep", "kept"), has(e.client, "Content-Security-Policy", ""))
		}},
	}
	for _, step := range steps {
		src.Set(withRoutes(base, []dcm.Route{route(step.actions)}, []pod{hp}))
		s.Eventually(step.name, 5*time.Second, func() error {
			e, err := exchange(s, "hdr.test", sent)
			if err != nil {
				return err
			}
			return step.check(e)
		})
		answers(s, "app.test", "/", "app")
		if got := s.WorkerPID(); got != pid {
			t.Fatalf("%s: worker %d, was %d", step.name, got, pid)
		}
		if got := s.Reloads(); got != reloads {
			t.Fatalf("%s: %v reloads, was %v", step.name, got, reloads)
		}
		filesEqualRuntime(t, s)
	}
}

// has checks one header's value; "" means absent.
func has(h http.Header, name, want string) error {
	vs := h.Values(name)
	switch {
	case want == "" && len(vs) == 0:
		return nil
	case want == "":
		return fmt.Errorf("%s: %q, want none", name, vs)
	case len(vs) != 1 || vs[0] != want:
		return fmt.Errorf("%s: %q, want %q", name, vs, want)
	}
	return nil
}

func all(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
