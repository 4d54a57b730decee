package cluster

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/system"
)

// addGateway creates the Gateway name of f's class with an HTTP listener
// on port and the HTTPRoute name for host to the Service web, and
// returns the address dcm gives the Gateway.
func (f gatewayFixture) addGateway(t *testing.T, s *harness.Stack, name, host string, port int32) string {
	t.Helper()
	ctx := context.Background()
	g := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name}, Spec: gwv1.GatewaySpec{GatewayClassName: gwv1.ObjectName(f.class),
		Listeners: []gwv1.Listener{{Name: "http", Port: gwv1.PortNumber(port), Protocol: gwv1.HTTPProtocolType}}}}
	if _, err := f.gw.GatewayV1().Gateways(f.ns).Create(ctx, g, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name}, Spec: gwv1.HTTPRouteSpec{
		CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: gwv1.ObjectName(name)}}},
		Hostnames:       []gwv1.Hostname{gwv1.Hostname(host)},
		Rules:           []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{backendRef("web", 1)}}}}}
	if _, err := f.gw.GatewayV1().HTTPRoutes(f.ns).Create(ctx, r, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var addr string
	s.Eventually("Gateway "+name+" gets an address", 30*time.Second, func() error {
		g, err := f.gw.GatewayV1().Gateways(f.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(g.Status.Addresses) != 1 {
			return fmt.Errorf("addresses %+v", g.Status.Addresses)
		}
		addr = g.Status.Addresses[0].Value
		return nil
	})
	return addr
}

// TestGatewayAddressPool: with --gateway-address-spares=1 HAProxy binds
// the address of the Gateway in use and one spare, not the whole pool. A
// second Gateway takes the spare without a reload; the what-if predicts
// that a route on a third address reloads for gateway-address-pool; the
// third Gateway then reloads HAProxy exactly once for that reason, is
// served on its address and Programmed, and the reload bound a spare
// again, which a fourth Gateway takes without a reload. A fifth finds the
// configured pool used up: AddressNotAssigned, as before.
func TestGatewayAddressPool(t *testing.T) {
	const port = 18098
	f := newGatewayFixture(t, port)
	token := viewerToken(t, f.ns)
	o := dcmOptions(t, f.ns)
	o.Config = func(c *system.Config) {
		c.Namespaces, c.HTTPSRedirectPort = []string{f.ns}, 443
		c.GatewayAddresses, c.GatewayHTTPPorts, c.GatewayHTTPSPorts = []string{"127.0.20.204/30"}, []int{port}, []int{port + 363}
		c.GatewayAddressSpares = 1
	}
	s := harness.Start(t, o)
	expectGateway(s, "127.0.20.204:18098", f.host, "/", http.StatusOK, f.ns, "web")
	if got := s.Engine.Snapshot().GatewayBinds; len(got) != 4 || got[0].Bind != "127.0.20.204:18098" || got[3].Bind != "127.0.20.205:18461" {
		t.Fatalf("bound %+v, want 127.0.20.204 and the spare 127.0.20.205 on both ports", got)
	}
	reloads, byReason := s.Reloads(), s.Counter("dcm_reloads_total", "reason", string(dcm.ReasonGatewayAddressPool))

	host2 := "two." + f.ns + ".test"
	if addr := f.addGateway(t, s, "gw2", host2, port); addr != "127.0.20.205" {
		t.Fatalf("gw2 got %s, want the spare 127.0.20.205", addr)
	}
	expectGateway(s, "127.0.20.205:18098", host2, "/", http.StatusOK, f.ns, "web")
	if s.Reloads() != reloads {
		t.Fatalf("the spare address reloaded: %v → %v", reloads, s.Reloads())
	}

	// The what-if: a route on the next address of the pool.
	b, err := gatewayBackend(s, f.ns)
	if err != nil {
		t.Fatal(err)
	}
	next := b.Route
	g := *next.Gateway
	next.Name, next.Object, g.Gateway, g.Bind = "gw_gw3.0.0123456789abcdef", "gw3", f.ns+"/gw3", "127.0.20.206:18098"
	next.Gateway = &g
	sim := previewPlan(t, s, token, []dcm.WhatIf{{Kind: dcm.WhatIfAddRoute, Route: &next}})
	if len(sim.Errors) > 0 || sim.Reloads != 1 || !slices.Equal(sim.Reasons, []dcm.ReloadReason{dcm.ReasonGatewayAddressPool}) {
		t.Fatalf("preview: errors %v, %d reloads %v; want 1 for %s", sim.Errors, sim.Reloads, sim.Reasons, dcm.ReasonGatewayAddressPool)
	}

	host3 := "three." + f.ns + ".test"
	if addr := f.addGateway(t, s, "gw3", host3, port); addr != "127.0.20.206" {
		t.Fatalf("gw3 got %s, want 127.0.20.206", addr)
	}
	expectGateway(s, "127.0.20.206:18098", host3, "/", http.StatusOK, f.ns, "web")
	s.Eventually("gw3 and its listener programmed", 30*time.Second, func() error {
		if got, err := f.listenerCondition("gw3", "http", "Programmed"); err != nil || got != "True/Programmed" {
			return fmt.Errorf("listener Programmed %s (%v)", got, err)
		}
		g, err := f.gw.GatewayV1().Gateways(f.ns).Get(context.Background(), "gw3", metav1.GetOptions{})
		if err != nil {
			return err
		}
		return conditionIs(g.Status.Conditions, "Programmed", "True", g.Generation)
	})
	if got := s.Counter("dcm_reloads_total", "reason", string(dcm.ReasonGatewayAddressPool)) - byReason; got != 1 {
		t.Errorf("%v reloads for %s, want 1", got, dcm.ReasonGatewayAddressPool)
	}
	if got := s.Reloads() - reloads; got != 1 {
		t.Errorf("%v reloads in all, want 1", got)
	}
	expectGateway(s, "127.0.20.205:18098", host2, "/", http.StatusOK, f.ns, "web")

	// The reload bound a spare again: the fourth Gateway takes it at
	// runtime.
	reloads = s.Reloads()
	host4 := "four." + f.ns + ".test"
	if addr := f.addGateway(t, s, "gw4", host4, port); addr != "127.0.20.207" {
		t.Fatalf("gw4 got %s, want 127.0.20.207", addr)
	}
	expectGateway(s, "127.0.20.207:18098", host4, "/", http.StatusOK, f.ns, "web")
	if s.Reloads() != reloads {
		t.Errorf("the new spare reloaded: %v → %v", reloads, s.Reloads())
	}

	// The configured pool used up.
	g5 := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "gw5"}, Spec: gwv1.GatewaySpec{GatewayClassName: gwv1.ObjectName(f.class),
		Listeners: []gwv1.Listener{{Name: "http", Port: port, Protocol: gwv1.HTTPProtocolType}}}}
	if _, err := f.gw.GatewayV1().Gateways(f.ns).Create(context.Background(), g5, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Eventually("gw5 has no address", 30*time.Second, func() error {
		g, err := f.gw.GatewayV1().Gateways(f.ns).Get(context.Background(), "gw5", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range g.Status.Conditions {
			if c.Type == "Programmed" && c.Status == metav1.ConditionFalse && c.Reason == string(gwv1.GatewayReasonAddressNotAssigned) {
				return nil
			}
		}
		return fmt.Errorf("conditions %+v", g.Status.Conditions)
	})
}
