package kube

import (
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dcm-router/dcm/dcm"
)

const grpcTestService = "gateway_api_conformance.echo_basic.grpcecho.GrpcEcho"

func testGRPCRoute(ns, name string, age int, gw string, rules ...gwv1.GRPCRouteRule) *gwv1.GRPCRoute {
	r := &gwv1.GRPCRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 4, UID: types.UID("grpc-" + ns + "-" + name),
		CreationTimestamp: metav1.NewTime(gwT0.Add(time.Duration(age) * time.Minute))}}
	r.Spec.ParentRefs = []gwv1.ParentReference{{Name: gwv1.ObjectName(gw)}}
	r.Spec.Rules = rules
	return r
}

func grpcRule(svc, method string, backends ...string) gwv1.GRPCRouteRule {
	var rule gwv1.GRPCRouteRule
	if svc != "" || method != "" {
		mm := &gwv1.GRPCMethodMatch{}
		if svc != "" {
			mm.Service = ptrTo(svc)
		}
		if method != "" {
			mm.Method = ptrTo(method)
		}
		rule.Matches = []gwv1.GRPCRouteMatch{{Method: mm}}
	}
	for _, b := range backends {
		rule.BackendRefs = append(rule.BackendRefs, gwv1.GRPCBackendRef{BackendRef: gwv1.BackendRef{
			BackendObjectReference: gwv1.BackendObjectReference{Name: gwv1.ObjectName(b), Port: ptrTo(gwv1.PortNumber(8080))}}})
	}
	return rule
}

// A GRPCRoute's matches become the path matches of the calls they take:
// service and method exactly, a service as a whole-segment prefix, a
// method alone or regular expressions as a path regular expression, none
// as any path; headers as they are. What dcm cannot express is refused.
func TestGRPCMatchAsPath(t *testing.T) {
	regex := gwv1.GRPCMethodMatchRegularExpression
	for _, tc := range []struct {
		name    string
		match   gwv1.GRPCRouteMatch
		want    dcm.HTTPMatch
		wantErr string
	}{
		{"service and method", gwv1.GRPCRouteMatch{Method: &gwv1.GRPCMethodMatch{Service: ptrTo("a.B"), Method: ptrTo("Echo")}},
			dcm.HTTPMatch{PathType: dcm.GatewayPathExact, Path: "/a.B/Echo"}, ""},
		{"service only", gwv1.GRPCRouteMatch{Method: &gwv1.GRPCMethodMatch{Service: ptrTo("a.B")}},
			dcm.HTTPMatch{PathType: dcm.GatewayPathPrefix, Path: "/a.B"}, ""},
		{"headers only", gwv1.GRPCRouteMatch{Headers: []gwv1.GRPCHeaderMatch{{Name: "version", Value: "two"}}},
			dcm.HTTPMatch{PathType: dcm.GatewayPathPrefix, Path: "/", Headers: []dcm.ValueMatch{{Name: "version", Value: "two"}}}, ""},
		{"method only", gwv1.GRPCRouteMatch{Method: &gwv1.GRPCMethodMatch{Method: ptrTo("Echo.V2")}},
			dcm.HTTPMatch{PathType: dcm.GatewayPathRegex, Path: `/[^/]+/Echo\.V2`}, ""},
		{"regex service", gwv1.GRPCRouteMatch{Method: &gwv1.GRPCMethodMatch{Type: &regex, Service: ptrTo(`a\..*`)}},
			dcm.HTTPMatch{PathType: dcm.GatewayPathRegex, Path: `/(?:a\..*)/(?:[^/]+)`}, ""},
		{"regex both", gwv1.GRPCRouteMatch{Method: &gwv1.GRPCMethodMatch{Type: &regex, Service: ptrTo("s"), Method: ptrTo("Echo(Two)?")}},
			dcm.HTTPMatch{PathType: dcm.GatewayPathRegex, Path: `/(?:s)/(?:Echo(Two)?)`}, ""},
		{"bad regex", gwv1.GRPCRouteMatch{Method: &gwv1.GRPCMethodMatch{Type: &regex, Method: ptrTo("(")}}, dcm.HTTPMatch{}, "not a regular expression"},
		{"neither", gwv1.GRPCRouteMatch{Method: &gwv1.GRPCMethodMatch{}}, dcm.HTTPMatch{}, "service or method is required"},
		{"bad name", gwv1.GRPCRouteMatch{Method: &gwv1.GRPCMethodMatch{Service: ptrTo("a/b")}}, dcm.HTTPMatch{}, "not a gRPC service"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := testGRPCRoute("ns", "r", 0, "gw", gwv1.GRPCRouteRule{Matches: []gwv1.GRPCRouteMatch{tc.match}})
			hr, err := grpcAsHTTPRoute(g)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := ruleMatches("spec.rules[0]", hr.Spec.Rules[0].Matches, true)
			if err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], tc.want) {
				t.Fatalf("matches %+v %v, want %+v", got, err, tc.want)
			}
			if err := checkGatewayRule(gwRule{matches: got}); err != nil {
				t.Fatalf("the rule's check refuses it: %v", err)
			}
		})
	}
}

// A GRPCRoute on an HTTP listener is served as Gateway routes of its own
// source and names, with status of its own kind; RequestMirror refuses
// it; an HTTPS listener takes no GRPCRoute (no h2 there).
func TestGRPCRouteTranslate(t *testing.T) {
	in := testInput([]string{"ns/v1", "ns/v2"}, []string{"ns/cert"}, nil)
	in.classes = []*gwv1.GatewayClass{testClass()}
	https := gwv1.Listener{Name: "https", Port: 18443, Protocol: gwv1.HTTPSProtocolType,
		TLS: &gwv1.ListenerTLSConfig{CertificateRefs: []gwv1.SecretObjectReference{{Name: "cert"}}}}
	in.gateways = []*gwv1.Gateway{testGateway("ns", "gw", 0, httpListener("http", 18080, "")), testGateway("ns", "tls", 1, https)}
	mirror := grpcRule(grpcTestService, "", "v1")
	mirror.Filters = []gwv1.GRPCRouteFilter{{Type: gwv1.GRPCRouteFilterRequestMirror, RequestMirror: &gwv1.HTTPRequestMirrorFilter{}}}
	in.grpcRoutes = []*gwv1.GRPCRoute{
		testGRPCRoute("ns", "echo", 1, "gw", grpcRule(grpcTestService, "Echo", "v1"), grpcRule(grpcTestService, "EchoTwo", "v2")),
		testGRPCRoute("ns", "mirror", 2, "gw", mirror),
		testGRPCRoute("ns", "secure", 3, "tls", grpcRule(grpcTestService, "", "v1")),
	}
	in.routes = []*gwv1.HTTPRoute{testHTTPRoute("ns", "echo", 1, "gw", nil, "v1")}
	out := translateGateways(in)

	var grpc []dcm.Route
	for _, r := range out.served {
		if r.Source == dcm.SourceGRPCRoute {
			grpc = append(grpc, r)
		}
	}
	if len(grpc) != 2 || len(out.served) != 3 {
		t.Fatalf("served %d routes, %d of GRPCRoutes: %+v", len(out.served), len(grpc), out.served)
	}
	for i, r := range grpc {
		if r.Object != "echo" || !strings.HasPrefix(r.Name, "gw_echo.g") || r.Kind != dcm.KindHTTP || r.Gateway.Matches[0].PathType != dcm.GatewayPathExact {
			t.Errorf("route %d: %+v %+v", i, r, r.Gateway)
		}
	}
	if grpc[0].Name == grpc[1].Name || grpc[0].Gateway.Matches[0].Path == grpc[1].Gateway.Matches[0].Path {
		t.Errorf("two rules, one route: %s %s", grpc[0].Name, grpc[1].Name)
	}
	echo := out.grpcRoutes[types.NamespacedName{Namespace: "ns", Name: "echo"}]
	if len(echo) != 1 || condOf(echo[0].Conditions, "Accepted") != "True/Accepted" || condOf(echo[0].Conditions, "ResolvedRefs") != "True/ResolvedRefs" ||
		echo[0].Conditions[0].ObservedGeneration != 4 {
		t.Errorf("echo status %+v", echo)
	}
	if hr := out.routes[types.NamespacedName{Namespace: "ns", Name: "echo"}]; len(hr) != 1 || hr[0].Conditions[0].ObservedGeneration != 3 {
		t.Errorf("the HTTPRoute of the same name: %+v", hr)
	}
	if m := out.grpcRoutes[types.NamespacedName{Namespace: "ns", Name: "mirror"}]; len(m) != 1 || condOf(m[0].Conditions, "Accepted") != "False/UnsupportedValue" {
		t.Errorf("mirror status %+v", m)
	}
	if s := out.grpcRoutes[types.NamespacedName{Namespace: "ns", Name: "secure"}]; len(s) != 1 || condOf(s[0].Conditions, "Accepted") != "False/NotAllowedByListeners" {
		t.Errorf("GRPCRoute on an HTTPS listener: %+v", s)
	}
	kinds := out.gateways[types.NamespacedName{Namespace: "ns", Name: "gw"}].Listeners[0].SupportedKinds
	if len(kinds) != 2 || kinds[1].Kind != KindGRPCRoute {
		t.Errorf("HTTP listener's supportedKinds %+v", kinds)
	}
	if l := out.gateways[types.NamespacedName{Namespace: "ns", Name: "gw"}].Listeners[0]; l.AttachedRoutes != 2 {
		t.Errorf("attachedRoutes %d, want 2 (an HTTPRoute and the accepted GRPCRoute)", l.AttachedRoutes)
	}
	var views []string
	for _, v := range out.view.HTTPRoutes {
		views = append(views, v.Kind+" "+v.Name)
	}
	if !reflect.DeepEqual(views, []string{" echo", "GRPCRoute echo", "GRPCRoute mirror", "GRPCRoute secure"}) {
		t.Errorf("the portal's routes %q", views)
	}
	var rejected []string
	for _, r := range out.rejected {
		rejected = append(rejected, r.Object.Kind+" "+r.Object.Name+" "+r.Reason)
	}
	if !reflect.DeepEqual(rejected, []string{"GRPCRoute mirror UnsupportedValue", "GRPCRoute secure NotAllowedByListeners"}) {
		t.Errorf("rejected %v", rejected)
	}
}

// A GRPCRoute's pods are spoken to in h2c whatever their appProtocol.
func TestGRPCRouteEndpointsH2(t *testing.T) {
	eps := []dcm.Endpoint{{Name: "a", Addr: "10.0.0.1", Port: 3000}}
	got := withProtos(dcm.Route{Source: dcm.SourceGRPCRoute, Kind: dcm.KindHTTP}, eps, &serviceView{})
	if got[0].Proto != dcm.ProtoH2 {
		t.Errorf("proto %q, want h2", got[0].Proto)
	}
}
