package dcm

import "testing"

func TestGatewayRouteNamesAndServices(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{{"gw_web.0.0123456789abcdef", true}, {"route_web", true}, {"web", true}, {"gw_", false}, {"gw_Web", false}, {"x_web", false}} {
		if err := ValidateRouteName("name", tc.name); (err == nil) != tc.ok {
			t.Errorf("ValidateRouteName(%q) = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
	for _, tc := range []struct {
		name string
		svcs []ServiceRef
		ok   bool
	}{
		{"same name, other namespace", []ServiceRef{{Name: "a", Port: "80", Weight: 1}, {Name: "a", Namespace: "other", Port: "80", Weight: 1}}, true},
		{"twice in one namespace", []ServiceRef{{Name: "a", Namespace: "o", Port: "80"}, {Name: "a", Namespace: "o", Port: "81"}}, false},
		{"bad namespace", []ServiceRef{{Name: "a", Namespace: "O_x", Port: "80"}}, false},
	} {
		if err := ValidateServices(tc.svcs); (err == nil) != tc.ok {
			t.Errorf("%s: ValidateServices = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}
