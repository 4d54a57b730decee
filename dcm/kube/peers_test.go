package kube

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func peerSlice(name, service string, ports map[string]int32, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "dcm-system", Name: name,
		Labels: map[string]string{discoveryv1.LabelServiceName: service}}, AddressType: discoveryv1.AddressTypeIPv4, Endpoints: eps}
	for n, p := range ports {
		s.Ports = append(s.Ports, discoveryv1.EndpointPort{Name: &n, Port: &p})
	}
	return s
}

func peerEndpoint(addr, pod string, ready bool) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: &ready},
		TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: pod}}
}

// TestPeerSlices: every ready endpoint of the Service's slices is a
// replica on the portal's port, named by its pod; this replica's pod is
// marked; other Services' slices and unready endpoints are not replicas.
func TestPeerSlices(t *testing.T) {
	client := fake.NewClientset(
		peerSlice("dcm-a", "dcm", map[string]int32{"api": 8080, "http": 8000},
			peerEndpoint("10.0.0.1", "dcm-1", true), peerEndpoint("10.0.0.2", "dcm-2", true), peerEndpoint("10.0.0.3", "dcm-3", false)),
		peerSlice("dcm-b", "dcm", map[string]int32{"api": 8080}, peerEndpoint("10.0.0.1", "dcm-1", true)),
		peerSlice("other", "other", map[string]int32{"api": 8080}, peerEndpoint("10.0.0.9", "other-1", true)),
	)
	p := NewPeerSlices(client, "dcm-system", "dcm", "api", "dcm-2")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(5 * time.Second)
	for len(p.Peers()) < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	want := []Peer{{Name: "dcm-1", URL: "http://10.0.0.1:8080"}, {Name: "dcm-2", URL: "http://10.0.0.2:8080", Self: true}}
	got := p.Peers()
	if len(got) != len(want) {
		t.Fatalf("peers %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("peer %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestParsePeerService(t *testing.T) {
	for _, tt := range []struct{ in, ns, name, port string }{
		{"dcm-system/dcm", "dcm-system", "dcm", ""},
		{"dcm-system/dcm:api", "dcm-system", "dcm", "api"},
		{"dcm", "", "", ""},
		{"/dcm", "", "", ""},
	} {
		ns, name, port, err := ParsePeerService(tt.in)
		if (err != nil) != (tt.ns == "") || ns != tt.ns || name != tt.name || port != tt.port {
			t.Errorf("%q: %q %q %q %v", tt.in, ns, name, port, err)
		}
	}
}
