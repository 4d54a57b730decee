package kube

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dcm-router/dcm/dcm"
)

// TestGatewayView: the portal's picture holds each Gateway of dcm's class
// with the address given, its listeners with their attached routes, and
// each HTTPRoute naming one — with the very conditions of the status to
// write. An HTTPRoute of another controller's Gateway is not in it.
func TestGatewayView(t *testing.T) {
	in := testInput([]string{"app/web"}, nil, nil)
	in.classes = []*gwv1.GatewayClass{testClass()}
	in.gateways = []*gwv1.Gateway{testGateway("infra", "gw", 0, httpListener("http", 18080, "*.example.com"))}
	in.routes = []*gwv1.HTTPRoute{
		testHTTPRoute("infra", "web", 1, "gw", []string{"a.example.com"}, "web"),
		testHTTPRoute("infra", "broken", 2, "gw", nil, "missing"),
		testHTTPRoute("infra", "theirs", 3, "nobody", nil, "web"),
	}
	out := translateGateways(in)
	v := out.view
	if len(v.Gateways) != 1 {
		t.Fatalf("gateways %+v", v.Gateways)
	}
	g := v.Gateways[0]
	if g.Namespace != "infra" || g.Name != "gw" || g.Class != "dcm" || g.Address != "127.0.20.1" || len(g.Listeners) != 1 {
		t.Fatalf("gateway %+v", g)
	}
	l := g.Listeners[0]
	if l.Name != "http" || l.Protocol != "HTTP" || l.Port != 18080 || l.Hostname != "*.example.com" || l.AttachedRoutes != 2 {
		t.Errorf("listener %+v", l)
	}
	st := out.gateways[types.NamespacedName{Namespace: "infra", Name: "gw"}]
	if !reflect.DeepEqual(g.Conditions, viewConditions(st.Conditions)) || !reflect.DeepEqual(l.Conditions, viewConditions(st.Listeners[0].Conditions)) {
		t.Errorf("conditions %+v / %+v, not the status's", g.Conditions, l.Conditions)
	}
	if len(v.HTTPRoutes) != 2 || v.HTTPRoutes[0].Name != "broken" || v.HTTPRoutes[1].Name != "web" {
		t.Fatalf("httproutes %+v", v.HTTPRoutes)
	}
	broken := v.HTTPRoutes[0].Parents
	if len(broken) != 1 || broken[0].Gateway != "infra/gw" || !hasView(broken[0].Conditions, "ResolvedRefs", "False", "BackendNotFound") {
		t.Errorf("broken's parents %+v", broken)
	}
	if web := v.HTTPRoutes[1]; len(web.Hostnames) != 1 || !hasView(web.Parents[0].Conditions, "Accepted", "True", "Accepted") {
		t.Errorf("web %+v", web)
	}
}

func hasView(cs []dcm.Condition, typ, status, reason string) bool {
	for _, c := range cs {
		if c.Type == typ && c.Status == status && c.Reason == reason {
			return true
		}
	}
	return false
}
