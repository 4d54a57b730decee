package demo

import (
	"net/netip"
	"regexp"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// podNameRE is how dcm/kube recognises a Deployment's pods.
var podNameRE = regexp.MustCompile(`^([a-z0-9][a-z0-9.-]*)-[a-z0-9]{6,10}-[a-z0-9]{5}$`)

func TestTemplateHash(t *testing.T) {
	opts := Options{PodPort: 8080, TerminationGrace: time.Second, PreStopDelay: time.Second}
	a := appDeployment(App{Namespace: "demo", Name: "web", Path: "/"}, opts).Spec.Template
	b := appDeployment(App{Namespace: "other", Name: "web", Path: "/x", Replicas: 9}, opts).Spec.Template
	c := appDeployment(App{Namespace: "demo", Name: "shop", Path: "/"}, opts).Spec.Template
	ha, hb, hc := templateHash(&a), templateHash(&b), templateHash(&c)
	if ha != hb {
		t.Errorf("equal templates hash differently: %s %s", ha, hb)
	}
	if ha == hc {
		t.Errorf("different templates hash the same: %s", ha)
	}
	if !regexp.MustCompile(`^[bcdfghjklmnpqrstvwxz2456789]{10}$`).MatchString(ha) {
		t.Errorf("hash %q: want 10 characters of the name alphabet", ha)
	}
	if name := "web-" + ha + "-" + newNameGen(1).suffix(5); !podNameRE.MatchString(name) {
		t.Errorf("pod name %q does not look like a Deployment's", name)
	}
}

func TestNameGen(t *testing.T) {
	a, b := newNameGen(7), newNameGen(7)
	seen := map[string]bool{}
	for range 200 {
		x, y := a.suffix(5), b.suffix(5)
		if x != y {
			t.Fatalf("same seed, different names: %s %s", x, y)
		}
		seen[x] = true
	}
	if len(seen) < 190 {
		t.Errorf("only %d distinct names out of 200", len(seen))
	}
}

func TestDeleteFirst(t *testing.T) {
	t0 := time.Now()
	mk := func(name string, bound, ready bool, readyAgo, createdAgo time.Duration) rankedPod {
		return rankedPod{p: &pod{name: name}, bound: bound, ready: ready, readySince: t0.Add(-readyAgo), created: t0.Add(-createdAgo)}
	}
	pods := []rankedPod{
		mk("old-ready", true, true, time.Hour, 2*time.Hour),
		mk("new-ready", true, true, time.Minute, 3*time.Hour),
		mk("not-ready-old", true, false, 0, time.Hour),
		mk("not-ready-new", true, false, 0, time.Second),
		mk("pending", false, false, 0, 5*time.Hour),
	}
	slices.SortFunc(pods, deleteFirst)
	var got []string
	for _, p := range pods {
		got = append(got, p.p.name)
	}
	want := []string{"pending", "not-ready-new", "not-ready-old", "new-ready", "old-ready"}
	if !slices.Equal(got, want) {
		t.Errorf("victim order %v, want %v", got, want)
	}
}

func TestPodStatus(t *testing.T) {
	s, err := newSimulator(nil, Options{AddrPrefix: "127.0.", PodPort: 8080}, newNameGen(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	p := &pod{
		name: "x", created: time.Now(),
		object: &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "img"}}}},
	}
	ready := func(st corev1.PodStatus) corev1.ConditionStatus {
		for _, c := range st.Conditions {
			if c.Type == corev1.PodReady {
				return c.Status
			}
		}
		return ""
	}
	if st := s.podStatus(p); st.Phase != corev1.PodPending || st.PodIP != "" || ready(st) != "" {
		t.Errorf("unbound pod: %+v", st)
	}
	p.ip, p.started = netip.MustParseAddr("127.0.1.5"), time.Now()
	if st := s.podStatus(p); st.Phase != corev1.PodRunning || st.PodIP != "127.0.1.5" || ready(st) != corev1.ConditionFalse ||
		len(st.ContainerStatuses) != 1 || st.ContainerStatuses[0].Ready {
		t.Errorf("listening pod: %+v", st)
	}
	p.ready, p.readySince = true, time.Now()
	if st := s.podStatus(p); ready(st) != corev1.ConditionTrue || !st.ContainerStatuses[0].Ready {
		t.Errorf("ready pod: %+v", st)
	}
}
