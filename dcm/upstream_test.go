package dcm

import "testing"

// TestUpstreamFor: with PerService each server verifies its own Service's
// name (an alternate's too); otherwise the route's name, or none (the
// chain only, which ValidateUpstream accepts unless PerService is set).
func TestUpstreamFor(t *testing.T) {
	for _, tc := range []struct {
		name    string
		up      UpstreamTLS
		service string
		want    string
		valid   bool
	}{
		{"per service, the primary", UpstreamTLS{ServerName: "web.ns.svc", PerService: true}, "", "web.ns.svc", true},
		{"per service, an alternate", UpstreamTLS{ServerName: "web.ns.svc", PerService: true}, "canary", "canary.ns.svc", true},
		{"the route's name", UpstreamTLS{ServerName: "pods.internal"}, "canary", "pods.internal", true},
		{"the chain only", UpstreamTLS{}, "canary", "", true},
		{"per service without a name", UpstreamTLS{PerService: true}, "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.up.CA, tc.up.Version = "route:ns/r", "abcd"
			r := Route{Namespace: "ns", Upstream: &tc.up}
			if got := UpstreamFor(r, Endpoint{Service: tc.service}); got.ServerName != tc.want {
				t.Errorf("server name %q, want %q", got.ServerName, tc.want)
			}
			if err := ValidateUpstream(&tc.up); (err == nil) != tc.valid {
				t.Errorf("ValidateUpstream: %v, want valid %v", err, tc.valid)
			}
		})
	}
	if UpstreamFor(Route{}, Endpoint{}) != nil {
		t.Error("a route without upstream TLS got some")
	}
	a, b := UpstreamTLS{Version: "ab", ServerName: "web.ns.svc"}, UpstreamTLS{Version: "ab", ServerName: "web.ns.svc", PerService: true}
	if UpstreamTag(&a) == UpstreamTag(&b) {
		t.Error("PerService does not change the servers' tag: a change would keep servers that verify the old way")
	}
}
