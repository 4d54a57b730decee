package demo

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func testService() *corev1.Service {
	svc := appService(App{Namespace: "demo", Name: "web", Path: "/"}, 0)
	svc.UID = "svc-uid"
	return svc
}

var httpPorts = []discoveryv1.EndpointPort{{Name: ptrTo("http"), Port: ptrTo(int32(8080)), Protocol: ptrTo(corev1.ProtocolTCP)}}

// wants makes n ready endpoints pod-000… with the http port, sorted.
func wants(from, n int, mod func(i int, ep *discoveryv1.Endpoint)) []wantEndpoint {
	var out []wantEndpoint
	for i := from; i < from+n; i++ {
		ep := discoveryv1.Endpoint{
			Addresses:  []string{fmt.Sprintf("127.0.%d.%d", 1+i/254, 1+i%254)},
			Conditions: discoveryv1.EndpointConditions{Ready: ptrTo(true), Serving: ptrTo(true), Terminating: ptrTo(false)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: "demo", Name: fmt.Sprintf("pod-%03d", i), UID: types.UID(fmt.Sprint(i))},
			NodeName:   ptrTo(nodeName),
		}
		if mod != nil {
			mod(i, &ep)
		}
		out = append(out, wantEndpoint{ports: httpPorts, ep: ep})
	}
	return out
}

// applyPlan plays a plan against a set of slices the way the API would,
// naming created slices in order.
func applyPlan(existing []*discoveryv1.EndpointSlice, p slicePlan, names *int) []*discoveryv1.EndpointSlice {
	byName := map[string]*discoveryv1.EndpointSlice{}
	for _, es := range existing {
		byName[es.Name] = es
	}
	for _, es := range p.create {
		es = es.DeepCopy()
		es.Name = fmt.Sprintf("%s%05d", es.GenerateName, *names)
		*names++
		byName[es.Name] = es
	}
	for _, es := range p.update {
		byName[es.Name] = es.DeepCopy()
	}
	for _, es := range p.delete {
		delete(byName, es.Name)
	}
	var out []*discoveryv1.EndpointSlice
	for _, k := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, byName[k])
	}
	return out
}

func TestPlanSlices(t *testing.T) {
	svc := testService()
	terminating := func(i int, ep *discoveryv1.Endpoint) {
		if i == 1 {
			ep.Conditions = discoveryv1.EndpointConditions{Ready: ptrTo(false), Serving: ptrTo(true), Terminating: ptrTo(true)}
		}
	}
	noPorts := func(w []wantEndpoint) []wantEndpoint {
		for i := range w {
			if i%2 == 1 {
				w[i].ports = nil
			}
		}
		return w
	}
	// Each step starts from the slices the previous step left.
	tests := []struct {
		name string
		want []wantEndpoint
		// creates, updates, deletes the step must make
		c, u, d int
		// endpoints per slice afterwards, in slice name order
		sizes []int
	}{
		{name: "no endpoints: one placeholder", want: nil, c: 1, sizes: []int{0}},
		{name: "placeholder filled in place", want: wants(0, 3, nil), u: 1, sizes: []int{3}},
		{name: "nothing changed: no writes", want: wants(0, 3, nil), sizes: []int{3}},
		{name: "condition change updates in place", want: wants(0, 3, terminating), u: 1, sizes: []int{3}},
		{name: "spill over 100 per slice", want: wants(0, 250, nil), u: 1, c: 2, sizes: []int{100, 100, 50}},
		{name: "unchanged large set: no writes", want: wants(0, 250, nil), sizes: []int{100, 100, 50}},
		{name: "removal touches only its slice", want: wants(1, 249, nil), u: 1, sizes: []int{99, 100, 50}},
		{name: "new endpoints fill the slice with room", want: wants(1, 250, nil), u: 1, sizes: []int{100, 100, 50}},
		{name: "emptied slice deleted", want: wants(100, 150, nil), d: 1, sizes: []int{100, 50}},
		{name: "different ports get their own slice", want: noPorts(wants(0, 4, nil)), u: 2, sizes: []int{2, 2}},
		{name: "scale to zero keeps one placeholder", want: nil, u: 1, d: 1, sizes: []int{0}},
	}
	var existing []*discoveryv1.EndpointSlice
	names := 0
	for _, tt := range tests {
		p := planSlices(svc, tt.want, existing, maxEndpointsPerSlice)
		if len(p.create) != tt.c || len(p.update) != tt.u || len(p.delete) != tt.d {
			t.Fatalf("%s: %d creates, %d updates, %d deletes; want %d %d %d", tt.name, len(p.create), len(p.update), len(p.delete), tt.c, tt.u, tt.d)
		}
		for _, es := range p.create {
			if es.Name != "" || es.GenerateName != "web-" || es.Namespace != "demo" {
				t.Errorf("%s: created slice named %q/%q in %q", tt.name, es.Name, es.GenerateName, es.Namespace)
			}
		}
		existing = applyPlan(existing, p, &names)
		var sizes []int
		got := map[string]discoveryv1.Endpoint{}
		for _, es := range existing {
			sizes = append(sizes, len(es.Endpoints))
			checkSlice(t, tt.name, svc, es)
			for _, ep := range es.Endpoints {
				if _, dup := got[endpointKey(ep)]; dup {
					t.Errorf("%s: %s in two slices", tt.name, endpointKey(ep))
				}
				got[endpointKey(ep)] = ep
			}
		}
		if !slices.Equal(sizes, tt.sizes) {
			t.Errorf("%s: slice sizes %v, want %v", tt.name, sizes, tt.sizes)
		}
		if len(got) != len(tt.want) {
			t.Errorf("%s: %d endpoints in slices, want %d", tt.name, len(got), len(tt.want))
		}
		for _, w := range tt.want {
			ep, ok := got[endpointKey(w.ep)]
			if !ok || deref(ep.Conditions.Ready) != deref(w.ep.Conditions.Ready) || deref(ep.Conditions.Terminating) != deref(w.ep.Conditions.Terminating) {
				t.Errorf("%s: endpoint %s is %+v, want %+v", tt.name, endpointKey(w.ep), ep, w.ep)
			}
		}
	}
}

// checkSlice checks what every slice of the service must carry.
func checkSlice(t *testing.T, step string, svc *corev1.Service, es *discoveryv1.EndpointSlice) {
	t.Helper()
	if es.Labels[discoveryv1.LabelServiceName] != svc.Name || es.Labels[discoveryv1.LabelManagedBy] != managedBy || es.Labels["app"] != "web" {
		t.Errorf("%s: slice %s labels %v", step, es.Name, es.Labels)
	}
	if len(es.OwnerReferences) != 1 || es.OwnerReferences[0].UID != svc.UID || !deref(es.OwnerReferences[0].Controller) {
		t.Errorf("%s: slice %s owners %+v", step, es.Name, es.OwnerReferences)
	}
	if es.AddressType != discoveryv1.AddressTypeIPv4 {
		t.Errorf("%s: slice %s address type %q", step, es.Name, es.AddressType)
	}
	if !slices.IsSortedFunc(es.Endpoints, compareEndpoints) {
		t.Errorf("%s: slice %s endpoints not sorted", step, es.Name)
	}
	if len(es.Endpoints) > maxEndpointsPerSlice {
		t.Errorf("%s: slice %s holds %d endpoints", step, es.Name, len(es.Endpoints))
	}
}

func TestPlanSlicesRepairsForeignEdits(t *testing.T) {
	svc := testService()
	want := wants(0, 2, nil)
	good := planSlices(svc, want, nil, maxEndpointsPerSlice).create[0]
	good.Name = "web-aaaaa"
	tests := []struct {
		name string
		edit func(es *discoveryv1.EndpointSlice)
	}{
		{"label removed", func(es *discoveryv1.EndpointSlice) { delete(es.Labels, "app") }},
		{"endpoint removed", func(es *discoveryv1.EndpointSlice) { es.Endpoints = es.Endpoints[:1] }},
		{"stranger added", func(es *discoveryv1.EndpointSlice) {
			es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.0.0.1"}})
		}},
		{"port changed", func(es *discoveryv1.EndpointSlice) { es.Ports[0].Port = ptrTo(int32(9)) }},
		{"owner dropped", func(es *discoveryv1.EndpointSlice) { es.OwnerReferences = nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			es := good.DeepCopy()
			tt.edit(es)
			p := planSlices(svc, want, []*discoveryv1.EndpointSlice{es}, maxEndpointsPerSlice)
			if len(p.create) != 0 || len(p.delete) != 0 || len(p.update) != 1 {
				t.Fatalf("plan %d/%d/%d creates/updates/deletes: want the slice repaired in place", len(p.create), len(p.update), len(p.delete))
			}
			if got := p.update[0]; got.Name != good.Name || !sameSlice(got, good) {
				t.Errorf("repaired slice %+v, want %+v", got, good)
			}
		})
	}
}

func TestEndpointPorts(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Ports: []corev1.ContainerPort{
		{Name: "http", ContainerPort: 8080},
		{Name: "dns", ContainerPort: 5353, Protocol: corev1.ProtocolUDP},
	}}}}}
	tests := []struct {
		name string
		sp   corev1.ServicePort
		want []int32
	}{
		{"named", corev1.ServicePort{Name: "a", Port: 80, TargetPort: intstr.FromString("http")}, []int32{8080}},
		{"named, other protocol", corev1.ServicePort{Name: "a", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("dns")}, []int32{5353}},
		{"named, protocol mismatch", corev1.ServicePort{Name: "a", Port: 53, TargetPort: intstr.FromString("dns")}, nil},
		{"named, unknown", corev1.ServicePort{Name: "a", Port: 80, TargetPort: intstr.FromString("nope")}, nil},
		{"number", corev1.ServicePort{Name: "a", Port: 80, TargetPort: intstr.FromInt32(9000)}, []int32{9000}},
		{"unset", corev1.ServicePort{Name: "a", Port: 80}, []int32{80}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{tt.sp}}}
			var got []int32
			for _, p := range endpointPorts(svc, pod) {
				got = append(got, *p.Port)
				if *p.Name != "a" {
					t.Errorf("port name %q", *p.Name)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("ports %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSliceLabels(t *testing.T) {
	svc := testService()
	svc.Labels = map[string]string{"team": "a", discoveryv1.LabelManagedBy: "someone"}
	svc.Spec.ClusterIP = corev1.ClusterIPNone
	got := sliceLabels(svc)
	want := map[string]string{"team": "a", discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: managedBy, corev1.IsHeadlessService: ""}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("labels %v, want %v", got, want)
	}
}

func TestPlanSlicesFillsChangedSlicesFirst(t *testing.T) {
	svc := testService()
	var existing []*discoveryv1.EndpointSlice
	names := 0
	for _, part := range [][2]int{{0, 50}, {50, 10}} {
		p := planSlices(svc, wants(part[0], part[1], nil), nil, maxEndpointsPerSlice)
		existing = applyPlan(existing, p, &names)
	}
	// Pod 59 goes, pod 60 comes: the slice losing 59 is written anyway, so
	// 60 joins it rather than the first slice, which has room too.
	want := append(wants(0, 59, nil), wants(60, 1, nil)...)
	p := planSlices(svc, want, existing, maxEndpointsPerSlice)
	if len(p.create) != 0 || len(p.delete) != 0 || len(p.update) != 1 || p.update[0].Name != existing[1].Name {
		t.Fatalf("plan %d/%d/%d creates/updates/deletes, want one update of %s", len(p.create), len(p.update), len(p.delete), existing[1].Name)
	}
	if n := len(p.update[0].Endpoints); n != 10 {
		t.Errorf("updated slice holds %d endpoints, want 10", n)
	}
}

// TestEndpointConditions: the conditions of the real endpointslice
// controller (podToEndpoint) for every pod state.
func TestEndpointConditions(t *testing.T) {
	for _, tc := range []struct {
		name                        string
		publish, podReady, deleted  bool
		ready, serving, terminating bool
	}{
		{"starting", false, false, false, false, false, false},
		{"ready", false, true, false, true, true, false},
		{"terminating, still Ready", false, true, true, false, true, true},
		{"terminating, stopped", false, false, true, false, false, true},
		{"publishNotReadyAddresses: starting", true, false, false, true, false, false},
		{"publishNotReadyAddresses: terminating", true, true, true, true, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := &corev1.Service{Spec: corev1.ServiceSpec{PublishNotReadyAddresses: tc.publish}}
			c := endpointConditions(svc, tc.podReady, tc.deleted)
			if *c.Ready != tc.ready || *c.Serving != tc.serving || *c.Terminating != tc.terminating {
				t.Errorf("ready=%v serving=%v terminating=%v, want %v %v %v", *c.Ready, *c.Serving, *c.Terminating, tc.ready, tc.serving, tc.terminating)
			}
		})
	}
}
