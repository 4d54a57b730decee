package kube

import (
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/dcm-router/dcm/dcm"
)

// TestBackendForTerminatingFallback: the conditions the endpointslice
// controller writes for a deleted pod that is still Ready (ready false,
// serving true, terminating true) give a ready server while the service
// has no ready endpoint, as kube-proxy's terminating-endpoint fallback, and
// a draining one once it has; per service on a split route.
func TestBackendForTerminatingFallback(t *testing.T) {
	f, tr := ptr(false), ptr(true)
	terminating := func(pod, addr string) epSpec {
		return epSpec{pod: pod, addr: addr, ready: f, serving: tr, terminating: tr}
	}
	stopped := func(pod, addr string) epSpec {
		return epSpec{pod: pod, addr: addr, ready: f, serving: f, terminating: tr}
	}
	starting := func(pod, addr string) epSpec { return epSpec{pod: pod, addr: addr, ready: f, serving: f} }
	view := func(eps ...epSpec) *serviceView {
		return &serviceView{svc: service("x", v4, httpPort), slices: []*discoveryv1.EndpointSlice{
			slice("x-a", discoveryv1.AddressTypeIPv4, map[string]int32{"http": 8080}, eps...)}}
	}
	type want struct {
		state       dcm.AdminState
		terminating bool
	}
	one := []dcm.ServiceRef{{Name: "web", Port: "http", Weight: 1}}
	split := []dcm.ServiceRef{{Name: "web", Port: "http", Weight: 80}, {Name: "canary", Port: "http", Weight: 20}}
	for _, tc := range []struct {
		name     string
		services []dcm.ServiceRef
		views    []*serviceView
		want     map[string]want
	}{
		{"the last pod terminates: it stays ready", one,
			[]*serviceView{view(terminating("old", "10.0.0.1"))},
			map[string]want{"old": {dcm.StateReady, true}}},
		{"its replacement is not ready yet: still ready", one,
			[]*serviceView{view(terminating("old", "10.0.0.1"), starting("new", "10.0.0.2"))},
			map[string]want{"old": {dcm.StateReady, true}, "new": {dcm.StateMaint, false}}},
		{"the replacement is ready: the old one drains", one,
			[]*serviceView{view(terminating("old", "10.0.0.1"), ready("new", "10.0.0.2"))},
			map[string]want{"old": {dcm.StateDrain, true}, "new": {dcm.StateReady, false}}},
		{"no longer serving: maint, fallback or not", one,
			[]*serviceView{view(stopped("old", "10.0.0.1"))},
			map[string]want{"old": {dcm.StateMaint, false}}},
		{"publishNotReadyAddresses: ready although terminating", one,
			[]*serviceView{view(epSpec{pod: "old", addr: "10.0.0.1", ready: tr, serving: tr, terminating: tr})},
			map[string]want{"old": {dcm.StateReady, false}}},
		{"split route: per service", split,
			[]*serviceView{view(ready("web-1", "10.0.0.1"), terminating("web-2", "10.0.0.2")), view(terminating("canary-1", "10.0.1.1"))},
			map[string]want{"web-1": {dcm.StateReady, false}, "web-2": {dcm.StateDrain, true}, "canary-1": {dcm.StateReady, true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := dcm.Route{Namespace: "demo", Name: "web", Kind: dcm.KindHTTP, Services: tc.services}
			b := backendFor(r, tc.views)
			got := map[string]want{}
			for _, e := range b.Endpoints {
				got[e.Pod] = want{e.State, e.Terminating}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("endpoints %v, want %v", got, tc.want)
			}
			for pod, w := range tc.want {
				if got[pod] != w {
					t.Errorf("%s: %+v, want %+v", pod, got[pod], w)
				}
			}
			if len(tc.services) > 1 {
				w := dcm.ServerWeights([]int{80, 20}, []int{1, 1})
				for _, e := range b.Endpoints {
					if e.Pod == "canary-1" && e.Weight != w[1] {
						t.Errorf("canary-1 weighs %d, want %d: its service keeps its share", e.Weight, w[1])
					}
				}
			}
		})
	}
}
