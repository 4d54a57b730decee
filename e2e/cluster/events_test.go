package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/kube"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/e2e/kapitest"
	"github.com/dcm-router/dcm/system"
)

// installOpenShiftRouteCRD installs openshift/api's Route CRD, unchanged
// (testdata/), with its schema and validation rules, and waits until
// discovery serves it.
func installOpenShiftRouteCRD(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "openshift-routes.crd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crd := &unstructured.Unstructured{}
	if err := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096).Decode(&crd.Object); err != nil {
		t.Fatalf("decode the Route CRD: %v", err)
	}
	if _, err := adminDynamic(t).Resource(crdGVR).Create(context.Background(), crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	waitRoutesServed(t, true)
}

// eventsOn lists dcm's Events on one object, through events.k8s.io/v1 and
// its field selector.
func eventsOn(ns, kind, name string) ([]eventsv1.Event, error) {
	list, err := env.admin.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.Set{"regarding.kind": kind, "regarding.name": name}.String()})
	if err != nil {
		return nil, err
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.ReportingController == kube.EventController {
			out = append(out, e)
		}
	}
	return out, nil
}

func eventsString(evs []eventsv1.Event) string {
	var b strings.Builder
	for _, e := range evs {
		n := int32(1)
		if e.Series != nil {
			n = e.Series.Count
		}
		fmt.Fprintf(&b, "\n  %s %s x%d: %s", e.Type, e.Reason, n, e.Note)
	}
	return b.String()
}

// waitEvent waits until dcm's Events on the object hold one of type and
// reason whose note contains each of notes, about the object of uid, and
// returns it.
func waitEvent(t *testing.T, s *harness.Stack, ns, kind, name string, uid types.UID, eventType, reason string, notes ...string) eventsv1.Event {
	t.Helper()
	var found eventsv1.Event
	s.Eventually(fmt.Sprintf("%s Event %s on %s %s/%s", eventType, reason, kind, ns, name), 20*time.Second, func() error {
		evs, err := eventsOn(ns, kind, name)
		if err != nil {
			return err
		}
	next:
		for _, e := range evs {
			if e.Type != eventType || e.Reason != reason {
				continue
			}
			for _, n := range notes {
				if !strings.Contains(e.Note, n) {
					continue next
				}
			}
			if e.Regarding.UID != uid || e.Action == "" || !strings.HasPrefix(e.ReportingInstance, kube.EventController+"-") {
				return fmt.Errorf("event %+v: regarding %+v, action %q, instance %q", e.Name, e.Regarding, e.Action, e.ReportingInstance)
			}
			found = e
			return nil
		}
		return fmt.Errorf("Events:%s", eventsString(evs))
	})
	return found
}

// countEventWrites counts what dcm sends to the events API (create,
// patch), as the requests leave.
func countEventWrites(cfgWrites *atomic.Int64) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if strings.HasPrefix(r.URL.Path, "/apis/events.k8s.io/") && r.Method != http.MethodGet {
				cfgWrites.Add(1)
			}
			return rt.RoundTrip(r)
		})
	}
}

func mergePatch(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// TestKubernetesEvents: dcm on the deploy/ ServiceAccount, against the real
// API server with openshift/api's Route CRD, writes Kubernetes Events on
// what it rejects — found through events.k8s.io/v1 and, for one, through
// core/v1 as kubectl describe asks — a Warning with dcm's reason and the
// field on a rejected Ingress and Route, a Normal Accepted on the Ingress
// once fixed, HostAlreadyClaimed on the loser of a host (none on its
// owner), and a Warning that says the previous version still serves on a
// refused update. A storm of 1,000 refused updates of one Ingress writes
// one Event.
func TestKubernetesEvents(t *testing.T) {
	installOpenShiftRouteCRD(t)
	t.Cleanup(func() { removeRouteCRD(t) })
	nsA, nsB := kapitest.Namespace(t, env.admin), kapitest.Namespace(t, env.admin)
	ctx := context.Background()
	host := "web." + nsA + ".test"
	createService(t, nsA, "web", map[string]string{"app": "web"})
	createIngress(t, nsA, "web", host, "/", "web")

	writes := &atomic.Int64{}
	o := dcmOptions(t, nsA)
	o.Kubernetes.WrapTransport = countEventWrites(writes)
	o.Config = func(c *system.Config) {
		c.Namespaces, c.HTTPSRedirectPort = []string{nsA, nsB}, 443
		c.RoutesRecheck, c.RoutesMaxRecheck = 200*time.Millisecond, time.Second
	}
	s := harness.Start(t, o)
	ings := env.admin.NetworkingV1().Ingresses(nsA)
	web, err := ings.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Eventually("web served", 15*time.Second, func() error {
		for _, r := range s.Engine.Snapshot().Routes {
			if r.Host == host {
				return nil
			}
		}
		return errors.New("no route for " + host)
	})

	// A rejected Ingress: the Warning, found as kubectl describe finds it too.
	bad := ingressFor(nsA, "bad", "bad."+nsA+".test", "/", "web")
	bad.Annotations = map[string]string{kube.AnnotationBalance: "bogus"}
	if bad, err = ings.Create(ctx, bad, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, s, nsA, kube.KindIngress, "bad", bad.UID, corev1.EventTypeWarning, dcm.RejectInvalidValue, kube.AnnotationBalance, `"bogus"`)
	core, err := env.admin.CoreV1().Events(nsA).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
		"involvedObject.kind": kube.KindIngress, "involvedObject.name": "bad", "involvedObject.uid": string(bad.UID)}.String()})
	if err != nil || len(core.Items) != 1 || core.Items[0].Type != corev1.EventTypeWarning || core.Items[0].Reason != dcm.RejectInvalidValue {
		t.Errorf("core/v1 Events on Ingress bad (kubectl describe's query): %v %+v", err, core)
	}

	// A rejected Route.
	routes := adminDynamic(t).Resource(kube.RouteGVR).Namespace(nsA)
	rt := osRoute(nsA, "bad", "r."+nsA+".test", "/", "web", 100, nil)
	rt.SetAnnotations(map[string]string{kube.AnnotationRouteBalance: "bogus"})
	if rt, err = routes.Create(ctx, rt, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, s, nsA, kube.KindRoute, "bad", rt.GetUID(), corev1.EventTypeWarning, dcm.RejectInvalidValue, kube.AnnotationRouteBalance, `"bogus"`)

	// The Ingress fixed: Normal Accepted.
	if _, err := ings.Patch(ctx, "bad", types.MergePatchType, mergePatch(map[string]any{"metadata": map[string]any{
		"annotations": map[string]any{kube.AnnotationBalance: "roundrobin"}}}), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, s, nsA, kube.KindIngress, "bad", bad.UID, corev1.EventTypeNormal, kube.EventReasonAccepted)

	// The host belongs to nsA (web is older by a clock second, the
	// resolution of creationTimestamp): nsB's Ingress for it loses.
	s.Eventually("a second after web was created", 5*time.Second, func() error {
		if !time.Now().Truncate(time.Second).After(web.CreationTimestamp.Time) {
			return errors.New("not yet")
		}
		return nil
	})
	claimer, err := env.admin.NetworkingV1().Ingresses(nsB).Create(ctx, ingressFor(nsB, "b", host, "/b", "web"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitEvent(t, s, nsB, kube.KindIngress, "b", claimer.UID, corev1.EventTypeWarning, dcm.RejectHostClaimed, "belongs to namespace "+nsA)
	if evs, err := eventsOn(nsA, kube.KindIngress, "web"); err != nil || len(evs) != 0 {
		t.Errorf("Events on the host's owner: %v%s", err, eventsString(evs))
	}

	// An update of web refused: its previous version still serves, and
	// the Warning says so.
	setBalance := func(value string) {
		t.Helper()
		if _, err := ings.Patch(ctx, "web", types.MergePatchType, mergePatch(map[string]any{"metadata": map[string]any{
			"annotations": map[string]any{kube.AnnotationBalance: value}}}), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setBalance("bogus-first")
	first := waitEvent(t, s, nsA, kube.KindIngress, "web", web.UID, corev1.EventTypeWarning, dcm.RejectInvalidValue,
		"update refused, resourceVersion "+web.ResourceVersion+" still served", `"bogus-first"`)

	// The storm: 1,000 refused updates, the value alternating so that each
	// one dcm sees is a rejection of another message, reported again.
	// client-go's events/v1 broadcaster keys an Event by its object (UID,
	// no resourceVersion), type, reason, action and reporter, not by its
	// note: a repeat patches the first Event into a series (count 2), and
	// later repeats only count in memory until the series is written again
	// (6 minutes after its last repeat, or every 30). So the storm adds no
	// Event on web, and writes once (the series patch); the fix after it
	// writes the Normal Accepted: at most 2 writes from the first Warning
	// on, whatever the number of updates.
	rejectedBefore := s.Counter("dcm_rejected_objects_total", "reason", dcm.RejectInvalidValue)
	writesBefore := writes.Load()
	const storm = 1000
	stormCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	started := time.Now()
	for i := range storm {
		value := []string{"bogus-a", "bogus-b"}[i%2]
		if i == storm-1 {
			value = "bogus-last"
		}
		if _, err := ings.Patch(stormCtx, "web", types.MergePatchType, mergePatch(map[string]any{"metadata": map[string]any{
			"annotations": map[string]any{kube.AnnotationBalance: value}}}), metav1.PatchOptions{}); err != nil {
			t.Fatalf("update %d of the storm: %v", i, err)
		}
	}
	took := time.Since(started)
	refusedLast := func() error {
		for _, r := range s.Engine.Snapshot().Rejected {
			if r.Object.Name == "web" && r.Object.Namespace == nsA && strings.Contains(r.Message, `"bogus-last"`) {
				return nil
			}
		}
		return errors.New("dcm has not refused the last update yet")
	}
	s.Eventually("the storm's last update refused", 30*time.Second, refusedLast)
	reported := s.Counter("dcm_rejected_objects_total", "reason", dcm.RejectInvalidValue) - rejectedBefore
	setBalance("leastconn")
	waitEvent(t, s, nsA, kube.KindIngress, "web", web.UID, corev1.EventTypeNormal, kube.EventReasonAccepted)
	var warnings []eventsv1.Event
	s.Eventually("the first Warning on web made a series", 20*time.Second, func() error {
		evs, err := eventsOn(nsA, kube.KindIngress, "web")
		if err != nil {
			return err
		}
		warnings = warnings[:0]
		for _, e := range evs {
			if e.Type == corev1.EventTypeWarning {
				warnings = append(warnings, e)
			}
		}
		if len(warnings) != 1 || warnings[0].Name != first.Name || warnings[0].Series == nil || warnings[0].Series.Count < 2 {
			return fmt.Errorf("Warnings on web, want the first one as a series:%s", eventsString(warnings))
		}
		return nil
	})
	stormWrites := writes.Load() - writesBefore
	t.Logf("storm: %d updates in %s, %v rejections reported by dcm → %d Warning Event on web (series count %d), %d event writes (series patch + Accepted), %d event writes in the whole test",
		storm, took.Round(time.Millisecond), reported, len(warnings), warnings[0].Series.Count, stormWrites, writes.Load())
	if reported < 2 {
		t.Errorf("dcm reported %v rejections during the storm: it did not reach the broadcaster", reported)
	}
	if stormWrites > 2 {
		t.Errorf("%d event writes from the storm and its fix, want at most 2", stormWrites)
	}
}
