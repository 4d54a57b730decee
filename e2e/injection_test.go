package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/internal/injection"
)

// injIngress is a valid Ingress of its own host to the demo's web Service,
// with a default backend, named so that any trace of it carries the marker.
func injIngress(n int) *networkingv1.Ingress {
	ing := ingress(fmt.Sprintf("%s-%d", injection.Marker, n), fmt.Sprintf("%s-%d.demo.localhost", injection.Marker, n), "/")
	ing.Annotations = map[string]string{}
	ing.Spec.DefaultBackend = &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
		Name: "web", Port: networkingv1.ServiceBackendPort{Name: "http"}}}
	return ing
}

// injSlice is a valid EndpointSlice of the web Service whose one endpoint
// nothing listens on: were it accepted, web would send requests there.
func injSlice(n int) *discoveryv1.EndpointSlice {
	return hostileSlice(fmt.Sprintf("web-%s-%d", injection.Marker, n), fmt.Sprintf("%s-pod-%d", injection.Marker, n),
		fmt.Sprintf("127.0.9.%d", n%250+1), "http")
}

// injCase is one object of the corpus and the refusal it must get.
type injCase struct {
	what   string
	ing    *networkingv1.Ingress
	slice  *discoveryv1.EndpointSlice
	reason string
}

func (c injCase) ref() dcm.ObjectRef {
	if c.ing != nil {
		return dcm.ObjectRef{Kind: "Ingress", Namespace: c.ing.Namespace, Name: c.ing.Name}
	}
	return dcm.ObjectRef{Kind: "EndpointSlice", Namespace: c.slice.Namespace, Name: c.slice.Name}
}

// injCases puts every hostile value of the corpus into every field that can
// reach HAProxy, one object per value and field.
func injCases() []injCase {
	var cases []injCase
	add := func(what string, slice bool, set func(*networkingv1.Ingress, *discoveryv1.EndpointSlice), reason string) {
		n := len(cases) + 1
		c := injCase{what: what, reason: reason}
		ing, sl := injIngress(n), injSlice(n)
		set(ing, sl)
		if slice {
			c.slice = sl
		} else {
			c.ing = ing
		}
		cases = append(cases, c)
	}
	for _, f := range injection.StringFields {
		for _, v := range f.Values() {
			add(f.Name+"/"+v.Name, f.Slice(), func(i *networkingv1.Ingress, s *discoveryv1.EndpointSlice) { f.Set(i, s, v.V) }, f.Reason)
		}
	}
	for _, f := range injection.PortFields {
		for _, p := range injection.HostilePorts {
			add(fmt.Sprintf("%s/%d", f.Name, p), f.Slice(), func(i *networkingv1.Ingress, s *discoveryv1.EndpointSlice) { f.Set(i, s, p) }, dcm.RejectInvalidPort)
		}
	}
	return cases
}

// noTrace fails when the marker of the corpus is anywhere HAProxy reads
// from: haproxy.cfg, the map files, the commands sent to the admin socket.
func noTrace(t *testing.T, s *harness.Stack) {
	t.Helper()
	s.Engine.FlushFiles() // written behind the syncs
	files, err := filepath.Glob(filepath.Join(s.Dir, "maps", "*.map"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(s.Dir, "haproxy.cfg"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), injection.Marker) {
			t.Errorf("%s holds a value of the injection corpus:\n%s", name, b)
		}
	}
	cmds := s.Commands()
	if len(cmds) == 0 {
		t.Error("no admin-socket command recorded: the check below proves nothing")
	}
	for _, c := range cmds {
		if strings.Contains(c, injection.Marker) || strings.ContainsAny(c, "\r\n\x00;#\"'") {
			t.Errorf("command %q", c)
		}
	}
}

// TestInjectionCorpus: every Kubernetes field that can reach HAProxy, with
// each hostile value of the corpus and a value too long for it, through the
// demo cluster, dcm and the real haproxy. Each object is refused alone with
// its specific reason, an event and a count; nothing of it reaches the cfg,
// the maps or a command; web serves every request meanwhile, without a
// reload. Fields dcm reads but never hands to HAProxy (class,
// names and hosts, unknown annotations, the workload annotation) leave no
// trace either, and their objects are served.
func TestInjectionCorpus(t *testing.T) {
	s := harness.Start(t, harness.Options{})
	s.DemoServes(webHost, "/", "demo", "web", 2)
	rec := s.Subscribe(t)
	pid, reloads := s.WorkerPID(), s.Reloads()
	web := s.StartLoad(webHost, "/")
	ctx := context.Background()

	cases := injCases()
	wantReasons := map[string]int{}
	for _, c := range cases {
		wantReasons[c.reason]++
		var err error
		if c.ing != nil {
			_, err = s.Client.NetworkingV1().Ingresses(c.ing.Namespace).Create(ctx, c.ing, metav1.CreateOptions{})
		} else {
			_, err = s.Client.DiscoveryV1().EndpointSlices("demo").Create(ctx, c.slice, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
	}
	s.Eventually("every object of the corpus is refused", 30*time.Second, func() error {
		if got := s.Counter("dcm_rejected_objects_total"); int(got) < len(cases) {
			return fmt.Errorf("%v refusals, want %d", got, len(cases))
		}
		return nil
	})
	for reason, n := range wantReasons {
		if got := s.Counter("dcm_rejected_objects_total", "reason", reason); int(got) != n {
			t.Errorf("dcm_rejected_objects_total{reason=%q} = %v, want %d", reason, got, n)
		}
	}
	rejected := map[dcm.ObjectRef]dcm.Rejection{}
	for _, r := range s.Engine.Snapshot().Rejected {
		rejected[r.Object] = r
	}
	for _, c := range cases {
		r, ok := rejected[c.ref()]
		if !ok {
			t.Errorf("%s: %s not listed as refused", c.what, c.ref())
			continue
		}
		if r.Reason != c.reason || strings.ContainsFunc(r.Message, func(c rune) bool { return c < 0x20 || c > 0x7e }) {
			t.Errorf("%s: refused as %s %q, want %s with a printable message", c.what, r.Reason, r.Message, c.reason)
		}
	}
	s.Eventually("an event per refusal", 10*time.Second, func() error {
		got := map[dcm.ObjectRef]bool{}
		for _, ev := range rec.Events() {
			if ev.Type == dcm.EventRejected && ev.Object != nil {
				got[*ev.Object] = true
			}
		}
		for _, c := range cases {
			if !got[c.ref()] {
				return fmt.Errorf("no rejected event for %s (%s)", c.ref(), c.what)
			}
		}
		return nil
	})
	// A sync after the last refusal has written the files.
	s.DemoServes(webHost, "/", "demo", "web", 2)
	noTrace(t, s)
	if ok, fail, last := web.Finish(); fail > 0 || ok == 0 {
		t.Errorf("web failed %d of %d requests while the corpus arrived (last: %s)", fail, ok+fail, last)
	}
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("HAProxy reloaded (pid %d → %d, %v reloads) for objects that were all refused", pid, s.WorkerPID(), s.Reloads()-reloads)
	}

	// Fields dcm does not hand to HAProxy: served, and still no trace.
	svc, err := s.Client.CoreV1().Services("demo").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc.Annotations = map[string]string{"dcm.io/workload": "Deployment/" + injection.Marker + "\n;x"}
	if _, err := s.Client.CoreV1().Services("demo").Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var hosts []string
	for i, h := range injection.Hostile {
		v := injection.Marker + h.Value + "x"
		host := fmt.Sprintf("ign-%d.demo.localhost", i)
		ing := ingress(fmt.Sprintf("ign-%d", i), host, "/")
		ing.Annotations = map[string]string{"kubernetes.io/ingress.class": v, "dcm.io/" + injection.Marker: v}
		ing.Spec.IngressClassName = ptr.To(v)
		if _, err := s.Client.NetworkingV1().Ingresses("demo").Create(ctx, ing, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, host)
	}
	for _, host := range hosts {
		s.Eventually(host+" serves", 20*time.Second, func() error {
			return s.ServesExactly(host, "/", s.ReadyPods("demo", "web"), 4)
		})
	}
	s.DemoServes(webHost, "/", "demo", "web", 2)
	noTrace(t, s)
}
