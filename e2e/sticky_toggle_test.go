package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/kube"
	"github.com/dcm-router/dcm/e2e/harness"
)

// TestStickyToggleWithoutReload: turning a route's stickiness on moves it
// to a sticky spare, and off again back to a plain backend, under load and
// without a reload. Its clients get cookies and stay on their pod while it
// is sticky, none after; the old backend drains beside the new one and is
// emptied once idle.
func TestStickyToggleWithoutReload(t *testing.T) {
	s := harness.Start(t, harness.Options{})
	s.DemoServes(webHost, "/", "demo", "web", 2)
	s.DemoServes(shopHost, "/", "demo", "shop", 2)
	pid, reloads := s.WorkerPID(), s.Reloads()
	rec := s.Subscribe(t)
	load := s.StartLoad(webHost, "/")

	setSticky := func(on bool) {
		t.Helper()
		ingresses := s.Client.NetworkingV1().Ingresses("demo")
		ing, err := ingresses.Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ing.Annotations == nil {
			ing.Annotations = map[string]string{}
		}
		ing.Annotations[kube.AnnotationSticky] = fmt.Sprint(on)
		if _, err := ingresses.Update(context.Background(), ing, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	movedDrained := func() error {
		for _, b := range s.Engine.Snapshot().Backends {
			if strings.HasSuffix(b.Name, dcm.MovedName("")) {
				return fmt.Errorf("%s still has %d servers", b.Name, len(b.Servers))
			}
		}
		return nil
	}

	setSticky(true)
	var set map[string]string
	s.Eventually("web sets sticky cookies", 20*time.Second, func() (err error) {
		set, err = cookies(s.HTTPAddr, webHost, s.ReadyPods("demo", "web"))
		return err
	})
	for pod, c := range set {
		if err := pinned(s.HTTPAddr, webHost, c, pod, 10); err != nil {
			t.Error(err)
		}
	}
	if slot := s.Backend(webBE).Slot; !strings.HasPrefix(slot, "be_sticky:_pool:") {
		t.Errorf("sticky web is in %q, want a sticky spare", slot)
	}
	s.Eventually("the old backend drained", harness.RetireWait, movedDrained)

	setSticky(false)
	s.Eventually("web sets no cookie", 20*time.Second, func() error {
		for range 10 {
			pod, c, err := stickyGet(s.HTTPAddr, webHost, "")
			if err != nil {
				return err
			}
			if c != "" {
				return fmt.Errorf("pod %s set cookie %s", pod, c)
			}
		}
		return nil
	})
	if slot := s.Backend(webBE).Slot; strings.HasPrefix(slot, "be_sticky:") {
		t.Errorf("web without stickiness is in %q, want a plain backend", slot)
	}
	s.Eventually("the sticky spare drained", harness.RetireWait, movedDrained)

	if ok, fail, last := load.Finish(); fail > 0 || ok == 0 {
		t.Errorf("web had %d failures of %d requests through both moves (last: %s)", fail, ok+fail, last)
	}
	// Both old backends were retired beside the new ones: servers put in
	// maint, then deleted. The engine records a change before it
	// publishes it: wait for the events.
	s.Eventually("the moved backends' events", 5*time.Second, func() error {
		retired := map[string][]dcm.OpKind{}
		for _, ev := range rec.Events() {
			for _, op := range ev.Ops {
				if strings.HasSuffix(op.Backend, dcm.MovedName("")) {
					retired[op.Slot] = append(retired[op.Slot], op.Kind)
				}
			}
		}
		if len(retired) != 2 {
			return fmt.Errorf("ops on moved backends %v, want the route's own backend and the sticky spare retired", retired)
		}
		for slot, kinds := range retired {
			if !slices.Contains(kinds, dcm.OpSetState) || !slices.Contains(kinds, dcm.OpDelServer) {
				return fmt.Errorf("%s: ops %v, want its servers in maint, then deleted", slot, kinds)
			}
		}
		return nil
	})
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("HAProxy reloaded: worker %d → %d, reloads %v → %v", pid, s.WorkerPID(), reloads, s.Reloads())
	}
}
