package kube

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dcm-router/dcm/dcm"
)

// TestListenerPorts: a listener on a port outside the pre-bound set is
// accepted and its routes served, but Programmed only once the engine
// says HAProxy binds its address and port; ports HAProxy cannot give it
// (the other protocol's pre-bound ones, dcm's own frontends) are refused.
func TestListenerPorts(t *testing.T) {
	tests := []struct {
		name       string
		listener   gwv1.Listener
		reserved   []string
		bound      []dcm.GatewayBind
		accepted   string
		programmed string
		served     int
	}{
		{"pre-bound", httpListener("http", 18080, ""), nil, nil, "True/Accepted", "True/Programmed", 1},
		{"other port, not bound yet", httpListener("http", 8080, ""), nil, nil, "True/Accepted", "False/Pending", 1},
		{"other port, bound", httpListener("http", 8080, ""), nil, []dcm.GatewayBind{{Bind: "127.0.20.1:8080"}}, "True/Accepted", "True/Programmed", 1},
		{"other port, bound for HTTPS only", httpListener("http", 8080, ""), nil, []dcm.GatewayBind{{Bind: "127.0.20.1:8080", HTTPS: true}}, "True/Accepted", "False/Pending", 1},
		{"other protocol's pre-bound port", httpListener("http", 18443, ""), nil, nil, "False/PortUnavailable", "False/Invalid", 0},
		{"dcm's HTTP frontend, any address", httpListener("http", 8000, ""), []string{":8000"}, nil, "False/PortUnavailable", "False/Invalid", 0},
		{"dcm's HTTP frontend on a Gateway address", httpListener("http", 8000, ""), []string{"127.0.20.1:8000"}, nil, "False/PortUnavailable", "False/Invalid", 0},
		{"dcm's HTTP frontend elsewhere", httpListener("http", 8000, ""), []string{"127.0.0.1:8000"}, nil, "True/Accepted", "False/Pending", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testInput([]string{"gw/web"}, nil, map[string]labels.Set{"gw": {}})
			in.reserved, in.bound = tt.reserved, tt.bound
			in.classes, in.gateways = []*gwv1.GatewayClass{testClass()}, []*gwv1.Gateway{testGateway("gw", "gw", 0, tt.listener)}
			in.routes = []*gwv1.HTTPRoute{testHTTPRoute("gw", "web", 1, "gw", nil, "web")}
			out := translateGateways(in)
			st := out.gateways[types.NamespacedName{Namespace: "gw", Name: "gw"}]
			conds := st.Listeners[0].Conditions
			if got := condOf(conds, "Accepted"); got != tt.accepted {
				t.Errorf("Accepted %s, want %s", got, tt.accepted)
			}
			if got := condOf(conds, "Programmed"); got != tt.programmed {
				t.Errorf("Programmed %s, want %s", got, tt.programmed)
			}
			if tt.programmed == "False/Pending" {
				for _, c := range conds {
					if c.Type == "Programmed" && !strings.Contains(c.Message, string(dcm.ReasonGatewayListenerPort)) {
						t.Errorf("Programmed message %q does not name the reload reason", c.Message)
					}
				}
			}
			if len(out.served) != tt.served {
				t.Errorf("served %d routes, want %d", len(out.served), tt.served)
			}
		})
	}
}

// TestGatewayAddressPending: with --gateway-address-spares, a Gateway
// whose address HAProxy binds on no port is Programmed=False Pending,
// naming the reload that binds it, and Programmed once the engine says
// the address is bound; without spares every address is.
func TestGatewayAddressPending(t *testing.T) {
	tests := []struct {
		name   string
		spares int
		bound  []dcm.GatewayBind
		want   string
	}{
		{"every address bound", 0, nil, "True/Programmed"},
		{"spares, not bound", 1, nil, "False/Pending"},
		{"spares, another address bound", 1, []dcm.GatewayBind{{Bind: "127.0.20.2:18080"}}, "False/Pending"},
		{"spares, bound", 1, []dcm.GatewayBind{{Bind: "127.0.20.1:18443", HTTPS: true}}, "True/Programmed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testInput([]string{"gw/web"}, nil, map[string]labels.Set{"gw": {}})
			in.binds.Spares, in.bound = tt.spares, tt.bound
			in.classes, in.gateways = []*gwv1.GatewayClass{testClass()}, []*gwv1.Gateway{testGateway("gw", "gw", 0, httpListener("http", 18080, ""))}
			st := translateGateways(in).gateways[types.NamespacedName{Namespace: "gw", Name: "gw"}]
			if got := condOf(st.Conditions, "Programmed"); got != tt.want {
				t.Errorf("Gateway Programmed %s, want %s", got, tt.want)
			}
			if tt.want == "False/Pending" && !strings.Contains(st.Conditions[1].Message, string(dcm.ReasonGatewayAddressPool)) {
				t.Errorf("message %q does not name %s", st.Conditions[1].Message, dcm.ReasonGatewayAddressPool)
			}
		})
	}
}
