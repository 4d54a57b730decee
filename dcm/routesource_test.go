package dcm

import "testing"

// Names and certificate references of OpenShift Routes: distinct from any
// an Ingress or a Secret can have, and still checked.
func TestRouteNamesAndInlineCerts(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"web", true}, {"route_web", true}, {"route_web.v2", true},
		{"route_", false}, {"route_Web", false}, {"route_route_web", false}, {"x_web", false}, {"web_", false},
	} {
		if err := ValidateRouteName("name", tc.name); (err == nil) != tc.ok {
			t.Errorf("ValidateRouteName(%q) = %v", tc.name, err)
		}
	}
	if got := BackendName(KindHTTP, "demo", RouteNamePrefix+"web"); got == BackendName(KindHTTP, "demo", "web") {
		t.Errorf("an Ingress and a Route named web share %s", got)
	}
	for _, tc := range []struct {
		ref    string
		ok     bool
		inline bool
	}{
		{"demo/web-tls", true, false}, {RouteCertRef("demo", "web"), true, true},
		{"route:demo", false, true}, {"route:Demo/web", false, true}, {"route:demo/web;x", false, true}, {"route:/web", false, true},
		{"route/demo/web", false, false},
	} {
		if err := ValidateSecretRef("secret", tc.ref); (err == nil) != tc.ok {
			t.Errorf("ValidateSecretRef(%q) = %v", tc.ref, err)
		}
		if InlineCert(tc.ref) != tc.inline {
			t.Errorf("InlineCert(%q) = %v", tc.ref, !tc.inline)
		}
	}
}
