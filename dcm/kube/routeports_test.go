package kube

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dcm-router/dcm/dcm"
)

// A Route without spec.port serves every port of its Service's endpoints,
// as OpenShift's router does: a Service of two ports gives each pod two
// servers. A Route naming a port serves that port alone.
func TestRouteWithoutPortServesEveryPort(t *testing.T) {
	tests := []struct {
		name string
		port any // spec.port.targetPort; nil: no spec.port
		want []dcm.Endpoint
	}{
		{"no spec.port: both ports", nil, []dcm.Endpoint{
			ep("web-0", "admin", "10.0.0.1", 9090, dcm.StateReady), ep("web-0", "http", "10.0.0.1", 8080, dcm.StateReady),
			ep("web-1", "admin", "10.0.0.2", 9090, dcm.StateReady), ep("web-1", "http", "10.0.0.2", 8080, dcm.StateReady)}},
		{"targetPort admin: that port", "admin", []dcm.Endpoint{
			ep("web-0", "admin", "10.0.0.1", 9090, dcm.StateReady), ep("web-1", "admin", "10.0.0.2", 9090, dcm.StateReady)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, cl, routes := routeSource(t, nil)
			svc := testService("web")
			svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: "admin", Port: 9000, TargetPort: intstr.FromInt32(9090)})
			_ = cl.svc.Update(svc)
			_ = cl.eps.Update(func() *discoveryv1.EndpointSlice {
				sl := slice("web-1", discoveryv1.AddressTypeIPv4, map[string]int32{"http": 8080, "admin": 9090},
					ready("web-0", "10.0.0.1"), ready("web-1", "10.0.0.2"))
				return sl
			}())
			r := osRoute("r", "r.example.com", func(spec map[string]any) {
				if tt.port == nil {
					delete(spec, "port")
				} else {
					spec["port"] = map[string]any{"targetPort": tt.port}
				}
			})
			_ = routes.Add(r)
			mustSync(t, s, "route/demo/r")
			d, _ := s.Desired()
			if len(d.Backends) != 1 {
				t.Fatalf("backends %v, rejections %+v", backendNames(d), s.Rejections())
			}
			got := slices.Clone(d.Backends[0].Endpoints)
			slices.SortFunc(got, func(a, b dcm.Endpoint) int { return strings.Compare(a.Name, b.Name) })
			want := slices.Clone(tt.want)
			slices.SortFunc(want, func(a, b dcm.Endpoint) int { return strings.Compare(a.Name, b.Name) })
			if !slices.Equal(got, want) {
				t.Errorf("endpoints\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}
