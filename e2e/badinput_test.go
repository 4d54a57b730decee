package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/e2e/harness"
)

func ingress(name, host, path string) *networkingv1.Ingress {
	prefix := networkingv1.PathTypePrefix
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{
			Host: host,
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
				Path: path, PathType: &prefix,
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
					Name: "web", Port: networkingv1.ServiceBackendPort{Name: "http"}}},
			}}}},
		}}},
	}
}

func hostileSlice(name, pod, addr, port string) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name,
			Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(port), Port: ptr.To[int32](8080)}},
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{addr},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: "demo", Name: pod},
		}},
	}
}

// TestHostileObjectsAreRejectedAlone: Ingresses and EndpointSlices carrying
// characters that would break an HAProxy command or the cfg (';', newline,
// space, '#', non-ASCII) are rejected one by one, reported, and never reach
// HAProxy; every other route keeps serving without a reload.
func TestHostileObjectsAreRejectedAlone(t *testing.T) {
	s := harness.Start(t, harness.Options{})
	s.DemoServes(webHost, "/", "demo", "web", 2)
	rec := s.Subscribe(t)
	pid := s.WorkerPID()
	web := s.StartLoad(webHost, "/")
	ctx := context.Background()

	ingresses := []*networkingv1.Ingress{
		ingress("evil-semicolon", "evil.demo.localhost", "/a;del server x"),
		ingress("evil-newline", "evil.demo.localhost", "/a\nbackend x"),
		ingress("evil-space", "evil.demo.localhost", "/a b"),
		ingress("evil-hash", "evil.demo.localhost", "/a#b"),
		ingress("evil-unicode", "evil.demo.localhost", "/caf\u00e9"),
		ingress("evil-host", "evil;.demo.localhost", "/"),
		ingress("evil-host-unicode", "\u0435vil.demo.localhost", "/"),
	}
	for _, ing := range ingresses {
		if _, err := s.Client.NetworkingV1().Ingresses("demo").Create(ctx, ing, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	slices := []*discoveryv1.EndpointSlice{
		hostileSlice("web-evil-pod", "x;y", "127.0.9.1", "http"),
		hostileSlice("web-evil-newline", "x\ny", "127.0.9.2", "http"),
		hostileSlice("web-evil-addr", "ok-pod", "127.0.9.3 check", "http"),
		hostileSlice("web-evil-port", "ok-pod2", "127.0.9.4", "ht tp"),
		hostileSlice("web-evil-hash", "a#b", "127.0.9.5", "http"),
	}
	for _, sl := range slices {
		if _, err := s.Client.DiscoveryV1().EndpointSlices("demo").Create(ctx, sl, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	want := len(ingresses) + len(slices)
	s.Eventually("every hostile object is rejected", 10*time.Second, func() error {
		if got := s.Counter("dcm_rejected_objects_total"); int(got) < want {
			return fmt.Errorf("%v rejections, want %d", got, want)
		}
		return nil
	})
	rejected := map[string]bool{}
	for _, r := range s.Engine.Snapshot().Rejected {
		rejected[r.Object.Kind+"/"+r.Object.Name] = true
		if r.Reason == "" || r.Message == "" {
			t.Errorf("rejection of %s lacks a reason or message: %+v", r.Object, r)
		}
	}
	for _, ing := range ingresses {
		if !rejected["Ingress/"+ing.Name] {
			t.Errorf("Ingress %s not listed as rejected", ing.Name)
		}
	}
	for _, sl := range slices {
		if !rejected["EndpointSlice/"+sl.Name] {
			t.Errorf("EndpointSlice %s not listed as rejected", sl.Name)
		}
	}
	s.Eventually("a rejected event per object", 5*time.Second, func() error {
		events := 0
		for _, ev := range rec.Events() {
			if ev.Type == dcm.EventRejected {
				events++
			}
		}
		if events < want {
			return fmt.Errorf("%d rejected events, want %d", events, want)
		}
		return nil
	})

	// Nothing of them reached HAProxy's files.
	s.Engine.FlushFiles() // written behind the syncs
	for _, name := range []string{"haproxy.cfg", "maps/host_exact.map", "maps/host_prefix.map"} {
		b, err := os.ReadFile(filepath.Join(s.Dir, name))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for _, bad := range []string{"evil", "x;y", "127.0.9.", "del server"} {
			if strings.Contains(string(b), bad) {
				t.Errorf("%s contains %q", name, bad)
			}
		}
	}
	s.DemoServes(webHost, "/", "demo", "web", 2)
	if ok, fail, last := web.Finish(); fail > 0 || ok == 0 {
		t.Errorf("web failed %d of %d requests while hostile objects arrived (last: %s)", fail, ok+fail, last)
	}
	if s.WorkerPID() != pid {
		t.Error("HAProxy reloaded for objects that were all rejected")
	}

	// Fixed, an Ingress is accepted and served.
	fixed := ingress("evil-semicolon", "fixed.demo.localhost", "/")
	if _, err := s.Client.NetworkingV1().Ingresses("demo").Update(ctx, fixed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Eventually("the fixed Ingress serves", 10*time.Second, func() error {
		return s.ServesExactly("fixed.demo.localhost", "/", s.ReadyPods("demo", "web"), 4)
	})
	for _, r := range s.Engine.Snapshot().Rejected {
		if r.Object.Name == "evil-semicolon" {
			t.Error("the fixed Ingress is still listed as rejected")
		}
	}
}
