// Package injection is the corpus of the injection tests: hostile values
// and every Kubernetes field dcm hands to HAProxy, so that the unit tests of
// dcm/kube and the e2e test through the real haproxy put the same values
// into the same fields.
package injection

import (
	"math"
	"slices"
	"strings"

	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/kube"
)

// Hostile is the injection corpus: each value, were it to reach HAProxy
// unescaped, would end a runtime command (';', newline, CR, NUL), add an
// argument (space, tab), start a comment ('#'), open a quoted word (either
// quote), run a sample fetch in a log format or header ("%["), or make a
// name lie about what it is (a Cyrillic letter that looks Latin, a
// right-to-left override that reverses how the rest reads, an emoji: bytes
// outside ASCII). The unit and e2e injection tests put each one into every
// Kubernetes field that can reach HAProxy.
var Hostile = []struct{ Name, Value string }{
	{"semicolon", ";"},
	{"newline", "\n"},
	{"cr", "\r"},
	{"space", " "},
	{"tab", "\t"},
	{"hash", "#"},
	{"dquote", `"`},
	{"squote", "'"},
	{"sample-fetch", "%[req.hdr(x)]"},
	{"nul", "\x00"},
	{"cyrillic-e", "\u0435"},
	{"rtl-override", "\u202e"},
	{"emoji", "\U0001F600"},
}

// HostilePorts are numbers no port can be.
var HostilePorts = []int32{0, -1, 65536, math.MaxInt32}

// Marker starts every value the corpus writes: were any of them to reach
// HAProxy, the cfg, a map or a command would contain it.
const Marker = "inj"

// Field is one Kubernetes string field that can reach HAProxy: how to write
// a value into an Ingress (and its rule 0, path 0 and default backend) or an
// EndpointSlice (port 0, endpoint 0 with a Pod targetRef), a valid value of
// the field with a hostile one inside (so that the hostile part alone makes
// it invalid), a value too long for it, and what the refusal must say.
type Field struct {
	Name   string
	Set    func(ing *networkingv1.Ingress, sl *discoveryv1.EndpointSlice, v string)
	Wrap   func(hostile string) string
	Long   string
	Reason string
	Path   string // the field path of the refusal
}

// Slice reports whether the field belongs to the EndpointSlice.
func (f Field) Slice() bool {
	return strings.HasPrefix(f.Path, "ports") || strings.HasPrefix(f.Path, "endpoints")
}

const (
	rulePath = "spec.rules[0].http.paths[0]"
	svcPath  = rulePath + ".backend.service"
)

func inName(h string) string { return Marker + h + "x" }

type (
	ing   = networkingv1.Ingress
	slice = discoveryv1.EndpointSlice
)

// StringFields lists every string field dcm reads and passes on to HAProxy:
// those of the specs, then every Ingress annotation of kube's table.
var StringFields = slices.Concat(specFields, ingressAnnotationFields())

var specFields = []Field{
	{"namespace", func(i *ing, _ *slice, v string) { i.Namespace = v },
		inName, Marker + strings.Repeat("a", 61), dcm.RejectInvalidName, "metadata.namespace"},
	{"ingress name", func(i *ing, _ *slice, v string) { i.Name = v },
		inName, Marker + strings.Repeat("a", 251), dcm.RejectInvalidName, "metadata.name"},
	{"host", func(i *ing, _ *slice, v string) { i.Spec.Rules[0].Host = v },
		func(h string) string { return Marker + h + "x.example.com" }, Marker + strings.Repeat("a", 61) + ".example.com", dcm.RejectInvalidHost, "spec.rules[0].host"},
	// A wildcard host's domain is a wildcard map key (--allow-wildcard-routes).
	{"wildcard host", func(i *ing, _ *slice, v string) { i.Spec.Rules[0].Host = v },
		func(h string) string { return "*." + Marker + h + "x.example.com" }, "*." + Marker + strings.Repeat("a", 61) + ".example.com", dcm.RejectInvalidHost, "spec.rules[0].host"},
	{"path", func(i *ing, _ *slice, v string) { i.Spec.Rules[0].HTTP.Paths[0].Path = v },
		func(h string) string { return "/" + Marker + h + "x" }, "/" + Marker + strings.Repeat("a", 2045), dcm.RejectInvalidPath, rulePath + ".path"},
	{"service name", func(i *ing, _ *slice, v string) { i.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name = v },
		inName, Marker + strings.Repeat("a", 61), dcm.RejectInvalidName, svcPath + ".name"},
	{"service port name", func(i *ing, _ *slice, v string) { i.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port.Name = v },
		inName, Marker + strings.Repeat("a", 61), dcm.RejectInvalidPort, svcPath + ".port.name"},
	{"default backend service name", func(i *ing, _ *slice, v string) { i.Spec.DefaultBackend.Service.Name = v },
		inName, Marker + strings.Repeat("a", 61), dcm.RejectInvalidName, "spec.defaultBackend.service.name"},
	{"default backend port name", func(i *ing, _ *slice, v string) { i.Spec.DefaultBackend.Service.Port.Name = v },
		inName, Marker + strings.Repeat("a", 61), dcm.RejectInvalidPort, "spec.defaultBackend.service.port.name"},
	// A passthrough route's host is an SNI map key: a whole host, no path.
	{"passthrough host", func(i *ing, _ *slice, v string) {
		i.Annotations[kube.AnnotationSSLPassthrough] = "true"
		i.Spec.DefaultBackend = nil
		i.Spec.Rules[0].Host = v
		i.Spec.Rules[0].HTTP.Paths[0].Path = "/"
	}, func(h string) string { return Marker + h + "x.example.com" }, Marker + strings.Repeat("a", 61) + ".example.com", dcm.RejectInvalidHost, "spec.rules[0].host"},
	{"tls secret name", func(i *ing, _ *slice, v string) {
		i.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{i.Spec.Rules[0].Host}, SecretName: v}}
	}, inName, Marker + strings.Repeat("a", 251), dcm.RejectInvalidName, "spec.tls[0].secretName"},
	{"tls host", func(i *ing, _ *slice, v string) {
		i.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{v}, SecretName: "web-tls"}}
	}, func(h string) string { return Marker + h + "x.example.com" }, Marker + strings.Repeat("a", 61) + ".example.com", dcm.RejectInvalidHost, "spec.tls[0].hosts[0]"},
	{"slice port name", func(_ *ing, s *slice, v string) { s.Ports[0].Name = &v },
		inName, Marker + strings.Repeat("a", 61), dcm.RejectInvalidPort, "ports[0].name"},
	{"endpoint address", func(_ *ing, s *slice, v string) { s.Endpoints[0].Addresses[0] = v },
		func(h string) string { return "127.0.9.1" + h + Marker }, "127.0.9." + strings.Repeat("1", 300) + Marker, dcm.RejectInvalidAddress, "endpoints[0].addresses[0]"},
	{"pod name", func(_ *ing, s *slice, v string) { s.Endpoints[0].TargetRef.Name = v },
		inName, Marker + strings.Repeat("a", 251), dcm.RejectInvalidName, "endpoints[0].targetRef.name"},
}

// PortField is one port number dcm passes on.
type PortField struct {
	Name string
	Set  func(*networkingv1.Ingress, *discoveryv1.EndpointSlice, int32)
	Path string
}

// Slice reports whether the field belongs to the EndpointSlice.
func (f PortField) Slice() bool { return strings.HasPrefix(f.Path, "ports") }

// PortFields lists the port numbers dcm passes on; refused as invalid-port.
var PortFields = []PortField{
	{"service port number", func(i *ing, _ *slice, p int32) {
		i.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port = networkingv1.ServiceBackendPort{Number: p}
	}, svcPath + ".port.number"},
	{"default backend port number", func(i *ing, _ *slice, p int32) {
		i.Spec.DefaultBackend.Service.Port = networkingv1.ServiceBackendPort{Number: p}
	}, "spec.defaultBackend.service.port.number"},
	{"slice port number", func(_ *ing, s *slice, p int32) { s.Ports[0].Port = &p }, "ports[0].port"},
}

// Value is one value the corpus writes into a field.
type Value struct{ Name, V string }

// Values are the hostile values wrapped for f, and f's long value.
func (f Field) Values() []Value {
	out := []Value{{"long", f.Long}}
	for _, h := range Hostile {
		out = append(out, Value{h.Name, f.Wrap(h.Value)})
	}
	return out
}

// An OpenShift Route as dcm reads it: an unstructured object (dcm watches
// Routes with the dynamic client), so the corpus writes raw values into it.
type route = map[string]any

// Route is a valid Route of host to the Service web (port name http) with
// the alternate web-canary: the base the RouteFields write into.
func Route(ns, name, host string) map[string]any {
	return route{
		"apiVersion": "route.openshift.io/v1", "kind": "Route",
		"metadata": route{"namespace": ns, "name": name, "annotations": route{}},
		"spec": route{
			"host": host, "path": "/ok",
			"to":                route{"kind": "Service", "name": "web", "weight": int64(100)},
			"alternateBackends": []any{route{"kind": "Service", "name": "web-canary", "weight": int64(0)}},
			"port":              route{"targetPort": "http"},
		},
	}
}

func spec(r route) route        { return r["spec"].(route) }
func annotations(r route) route { return r["metadata"].(route)["annotations"].(route) }

// edgeTLS gives a Route spec.tls of the edge kind.
func edgeTLS(r route) route {
	t := route{"termination": "edge"}
	spec(r)["tls"] = t
	return t
}

// RouteField is one string field of a Route that can reach HAProxy (or
// decides how a route is served), in the shape of Field.
type RouteField struct {
	Name   string
	Set    func(r map[string]any, v string)
	Wrap   func(hostile string) string
	Long   string
	Reason string
	Path   string
	// Meta fields are the object's name and namespace: the API server
	// validates them itself, so only the unit corpus writes them.
	Meta bool
}

// Values are the hostile values wrapped for f, and f's long value.
func (f RouteField) Values() []Value {
	out := []Value{{"long", f.Long}}
	for _, h := range Hostile {
		out = append(out, Value{h.Name, f.Wrap(h.Value)})
	}
	return out
}

// pemWith is a PEM block whose base64 holds a hostile value.
func pemWith(h string) string {
	return "-----BEGIN CERTIFICATE-----\nMIIB" + h + Marker + "\n-----END CERTIFICATE-----\n"
}

// RouteFields lists every string field of a Route dcm reads: those of the
// spec, then every Route annotation of kube's table.
var RouteFields = slices.Concat(routeSpecFields, routeAnnotationFields())

var routeSpecFields = []RouteField{
	{Name: "route namespace", Set: func(r route, v string) { r["metadata"].(route)["namespace"] = v },
		Wrap: inName, Long: Marker + strings.Repeat("a", 61), Reason: dcm.RejectInvalidName, Path: "metadata.namespace", Meta: true},
	{Name: "route name", Set: func(r route, v string) { r["metadata"].(route)["name"] = v },
		Wrap: inName, Long: Marker + strings.Repeat("a", 251), Reason: dcm.RejectInvalidName, Path: "metadata.name", Meta: true},
	{Name: "route host", Set: func(r route, v string) { spec(r)["host"] = v },
		Wrap: func(h string) string { return Marker + h + "x.example.com" }, Long: Marker + strings.Repeat("a", 61) + ".example.com",
		Reason: dcm.RejectInvalidHost, Path: "spec.host"},
	{Name: "route path", Set: func(r route, v string) { spec(r)["path"] = v },
		Wrap: func(h string) string { return "/" + Marker + h + "x" }, Long: "/" + Marker + strings.Repeat("a", 2045),
		Reason: dcm.RejectInvalidPath, Path: "spec.path"},
	{Name: "route to name", Set: func(r route, v string) { spec(r)["to"].(route)["name"] = v },
		Wrap: inName, Long: Marker + strings.Repeat("a", 61), Reason: dcm.RejectInvalidName, Path: "spec.to.name"},
	{Name: "route to kind", Set: func(r route, v string) { spec(r)["to"].(route)["kind"] = v },
		Wrap: func(h string) string { return "Service" + h + Marker }, Long: "Service" + Marker + strings.Repeat("a", 300),
		Reason: dcm.RejectUnsupported, Path: "spec.to.kind"},
	{Name: "route alternate name", Set: func(r route, v string) { spec(r)["alternateBackends"].([]any)[0].(route)["name"] = v },
		Wrap: inName, Long: Marker + strings.Repeat("a", 61), Reason: dcm.RejectInvalidName, Path: "spec.alternateBackends[0].name"},
	{Name: "route target port name", Set: func(r route, v string) { spec(r)["port"].(route)["targetPort"] = v },
		Wrap: inName, Long: Marker + strings.Repeat("a", 61), Reason: dcm.RejectInvalidPort, Path: "spec.port.targetPort"},
	{Name: "route wildcard policy", Set: func(r route, v string) { spec(r)["wildcardPolicy"] = v },
		Wrap: func(h string) string { return "None" + h + Marker }, Long: "None" + Marker + strings.Repeat("e", 300),
		Reason: dcm.RejectUnsupported, Path: "spec.wildcardPolicy"},
	{Name: "route termination", Set: func(r route, v string) { edgeTLS(r)["termination"] = v },
		Wrap: func(h string) string { return "edge" + h + Marker }, Long: "edge" + Marker + strings.Repeat("e", 300),
		Reason: dcm.RejectInvalidValue, Path: "spec.tls.termination"},
	{Name: "route insecure policy", Set: func(r route, v string) { edgeTLS(r)["insecureEdgeTerminationPolicy"] = v },
		Wrap: func(h string) string { return "Redirect" + h + Marker }, Long: "Redirect" + Marker + strings.Repeat("e", 300),
		Reason: dcm.RejectInvalidValue, Path: "spec.tls.insecureEdgeTerminationPolicy"},
	{Name: "route certificate", Set: func(r route, v string) {
		t := edgeTLS(r)
		t["certificate"], t["key"] = v, "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n"
	}, Wrap: pemWith, Long: pemWith(strings.Repeat("A", 100000)), Reason: dcm.RejectInvalidValue, Path: "spec.tls"},
	{Name: "route key", Set: func(r route, v string) {
		t := edgeTLS(r)
		t["certificate"], t["key"] = pemWith(""), v
	}, Wrap: pemWith, Long: pemWith(strings.Repeat("A", 100000)), Reason: dcm.RejectInvalidValue, Path: "spec.tls"},
	{Name: "route external certificate name", Set: func(r route, v string) { edgeTLS(r)["externalCertificate"] = route{"name": v} },
		Wrap: inName, Long: Marker + strings.Repeat("a", 251), Reason: dcm.RejectInvalidName, Path: "spec.tls.externalCertificate.name"},
	{Name: "route passthrough host", Set: func(r route, v string) {
		spec(r)["tls"] = route{"termination": "passthrough"}
		spec(r)["path"] = ""
		spec(r)["host"] = v
	}, Wrap: func(h string) string { return Marker + h + "x.example.com" }, Long: Marker + strings.Repeat("a", 61) + ".example.com",
		Reason: dcm.RejectInvalidHost, Path: "spec.host"},
}

// RouteNumberField is one number of a Route dcm passes on.
type RouteNumberField struct {
	Name   string
	Set    func(r map[string]any, n int64)
	Values []int64
	Reason string
	Path   string
}

// RouteNumberFields: a target port no port can be, weights outside 0..256.
var RouteNumberFields = []RouteNumberField{
	{"route target port number", func(r route, n int64) { spec(r)["port"].(route)["targetPort"] = n },
		[]int64{0, -1, 65536, math.MaxInt32}, dcm.RejectInvalidPort, "spec.port.targetPort"},
	{"route to weight", func(r route, n int64) { spec(r)["to"].(route)["weight"] = n },
		[]int64{-1, 257, math.MaxInt32}, dcm.RejectInvalidValue, "spec.to.weight"},
	{"route alternate weight", func(r route, n int64) { spec(r)["alternateBackends"].([]any)[0].(route)["weight"] = n },
		[]int64{-1, 257, math.MinInt32}, dcm.RejectInvalidValue, "spec.alternateBackends[0].weight"},
}
