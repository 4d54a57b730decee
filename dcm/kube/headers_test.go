package kube_test

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/kube"
	"github.com/dcm-router/dcm/dcm/routing"
	"github.com/dcm-router/dcm/internal/injection"
)

type obj = map[string]any

// headerRoute is the corpus's base Route with spec.httpHeaders.actions.
func headerRoute(request, response []any) map[string]any {
	r := injection.Route("demo", "web", "ok.example.com")
	r["spec"].(obj)["httpHeaders"] = obj{"actions": obj{"request": request, "response": response}}
	return r
}

func set(name, value string) any {
	return obj{"name": name, "action": obj{"type": "Set", "set": obj{"value": value}}}
}

func del(name string) any { return obj{"name": name, "action": obj{"type": "Delete"}} }

func TestRouteHeaders(t *testing.T) {
	r := headerRoute([]any{set("X-A", "a %[req.hdr(Host),lower]"), del("X-B")}, []any{set("X-Frame-Options", "DENY")})
	got, err := kube.RouteFromOpenShift(&unstructured.Unstructured{Object: r}, kube.RouteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h := got.Route.Headers
	if h == nil || len(h.Request) != 2 || len(h.Response) != 1 || h.Request[0] != (dcm.HeaderAction{Name: "X-A", Type: "Set", Value: "a %[req.hdr(Host),lower]"}) ||
		h.Request[1] != (dcm.HeaderAction{Name: "X-B", Type: "Delete"}) || h.Response[0].Value != "DENY" {
		t.Errorf("headers %+v", h)
	}
	for _, c := range []struct {
		name         string
		req, res     []any
		reason, path string
	}{
		{"reserved", []any{del("Cookie")}, nil, dcm.RejectUnsupported, "spec.httpHeaders.actions.request[0].name (reserved header)"},
		{"framing", nil, []any{set("Content-Length", "1")}, dcm.RejectUnsupported, "spec.httpHeaders.actions.response[0].name (reserved header)"},
		{"fetch", []any{set("X-A", "%[src]")}, nil, dcm.RejectInvalidValue, "spec.httpHeaders.actions.request[0].value (only %%, %[req.hdr(name)], %[res.hdr(name)], %[ssl_c_der] with lower, base64 and +Q)"},
		{"set on delete", []any{obj{"name": "X-A", "action": obj{"type": "Delete", "set": obj{"value": "x"}}}}, nil, dcm.RejectInvalidValue, "spec.httpHeaders.actions.request[0].action.set"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := kube.RouteFromOpenShift(&unstructured.Unstructured{Object: headerRoute(c.req, c.res)}, kube.RouteOptions{})
			kube.CheckRefusal(t, err, c.reason, c.path)
		})
	}
}

// TestHeaderInjection puts every hostile value of the corpus into a
// header name and a header value of a Route and of the Ingress
// annotations: each is refused for that object, or, where OpenShift
// accepts it in a value (';', quotes, '#', spaces, a sample fetch it
// allows), reaches the headers map hex-encoded: the map value holds only
// its alphabet and never the marker.
func TestHeaderInjection(t *testing.T) {
	for _, h := range injection.Hostile {
		name := "X-" + injection.Marker + h.Value + "x"
		value := "v" + injection.Marker + h.Value + "x"
		for _, c := range []struct {
			field string
			route map[string]any
		}{
			{"name", headerRoute([]any{set(name, "v")}, nil)},
			{"delete name", headerRoute(nil, []any{del(name)})},
			{"value", headerRoute([]any{set("X-A", value)}, nil)},
			{"response value", headerRoute(nil, []any{set("X-A", value)})},
		} {
			t.Run(h.Name+"/route "+c.field, func(t *testing.T) {
				got, err := kube.RouteFromOpenShift(&unstructured.Unstructured{Object: c.route}, kube.RouteOptions{})
				encodedOnly(t, got.Route, err)
			})
		}
		for _, a := range []string{kube.AnnotationRequestHeaders, kube.AnnotationResponseHeaders} {
			for field, v := range map[string]string{"name": name + ": v", "value": "X-A: " + value, "delete": "delete " + name} {
				t.Run(h.Name+"/"+a+" "+field, func(t *testing.T) {
					ing, _ := injObjects()
					ing.Annotations[a] = v
					routes, err := kube.IngressRoutes(ing)
					var r dcm.Route
					if len(routes) > 0 {
						r = routes[0]
					}
					encodedOnly(t, r, err)
				})
			}
		}
	}
}

func encodedOnly(t *testing.T, r dcm.Route, err error) {
	t.Helper()
	if err != nil {
		var ie *dcm.InvalidError
		if !errors.As(err, &ie) || !strings.Contains(ie.Field, "eader") && !strings.Contains(ie.Field, "httpHeaders") {
			t.Fatalf("refused for another field: %v", err)
		}
		return
	}
	v := routing.HeaderValue(r)
	if v == "" {
		t.Fatal("accepted without a headers entry")
	}
	if err := routing.ValidateHeaderValue("v", v); err != nil || strings.Contains(v, injection.Marker) {
		t.Fatalf("map value %q: %v", v, err)
	}
}
