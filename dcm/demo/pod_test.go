package demo

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// podNameRE is how dcm/kube recognises a Deployment's pods.
var podNameRE = regexp.MustCompile(`^([a-z0-9][a-z0-9.-]*)-[a-z0-9]{6,10}-[a-z0-9]{5}$`)

func TestAddrPool(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name string
		// ops run in order: "a" allocates and expects want, "r<i>" releases
		// index i, "u<i>" marks index i unusable.
		ops  []string
		want []string // one address per "a"
	}{
		{name: "first addresses", ops: []string{"a", "a", "a"}, want: []string{"127.0.1.1", "127.0.1.2", "127.0.1.3"}},
		{name: "released address reused first", ops: []string{"a", "a", "a", "r1", "a", "a"},
			want: []string{"127.0.1.1", "127.0.1.2", "127.0.1.3", "127.0.1.2", "127.0.1.4"}},
		{name: "unusable address skipped", ops: []string{"u0", "a", "a"}, want: []string{"127.0.1.2", "127.0.1.3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newAddrPool([2]byte{127, 0})
			var got []string
			for _, op := range tt.ops {
				switch op[0] {
				case 'a':
					i, ok := p.alloc(now)
					if !ok {
						t.Fatalf("pool empty")
					}
					got = append(got, p.addr(i).String())
				case 'r':
					p.release(int(op[1] - '0'))
				case 'u':
					p.unusable(int(op[1]-'0'), now.Add(time.Minute))
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}

	t.Run("skips .0 and .255", func(t *testing.T) {
		p := newAddrPool([2]byte{127, 0})
		tests := map[int]string{0: "127.0.1.1", 253: "127.0.1.254", 254: "127.0.2.1", poolSize - 1: "127.0.255.254"}
		for i, want := range tests {
			if got := p.addr(i).String(); got != want {
				t.Errorf("addr(%d) = %s, want %s", i, got, want)
			}
		}
	})
	t.Run("avoidance expires", func(t *testing.T) {
		p := newAddrPool([2]byte{127, 0})
		p.unusable(0, now.Add(time.Second))
		if i, _ := p.alloc(now); i != 1 {
			t.Errorf("allocated %d while 0 is avoided", i)
		}
		if i, _ := p.alloc(now.Add(2 * time.Second)); i != 0 {
			t.Errorf("allocated %d after the avoidance of 0 expired", i)
		}
	})
	t.Run("exhausted", func(t *testing.T) {
		p := newAddrPool([2]byte{127, 0})
		for range poolSize {
			if _, ok := p.alloc(now); !ok {
				t.Fatalf("pool ran out early")
			}
		}
		if _, ok := p.alloc(now); ok {
			t.Errorf("allocated past the pool's size")
		}
	})
}

func TestParseAddrPrefix(t *testing.T) {
	tests := []struct {
		in   string
		want [2]byte
		ok   bool
	}{
		{"127.0.", [2]byte{127, 0}, true},
		{"10.200.", [2]byte{10, 200}, true},
		{"127.0", [2]byte{}, false},
		{"127.", [2]byte{}, false},
		{"127.0.0.", [2]byte{}, false},
		{"127.256.", [2]byte{}, false},
		{"127.00.", [2]byte{}, false},
		{"::1.", [2]byte{}, false},
	}
	for _, tt := range tests {
		got, err := parseAddrPrefix(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseAddrPrefix(%q) = %v, %v; want %v ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestPodHandler(t *testing.T) {
	srv := httptest.NewServer(podHandler("web-abc-12345"))
	defer srv.Close()
	tests := []struct {
		path       string
		wantStatus int
		wantBody   string
		minTime    time.Duration
	}{
		{"/", 200, "web-abc-12345\n", 0},
		{"/api/users?x=1", 200, "web-abc-12345\n", 0},
		{"/healthz", 200, "ok\n", 0},
		{"/slow?ms=120", 200, "web-abc-12345\n", 120 * time.Millisecond},
		{"/slow?ms=0", 200, "web-abc-12345\n", 0},
		{"/slow", 400, "", 0},
		{"/slow?ms=-5", 400, "", 0},
		{"/slow?ms=abc", 400, "", 0},
		{"/slow?ms=99999999999999999999", 400, "", 0}, // beyond int64
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			start := time.Now()
			resp, err := srv.Client().Get(srv.URL + tt.path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.wantStatus || tt.wantBody != "" && string(body) != tt.wantBody {
				t.Errorf("%d %q, want %d %q", resp.StatusCode, body, tt.wantStatus, tt.wantBody)
			}
			if resp.Header.Get("X-Pod") != "web-abc-12345" {
				t.Errorf("X-Pod %q", resp.Header.Get("X-Pod"))
			}
			if took := time.Since(start); took < tt.minTime {
				t.Errorf("answered after %v, want at least %v", took, tt.minTime)
			}
		})
	}

	t.Run("slow stops when the client leaves", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/slow?ms=60000", nil)
		start := time.Now()
		if _, err := srv.Client().Do(req); err == nil {
			t.Fatalf("want the client's timeout")
		}
		// httptest.Server.Close waits for handlers: it would hang for a
		// minute if the handler kept sleeping.
		if time.Since(start) > 5*time.Second {
			t.Errorf("took %v", time.Since(start))
		}
	})
}

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
	p.ip, p.started = newAddrPool([2]byte{127, 0}).addr(4), time.Now()
	if st := s.podStatus(p); st.Phase != corev1.PodRunning || st.PodIP != "127.0.1.5" || ready(st) != corev1.ConditionFalse ||
		len(st.ContainerStatuses) != 1 || st.ContainerStatuses[0].Ready {
		t.Errorf("listening pod: %+v", st)
	}
	p.ready, p.readySince = true, time.Now()
	if st := s.podStatus(p); ready(st) != corev1.ConditionTrue || !st.ContainerStatuses[0].Ready {
		t.Errorf("ready pod: %+v", st)
	}
}
