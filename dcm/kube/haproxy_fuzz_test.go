package kube_test

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/haproxy"
	"github.com/dcm-router/dcm/dcm/kube"
	"github.com/dcm-router/dcm/dcm/plan"
)

// This file is an external test package: it follows Kubernetes strings down
// the path the engine takes them (kube's conversion and validation, the
// planner, then haproxy's renderer and command builder), which the kube
// package itself may not import.

var fuzzSettings = haproxy.Settings{AdminSocket: "/run/dcm/admin.sock", HTTPBind: "127.0.0.1:8000"}

// What dcm may write, line by line. A cfg line that is not in the rendering
// of an empty state must be one of these directives with exactly these
// arguments; a map line is exactly a key (host + path) and a backend name;
// a command is one line of its op's shape.
var (
	cfgLineShapes = []*regexp.Regexp{
		regexp.MustCompile(`^$`),
		regexp.MustCompile(`^backend be_(http|passthrough):[a-z0-9-]+:(route_)?[a-z0-9.-]+$`),
		regexp.MustCompile(`^    mode tcp$`),
		regexp.MustCompile(`^    balance (roundrobin|leastconn|random|first|source)$`),
		regexp.MustCompile(`^    hash-type consistent$`),
		regexp.MustCompile(`^    http-request set-timeout (server|tunnel) var\(txn\.timeout_(server|tunnel)\)$`),
		regexp.MustCompile(`^    cookie ` + haproxy.CookieName + ` insert indirect nocache httponly dynamic$`),
		regexp.MustCompile(`^    dynamic-cookie-key [0-9a-f]+$`),
		regexp.MustCompile(`^    stick-table type ip size 100k expire 30s store conn_cur,conn_rate\(3s\),http_req_rate\(10s\)$`),
		regexp.MustCompile(`^    tcp-request content (set-var\(txn\.rl\) be_name,map_str\(maps/rate_limit\.map\)|track-sc2 src if \{ var\(txn\.rl\) -m found \})$`),
		regexp.MustCompile(`^    tcp-request content set-var\(txn\.rl_(cur|tcp|http)\) var\(txn\.rl\),field\([123],:\)$`),
		regexp.MustCompile(`^    tcp-request content reject if \{ sc2_(conn_cur|conn_rate|http_req_rate),sub\(txn\.rl_(cur|tcp|http)\) -m int ge 0 \}$`),
		regexp.MustCompile(`^    server [A-Za-z0-9._:-]+ (\d{1,3}(\.\d{1,3}){3}|\[[0-9a-f:.]+\]):\d{1,5} weight \d{1,3}( check inter (\d+ms|5s))?( maxconn \d{1,7})?( disabled)?$`),
	}
	rateValue = regexp.MustCompile(`^\d{0,10}:\d{0,10}:\d{0,10}$`)
	// An allowlist: addresses and networks joined by commas, or the ids
	// of its chunks; a chunk's key.
	allowValue   = regexp.MustCompile(`^([0-9a-f:.]+(/\d{1,3})?(,[0-9a-f:.]+(/\d{1,3})?)*|@[0-9a-f]{16}(,[0-9a-f]{16})*)$`)
	chunkKey     = regexp.MustCompile(`^_chunk\.[0-9a-f]{16}$`)
	mapKey       = regexp.MustCompile(`^[a-z0-9.-]*/[A-Za-z0-9/\-._~%!$&()*+,=:@]*$`)
	hostKey      = regexp.MustCompile(`^[a-z0-9.-]+$`)
	actionValue  = regexp.MustCompile(`^(none|redirect-\d{3})$`)
	headersValue = regexp.MustCompile(`^[0-9A-Fqsdthclb.-]+$`)
	cookieValue  = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)
	rewriteValue = regexp.MustCompile(`^(/[A-Za-z0-9/\-._~%!$&()*+,=:@]*)?\|/[A-Za-z0-9/\-._~%!$&()*+,=:@]*$`)
	commandShape = regexp.MustCompile(`^(add server|del server|set server|set weight|enable health) be_(http|passthrough):[a-z0-9-]+:(route_)?[a-z0-9.-]+/[A-Za-z0-9._:-]+` +
		`( (\d{1,3}(\.\d{1,3}){3}|\[[0-9a-f:.]+\]):\d{1,5} weight \d{1,3}( check inter (\d+ms|5s))?( maxconn \d{1,7})? disabled| addr [0-9A-Fa-f:.]+ port \d{1,5}| state (ready|drain|maint)| \d{1,3})?$` +
		`|^enable dynamic-cookie backend be_http:[a-z0-9-]+:(route_)?[a-z0-9.-]+$`)
)

// annotationIndex is the index of annotation name among the rows of kind,
// for the seeds: the fuzzer picks a row by index, so that every row of the
// table is fuzzed without being listed here.
func annotationIndex(kind, name string) uint8 {
	return uint8(slices.IndexFunc(kube.AnnotationsOf(kind), func(a kube.Annotation) bool { return a.Name == name }))
}

// pickAnnotation is the name of the annotation of kind the fuzzer picked.
func pickAnnotation(kind string, pick uint8) string {
	rows := kube.AnnotationsOf(kind)
	return rows[int(pick)%len(rows)].Name
}

// rejectionOK checks what a refusal tells people: a known reason, the field,
// and a message on one printable ASCII line whatever the value held (the
// message goes to events, logs and the portal).
func rejectionOK(t *testing.T, err error) {
	t.Helper()
	var ie *dcm.InvalidError
	if !errors.As(err, &ie) {
		t.Fatalf("refusal %v is not a *dcm.InvalidError", err)
	}
	switch ie.Reason {
	case dcm.RejectInvalidName, dcm.RejectInvalidHost, dcm.RejectInvalidPath, dcm.RejectInvalidAddress,
		dcm.RejectInvalidPort, dcm.RejectInvalidValue, dcm.RejectUnsupported, dcm.RejectConflict:
	default:
		t.Fatalf("unknown reason %q", ie.Reason)
	}
	if ie.Field == "" {
		t.Fatalf("refusal without a field: %v", err)
	}
	msg := kube.RejectMessage(err)
	if strings.ContainsFunc(msg, func(r rune) bool { return r < 0x20 || r > 0x7e }) {
		t.Fatalf("message %q is not printable ASCII", msg)
	}
}

// FuzzKubeToHAProxy: any Ingress, Service and EndpointSlice strings, with
// any value in two annotations of the table (picked by index, so every row
// is fuzzed), are either refused with a reason, or everything dcm renders
// and sends for them has the expected shape: no newline, ';', '#', quote,
// space or non-ASCII byte sneaks into a cfg line, a map line or a runtime
// command.
func FuzzKubeToHAProxy(f *testing.F) {
	balance, check := annotationIndex(kube.KindIngress, kube.AnnotationBalance), annotationIndex(kube.KindIngress, kube.AnnotationHealthCheck)
	passthrough, sticky := annotationIndex(kube.KindIngress, kube.AnnotationSSLPassthrough), annotationIndex(kube.KindIngress, kube.AnnotationSticky)
	weights := annotationIndex(kube.KindIngress, kube.AnnotationWeights)
	f.Add("demo", "web", "web.demo.localhost", "/api", uint8(0), "web", "http", int32(0), balance, "", check, "",
		"web-7d4b9c6f5-x2x9z", "127.0.0.1", int32(8080), uint8(0))
	f.Add("demo", "web", "", "/", uint8(1), "web", "", int32(80), balance, "leastconn", check, "false",
		"web-0", "fd00::1", int32(1), uint8(1))
	f.Add("de;mo", "w\neb", "a b.example", "/a#b", uint8(2), "s'x", "ht\"tp", int32(-1), balance, "roundrobin;x", check, "true\r",
		"p%[x]", "127.0.0.1 check", int32(65536), uint8(2))
	f.Add("demo", "web", "\u0435xample.com", "/caf\u00e9\u202e", uint8(0), "web", "http", int32(0), balance, "", check, "",
		"\U0001F600", "10.0.0.1\x00", int32(8080), uint8(3))
	f.Add("demo", strings.Repeat("a", 254), strings.Repeat("b", 64)+".example", "/"+strings.Repeat("c", 2048), uint8(0), "web", "http", int32(0), balance, "", check, "",
		strings.Repeat("d", 254), "10.0.0.1", int32(8080), uint8(0))
	f.Add("demo", "db", "db.demo.localhost", "/", uint8(0), "db", "tls", int32(0), passthrough, "true", check, "false",
		"db-0", "127.0.0.1", int32(5432), uint8(0))
	f.Add("demo", "shop", "shop.demo.localhost", "/", uint8(0), "shop", "http", int32(0), sticky, "true", weights, "shop=80,canary=20",
		"shop-0", "127.0.0.1", int32(8080), uint8(1))
	f.Fuzz(func(t *testing.T, ns, name, host, path string, pathType uint8, svcName, portName string, portNumber int32,
		annA uint8, valueA string, annB uint8, valueB string, pod, addr string, slicePort int32, mode uint8) {
		pt := []networkingv1.PathType{networkingv1.PathTypePrefix, networkingv1.PathTypeExact, networkingv1.PathTypeImplementationSpecific}[int(pathType)%3]
		port := networkingv1.ServiceBackendPort{Name: portName, Number: portNumber}
		ing := &networkingv1.Ingress{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{}},
			Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: host,
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
					Path: path, PathType: &pt,
					Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: svcName, Port: port}},
				}}}}}}},
		}
		if valueA != "" {
			ing.Annotations[pickAnnotation(kube.KindIngress, annA)] = valueA
		}
		if valueB != "" {
			ing.Annotations[pickAnnotation(kube.KindIngress, annB)] = valueB
		}
		routes, err := kube.IngressRoutes(ing)
		if err != nil {
			rejectionOK(t, err)
			return
		}

		svcPort := corev1.ServicePort{Name: portName, Port: portNumber}
		if portName == "" && portNumber == 0 {
			svcPort.Port = 80
		}
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: svcName}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{svcPort}}}
		at := discoveryv1.AddressTypeIPv4
		if strings.Contains(addr, ":") {
			at = discoveryv1.AddressTypeIPv6
		}
		sl := &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: svcName + "-abcde"},
			AddressType: at,
			Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &slicePort}},
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{addr},
				TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: pod}}},
		}
		if err := kube.ValidateEndpointSlice(sl); err != nil {
			rejectionOK(t, err)
		}
		var desired dcm.Desired
		for _, r := range routes {
			desired.Backends = append(desired.Backends, &dcm.DesiredBackend{Name: r.BackendName(), Route: r,
				Endpoints: kube.ServiceEndpoints(svc, []*discoveryv1.EndpointSlice{sl}, r.Services[0].Port)})
		}
		slices.SortFunc(desired.Backends, func(a, b *dcm.DesiredBackend) int { return strings.Compare(a.Name, b.Name) })
		caps := []dcm.Caps{{Mode: dcm.ModeDynamic, AddServer: true}, {Mode: dcm.ModeSlots, Slots: 2, AddServer: true}}[int(mode)%2]

		// The file path: a reload renders the whole desired state.
		files, err := haproxy.Render(fuzzSettings, plan.Fresh(desired, caps))
		if err != nil {
			t.Fatalf("kube accepted what the renderer refuses: %v", err)
		}
		checkFiles(t, files, desired)

		// The runtime path: the backends exist, the endpoints arrive.
		empty := dcm.Desired{Backends: slices.Clone(desired.Backends)}
		for i := range empty.Backends {
			empty.Backends[i].Endpoints = nil
		}
		p := plan.Compute(plan.Fresh(empty, caps), desired, caps)
		for _, op := range p.Ops {
			cmd, err := haproxy.CommandFor(op, haproxy.HTTP2{})
			if err != nil {
				t.Fatalf("kube accepted what the command builder refuses: %v", err)
			}
			if !commandShape.MatchString(cmd.String()) {
				t.Fatalf("command %q", cmd)
			}
		}
	})
}

// FuzzRouteToHAProxy: any strings of an OpenShift Route (namespace, name,
// host, path, services, target port, any annotation of the table, picked
// by index) are either refused with a reason, or what dcm renders and
// sends for the Route has the expected shape. Cookies are off unless the
// fuzzer turns them on.
func FuzzRouteToHAProxy(f *testing.F) {
	balance := annotationIndex(kube.KindRoute, kube.AnnotationRouteBalance)
	cookies := annotationIndex(kube.KindRoute, kube.AnnotationRouteDisableCookies)
	allow := annotationIndex(kube.KindRoute, kube.AnnotationRouteIPAllowlist)
	f.Add("demo", "web", "web.demo.localhost", "/api", "web", "canary", "http", int64(80), balance, "", "10.0.0.1", int32(8080))
	f.Add("demo", "web", "", "", "web", "", "8080", int64(0), balance, "leastconn", "fd00::1", int32(1))
	f.Add("de;mo", "w\neb", "A B.example", "/a#b", "s'x", "web", "ht\"tp", int64(-1), balance, "roundrobin;x", "127.0.0.1 check", int32(65536))
	f.Add("demo", "web", "\u0435xample.com", "/caf\u00e9\u202e", "web", "web", "08080", int64(300), balance, "source", "10.0.0.1\x00", int32(8080))
	f.Add("demo", "web", "web.demo.localhost", "/", "web", "", "http", int64(100), cookies, "false", "10.0.0.1", int32(8080))
	f.Add("demo", "web", "web.demo.localhost", "/", "web", "", "http", int64(100), allow, "10.0.0.0/8", "10.0.0.1", int32(8080))
	f.Fuzz(func(t *testing.T, ns, name, host, path, to, alt, targetPort string, weight int64, annotation uint8, value, addr string, slicePort int32) {
		spec := map[string]any{"host": host, "path": path,
			"to":   map[string]any{"kind": "Service", "name": to, "weight": weight},
			"port": map[string]any{"targetPort": targetPort}}
		if alt != "" {
			spec["alternateBackends"] = []any{map[string]any{"kind": "Service", "name": alt, "weight": int64(20)}}
		}
		ann := map[string]any{kube.AnnotationRouteDisableCookies: "true"}
		if value != "" {
			ann[pickAnnotation(kube.KindRoute, annotation)] = value
		}
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "route.openshift.io/v1", "kind": "Route",
			"metadata": map[string]any{"namespace": ns, "name": name, "annotations": ann}, "spec": spec}}
		c, err := kube.RouteFromOpenShift(u, kube.RouteOptions{Subdomain: "apps.example.com"})
		if err != nil {
			rejectionOK(t, err)
			return
		}
		r := c.Route
		portName := "http"
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: to},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: portName, Port: 80}}}}
		at := discoveryv1.AddressTypeIPv4
		if strings.Contains(addr, ":") {
			at = discoveryv1.AddressTypeIPv6
		}
		sl := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: to + "-abcde"}, AddressType: at,
			Ports:     []discoveryv1.EndpointPort{{Name: &portName, Port: &slicePort}},
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{addr}}}}
		if err := kube.ValidateEndpointSlice(sl); err != nil {
			rejectionOK(t, err)
		}
		desired := dcm.Desired{Backends: []*dcm.DesiredBackend{{Name: r.BackendName(), Route: r,
			Endpoints: kube.ServiceEndpoints(svc, []*discoveryv1.EndpointSlice{sl}, portName)}}}
		caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true}
		files, err := haproxy.Render(fuzzSettings, plan.Fresh(desired, caps))
		if err != nil {
			t.Fatalf("kube accepted what the renderer refuses: %v", err)
		}
		checkFiles(t, files, desired)
		empty := dcm.Desired{Backends: slices.Clone(desired.Backends)}
		empty.Backends[0].Endpoints = nil
		for _, op := range plan.Compute(plan.Fresh(empty, caps), desired, caps).Ops {
			cmd, err := haproxy.CommandFor(op, haproxy.HTTP2{})
			if err != nil {
				t.Fatalf("kube accepted what the command builder refuses: %v", err)
			}
			if !commandShape.MatchString(cmd.String()) {
				t.Fatalf("command %q", cmd)
			}
		}
	})
}

func checkFiles(t *testing.T, files haproxy.Files, desired dcm.Desired) {
	t.Helper()
	base, err := haproxy.Render(fuzzSettings, dcm.State{})
	if err != nil {
		t.Fatal(err)
	}
	// A free sticky spare: the cookie rules every sticky backend has.
	spare, err := haproxy.Render(fuzzSettings, dcm.State{Pool: []string{"be_sticky:_pool:1"}})
	if err != nil {
		t.Fatal(err)
	}
	fixed := map[string]bool{}
	for _, l := range strings.Split(string(base.Config)+string(spare.Config), "\n") {
		fixed[l] = true
	}
	for _, l := range strings.Split(string(files.Config), "\n") {
		if !fixed[l] && !slices.ContainsFunc(cfgLineShapes, func(re *regexp.Regexp) bool { return re.MatchString(l) }) {
			t.Fatalf("unexpected cfg line %q", l)
		}
	}
	isBackend := func(s string) bool {
		return slices.ContainsFunc(desired.Backends, func(b *dcm.DesiredBackend) bool { return b.Name == s })
	}
	for name, m := range files.Maps {
		// The HTTP maps: host + path → backend; the SNI map: host →
		// backend; the insecure maps: backend or host → action.
		key, value := mapKey.MatchString, isBackend
		switch name {
		case haproxy.MapFile(dcm.MapSNI):
			key = hostKey.MatchString
		case haproxy.MapFile(dcm.MapInsecure):
			key, value = isBackend, actionValue.MatchString
		case haproxy.MapFile(dcm.MapInsecureHost):
			key, value = hostKey.MatchString, actionValue.MatchString
		case haproxy.MapFile(dcm.MapRateLimit):
			key, value = isBackend, rateValue.MatchString
		case haproxy.MapFile(dcm.MapHeaders):
			key, value = isBackend, headersValue.MatchString
		case haproxy.MapFile(dcm.MapCookieName), haproxy.MapFile(dcm.MapCookieSameSite):
			key, value = isBackend, cookieValue.MatchString
		case haproxy.MapFile(dcm.MapRewrite):
			key, value = isBackend, rewriteValue.MatchString
		case haproxy.MapFile(dcm.MapAllowlist):
			key = func(s string) bool { return isBackend(s) || chunkKey.MatchString(s) }
			value = allowValue.MatchString
		}
		for _, l := range strings.Split(strings.TrimSuffix(string(m), "\n"), "\n") {
			if l == "" {
				continue
			}
			f := strings.Split(l, " ")
			if len(f) != 2 || !key(f[0]) || !value(f[1]) {
				t.Fatalf("%s: line %q is not one key and one value of the map's shape", name, l)
			}
		}
	}
}
