package e2e

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/internal/testkit"
	"github.com/dcm-router/dcm/system"
)

// gatewayBackend is one Gateway route (an HTTPRoute rule on a listener's
// bind) as the Gateway source gives it, served by pods.
func gatewayBackend(name, bind string, hosts []string, m dcm.HTTPMatch, f *dcm.HTTPFilters, eps ...dcm.Endpoint) *dcm.DesiredBackend {
	r := dcm.Route{Namespace: "test", Name: name, Source: dcm.SourceHTTPRoute, Object: name, Kind: dcm.KindHTTP,
		Services: []dcm.ServiceRef{{Name: name, Port: "80", Weight: 1}}, Balance: dcm.BalanceRoundRobin,
		Gateway: &dcm.GatewayRoute{Gateway: "test/gw", Listener: "l", Bind: bind, Hostnames: hosts,
			Matches: []dcm.HTTPMatch{m}, Filters: f, Rank: "0"}}
	b := dcm.DesiredBackend{Name: r.BackendName(), Route: r, Endpoints: eps}.WithUpstreamNames()
	return &b
}

func sortedDesired(bs ...*dcm.DesiredBackend) dcm.Desired {
	slices.SortFunc(bs, func(a, b *dcm.DesiredBackend) int { return strings.Compare(a.Name, b.Name) })
	return dcm.Desired{Backends: bs}
}

// gwGet sends one request to a Gateway bind (https: by SNI host).
func gwGet(url, host string, hdr map[string]string) (int, string, http.Header, error) {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		return 0, "", nil, err
	}
	req.Host = host
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	tr := &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{ServerName: host, InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}}
	c := &http.Client{Timeout: 5 * time.Second, Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header, nil
}

// TestGatewayRoutesServedAtRuntime runs dcm as it ships with
// --gateway-addresses and Gateway ports: HAProxy binds the Gateway
// listeners at start; Gateway routes (a source's, as the Gateway source
// gives them) come, change their matches, filters and weights, and go,
// each served on its bind and never on the Ingress bind (nor an Ingress
// on the Gateway bind), an HTTPS listener with its certificate by SNI;
// the worker and the reload count never change.
func TestGatewayRoutesServedAtRuntime(t *testing.T) {
	const addr = "127.0.20.200"
	bind, tlsBind := addr+":18080", addr+":18443"
	ca := testkit.NewCA(t)
	store := &testkit.CertStore{}
	leaf := ca.Leaf(t, "secure.gw.test")
	version := store.Put("test/gw-tls", leaf.PEM())
	a, b, c := startPod(t, "127.0.120.1", "gw-a"), startPod(t, "127.0.120.2", "gw-b"), startPod(t, "127.0.120.3", "gw-c")
	app := startPod(t, "127.0.120.4", "app")
	root := gatewayBackend("gw-root", bind, nil, dcm.HTTPMatch{PathType: dcm.GatewayPathPrefix, Path: "/"}, nil, a.endpoint(dcm.StateReady))
	src := harness.NewStaticSource(sortedDesired(desiredApp(app.endpoint(dcm.StateReady)).Backends[0], root))
	s := harness.Start(t, harness.Options{Source: src, Certs: store, Config: func(c *system.Config) {
		c.GatewayAddresses, c.GatewayHTTPPorts, c.GatewayHTTPSPorts = []string{addr}, []int{18080}, []int{18443}
	}})
	pid, reloads := s.WorkerPID(), s.Reloads()
	expect := func(what, url, host string, hdr map[string]string, code int, body string) {
		t.Helper()
		s.Eventually(what, 10*time.Second, func() error {
			got, text, _, err := gwGet(url, host, hdr)
			if err != nil {
				return err
			}
			if got != code || !strings.HasPrefix(text, body) {
				return fmt.Errorf("%s Host %s: %d %q, want %d %q", url, host, got, text, code, body)
			}
			return nil
		})
	}
	expect("a Gateway route at start", "http://"+bind+"/x", "any.test", nil, 200, "gw-a")
	expect("no Ingress on the Gateway bind", "http://"+bind+"/", "app.test", nil, 200, "gw-a")
	expect("no Gateway route on the Ingress bind", "http://"+s.HTTPAddr+"/", "any.test", nil, 503, "")
	expect("the Ingress on its bind", "http://"+s.HTTPAddr+"/", "app.test", nil, 200, "app")

	// A header match on a host of its own, a redirect, an HTTPS listener's
	// route with its certificate: all at runtime.
	hm := dcm.HTTPMatch{PathType: dcm.GatewayPathPrefix, Path: "/", Headers: []dcm.ValueMatch{{Name: "X-Canary", Value: "yes"}}}
	canary := gatewayBackend("gw-canary", bind, []string{"shop.gw.test"}, hm, nil, b.endpoint(dcm.StateReady))
	redirect := gatewayBackend("gw-redirect", bind, []string{"old.gw.test"}, dcm.HTTPMatch{PathType: dcm.GatewayPathPrefix, Path: "/"},
		&dcm.HTTPFilters{Redirect: &dcm.HTTPRedirect{Hostname: "new.gw.test", StatusCode: 301}})
	secure := gatewayBackend("gw-secure", tlsBind, []string{"secure.gw.test"}, dcm.HTTPMatch{PathType: dcm.GatewayPathPrefix, Path: "/"}, nil, c.endpoint(dcm.StateReady))
	secure.Route.Kind, secure.Name = dcm.KindEdge, dcm.BackendName(dcm.KindEdge, "test", "gw-secure")
	secure.Route.TLS = &dcm.TLSRef{Secret: "test/gw-tls", Version: version}
	src.Set(sortedDesired(desiredApp(app.endpoint(dcm.StateReady)).Backends[0], root, canary, redirect, secure))
	expect("the header match", "http://"+bind+"/", "shop.gw.test", map[string]string{"X-Canary": "yes"}, 200, "gw-b")
	expect("the header match's host falls back to any host", "http://"+bind+"/", "shop.gw.test", nil, 200, "gw-a")
	expect("the redirect", "http://"+bind+"/p", "old.gw.test", nil, 301, "")
	expect("the HTTPS listener", "https://"+tlsBind+"/s", "secure.gw.test", nil, 200, "gw-c")
	code, _, h, err := gwGet("http://"+bind+"/p?q=1", "old.gw.test", nil)
	if err != nil || code != 301 || h.Get("Location") != "http://new.gw.test:18080/p?q=1" {
		t.Errorf("redirect: %d %q %v", code, h.Get("Location"), err)
	}
	leafServed, err := testkit.ServedLeaf(tlsBind, "secure.gw.test", ca.Pool())
	if err != nil || leafServed.SerialNumber.Cmp(leaf.Cert.SerialNumber) != 0 {
		t.Errorf("the listener's certificate is not served by SNI: %v", err)
	}

	// The any-host route goes, the canary takes pod a too with weight 0
	// for pod b: what matches nothing is 404.
	canary = gatewayBackend("gw-canary", bind, []string{"shop.gw.test"}, hm, nil, a.endpoint(dcm.StateReady), b.endpoint(dcm.StateReady))
	canary.Endpoints[1].Weight = 0 // endpoints sorted by name, as sources give them
	src.Set(sortedDesired(desiredApp(app.endpoint(dcm.StateReady)).Backends[0], canary, redirect, secure))
	expect("nothing matches", "http://"+bind+"/x", "any.test", nil, 404, "")
	expect("the weight moved", "http://"+bind+"/", "shop.gw.test", map[string]string{"X-Canary": "yes"}, 200, "gw-a")
	for range 6 {
		if code, body, _, err := gwGet("http://"+bind+"/", "shop.gw.test", map[string]string{"X-Canary": "yes"}); err != nil || code != 200 || body != "gw-a" {
			t.Errorf("weight 0 for gw-b: %d %q %v", code, body, err)
		}
	}
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("reloaded: worker %d (was %d), %v reloads (was %v)", s.WorkerPID(), pid, s.Reloads(), reloads)
	}
}
