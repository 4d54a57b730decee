// Package injection is the corpus of the injection tests: hostile values
// and every Kubernetes field dcm hands to HAProxy, so that the unit tests of
// dcm/kube and the e2e test through the real haproxy put the same values
// into the same fields.
package injection

import (
	"math"
	"strings"

	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/dcm-router/dcm/dcm"
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

// StringFields lists every string field dcm reads and passes on to HAProxy.
var StringFields = []Field{
	{"namespace", func(i *ing, _ *slice, v string) { i.Namespace = v },
		inName, Marker + strings.Repeat("a", 61), dcm.RejectInvalidName, "metadata.namespace"},
	{"ingress name", func(i *ing, _ *slice, v string) { i.Name = v },
		inName, Marker + strings.Repeat("a", 251), dcm.RejectInvalidName, "metadata.name"},
	{"host", func(i *ing, _ *slice, v string) { i.Spec.Rules[0].Host = v },
		func(h string) string { return Marker + h + "x.example.com" }, Marker + strings.Repeat("a", 61) + ".example.com", dcm.RejectInvalidHost, "spec.rules[0].host"},
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
	{"balance annotation", func(i *ing, _ *slice, v string) { i.Annotations["dcm.io/balance"] = v },
		func(h string) string { return "roundrobin" + h + Marker }, "roundrobin" + Marker + strings.Repeat("a", 300), dcm.RejectInvalidValue, "metadata.annotations[dcm.io/balance]"},
	{"health-check annotation", func(i *ing, _ *slice, v string) { i.Annotations["dcm.io/health-check"] = v },
		func(h string) string { return "true" + h + Marker }, "true" + Marker + strings.Repeat("e", 300), dcm.RejectInvalidValue, "metadata.annotations[dcm.io/health-check]"},
	{"ssl-passthrough annotation", func(i *ing, _ *slice, v string) { i.Annotations["dcm.io/ssl-passthrough"] = v },
		func(h string) string { return "true" + h + Marker }, "true" + Marker + strings.Repeat("e", 300), dcm.RejectInvalidValue, "metadata.annotations[dcm.io/ssl-passthrough]"},
	// A passthrough route's host is an SNI map key: a whole host, no path.
	{"passthrough host", func(i *ing, _ *slice, v string) {
		i.Annotations["dcm.io/ssl-passthrough"] = "true"
		i.Spec.DefaultBackend = nil
		i.Spec.Rules[0].Host = v
		i.Spec.Rules[0].HTTP.Paths[0].Path = "/"
	}, func(h string) string { return Marker + h + "x.example.com" }, Marker + strings.Repeat("a", 61) + ".example.com", dcm.RejectInvalidHost, "spec.rules[0].host"},
	{"weights annotation", func(i *ing, _ *slice, v string) { i.Annotations["dcm.io/weights"] = v },
		func(h string) string { return "web=80," + inName(h) + "=20" }, "web=80," + Marker + strings.Repeat("a", 61) + "=20", dcm.RejectInvalidName, "metadata.annotations[dcm.io/weights]"},
	{"sticky annotation", func(i *ing, _ *slice, v string) { i.Annotations["dcm.io/sticky"] = v },
		func(h string) string { return "true" + h + Marker }, "true" + Marker + strings.Repeat("e", 300), dcm.RejectInvalidValue, "metadata.annotations[dcm.io/sticky]"},
	{"ssl-redirect annotation", func(i *ing, _ *slice, v string) { i.Annotations["dcm.io/ssl-redirect"] = v },
		func(h string) string { return "true" + h + Marker }, "true" + Marker + strings.Repeat("e", 300), dcm.RejectInvalidValue, "metadata.annotations[dcm.io/ssl-redirect]"},
	{"ssl-redirect-code annotation", func(i *ing, _ *slice, v string) { i.Annotations["dcm.io/ssl-redirect-code"] = v },
		func(h string) string { return "302" + h + Marker }, "302" + strings.Repeat("0", 300), dcm.RejectInvalidValue, "metadata.annotations[dcm.io/ssl-redirect-code]"},
	{"tls secret name", func(i *ing, _ *slice, v string) {
		i.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{i.Spec.Rules[0].Host}, SecretName: v}}
	}, inName, Marker + strings.Repeat("a", 251), dcm.RejectInvalidName, "spec.tls[0].secretName"},
	{"tls host", func(i *ing, _ *slice, v string) {
		i.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{v}, SecretName: "web-tls"}}
	}, func(h string) string { return Marker + h + "x.example.com" }, Marker + strings.Repeat("a", 61) + ".example.com", dcm.RejectInvalidHost, "spec.tls[0].hosts[0]"},
	{"reencrypt annotation", func(i *ing, _ *slice, v string) { i.Annotations["dcm.io/reencrypt"] = v },
		func(h string) string { return "true" + h + Marker }, "true" + Marker + strings.Repeat("e", 300), dcm.RejectInvalidValue, "metadata.annotations[dcm.io/reencrypt]"},
	// The CA Secret's name and the pods' server name reach HAProxy (as a
	// CA source in logs, as SNI and verifyhost): on an Ingress that would
	// be served as reencrypt but for them.
	{"backend-ca annotation", func(i *ing, _ *slice, v string) {
		i.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{i.Spec.Rules[0].Host}, SecretName: "web-tls"}}
		i.Annotations["dcm.io/backend-ca"] = v
	}, inName, Marker + strings.Repeat("a", 251), dcm.RejectInvalidName, "metadata.annotations[dcm.io/backend-ca]"},
	{"backend-server-name annotation", func(i *ing, _ *slice, v string) {
		i.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{i.Spec.Rules[0].Host}, SecretName: "web-tls"}}
		i.Annotations["dcm.io/backend-ca"] = "web-ca"
		i.Annotations["dcm.io/backend-server-name"] = v
	}, func(h string) string { return Marker + h + "x.example.com" }, Marker + strings.Repeat("a", 61) + ".example.com", dcm.RejectInvalidHost, "metadata.annotations[dcm.io/backend-server-name]"},
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
