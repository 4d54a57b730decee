package kube

import (
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// scaleAPI fakes the scale subresource of one workload; forbid makes a verb
// answer Forbidden the way the API server does.
type scaleAPI struct {
	resource  string
	name      string
	replicas  int32
	conflicts int // UpdateScale answers Conflict this many times first
	forbid    string
	updates   int
}

func (a *scaleAPI) install(c *fake.Clientset) {
	c.PrependReactor("*", a.resource, func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "scale" {
			return false, nil, nil
		}
		gr := schema.GroupResource{Group: "apps", Resource: a.resource + "/scale"}
		if action.GetVerb() == a.forbid {
			return true, nil, apierrors.NewForbidden(gr, a.name, nil)
		}
		switch act := action.(type) {
		case k8stesting.GetAction:
			if act.GetName() != a.name {
				return true, nil, apierrors.NewNotFound(gr, act.GetName())
			}
			return true, &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: a.name, Namespace: act.GetNamespace(), ResourceVersion: "7"},
				Spec: autoscalingv1.ScaleSpec{Replicas: a.replicas}}, nil
		case k8stesting.UpdateAction:
			if a.conflicts > 0 {
				a.conflicts--
				return true, nil, apierrors.NewConflict(gr, a.name, nil)
			}
			sc := act.GetObject().(*autoscalingv1.Scale)
			a.replicas = sc.Spec.Replicas
			a.updates++
			return true, sc, nil
		}
		return false, nil, nil
	})
}

func TestScaler(t *testing.T) {
	tests := []struct {
		name      string
		api       scaleAPI
		kind      string
		target    string
		set       int32
		wantGet   int32
		wantErr   string // substring; "" = success
		wantAfter int32
	}{
		{name: "deployment", api: scaleAPI{resource: "deployments", name: "web", replicas: 2}, kind: "Deployment", target: "web", set: 5, wantGet: 2, wantAfter: 5},
		{name: "statefulset, kind case-insensitive", api: scaleAPI{resource: "statefulsets", name: "db", replicas: 3}, kind: "statefulset", target: "db", set: 1, wantGet: 3, wantAfter: 1},
		{name: "retries a conflict", api: scaleAPI{resource: "deployments", name: "web", replicas: 2, conflicts: 2}, kind: "DEPLOYMENT", target: "web", set: 4, wantGet: 2, wantAfter: 4},
		{name: "unknown kind", api: scaleAPI{resource: "deployments", name: "web"}, kind: "DaemonSet", target: "web", set: 1,
			wantErr: `unsupported workload kind "DaemonSet"`},
		{name: "not found names the object", api: scaleAPI{resource: "deployments", name: "web"}, kind: "Deployment", target: "nope", set: 1,
			wantErr: "scale of Deployment demo/nope"},
		{name: "forbidden update names the permission", api: scaleAPI{resource: "deployments", name: "web", replicas: 2, forbid: "update"}, kind: "Deployment", target: "web", set: 3, wantGet: 2,
			wantErr: "missing permission update deployments/scale in namespace demo"},
		{name: "forbidden get names the permission", api: scaleAPI{resource: "statefulsets", name: "db", forbid: "get"}, kind: "StatefulSet", target: "db", set: 3,
			wantErr: "missing permission get statefulsets/scale in namespace demo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			api := tt.api
			api.install(client)
			s := NewScaler(client)
			got, getErr := s.GetScale(t.Context(), "demo", tt.kind, tt.target)
			err := s.SetScale(t.Context(), "demo", tt.kind, tt.target, tt.set)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("SetScale error %v, want it to contain %q", err, tt.wantErr)
				}
				if getErr == nil && got != tt.wantGet {
					t.Errorf("GetScale = %d, want %d", got, tt.wantGet)
				}
				return
			}
			if getErr != nil || got != tt.wantGet {
				t.Fatalf("GetScale = %d, %v; want %d", got, getErr, tt.wantGet)
			}
			if err != nil {
				t.Fatalf("SetScale: %v", err)
			}
			if api.replicas != tt.wantAfter || api.updates != 1 {
				t.Errorf("replicas %d after %d updates, want %d after 1", api.replicas, api.updates, tt.wantAfter)
			}
			// Setting the current value again writes nothing.
			if err := s.SetScale(t.Context(), "demo", tt.kind, tt.target, tt.set); err != nil || api.updates != 1 {
				t.Errorf("idempotent SetScale: %v, %d updates", err, api.updates)
			}
		})
	}
	if err := NewScaler(fake.NewClientset()).SetScale(t.Context(), "demo", "Deployment", "web", -1); err == nil {
		t.Error("negative replicas accepted")
	}
}
