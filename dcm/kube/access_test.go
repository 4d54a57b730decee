package kube

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// The fake clientset answers the reviews like an authorizer that grants
// everything but the given verb/resource pairs. The real apiserver's answer
// is proven in e2e/cluster.
func denying(denied ...string) *fake.Clientset {
	c := fake.NewClientset()
	c.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		ra := r.Spec.ResourceAttributes
		key := ra.Verb + " " + ra.Resource
		if ra.Subresource != "" {
			key += "/" + ra.Subresource
		}
		r.Status.Allowed = true
		for _, d := range denied {
			if d == key {
				r.Status.Allowed = false
			}
		}
		return true, r, nil
	})
	return c
}

func TestCheckAccess(t *testing.T) {
	tests := []struct {
		name        string
		denied      []string
		namespaces  []string
		wantMissing []string
		wantLacking []string // features
		lease       string   // the Lease's namespace
	}{
		{name: "everything granted"},
		{name: "no watch on slices", denied: []string{"watch endpointslices"},
			wantMissing: []string{"watch endpointslices.discovery.k8s.io in all namespaces"}},
		{name: "per namespace", denied: []string{"list ingresses"}, namespaces: []string{"a", "b"},
			wantMissing: []string{"list ingresses.networking.k8s.io in namespace a", "list ingresses.networking.k8s.io in namespace b"}},
		{name: "namespaces are cluster-scoped", denied: []string{"watch namespaces"}, namespaces: []string{"a", "b"},
			wantMissing: []string{"watch namespaces in all namespaces"}},
		{name: "scaling is optional", denied: []string{"update deployments/scale"}, wantLacking: []string{FeatureScale}},
		{name: "token sign-in is optional", denied: []string{"create tokenreviews"}, wantLacking: []string{FeatureTokens}},
		{name: "events are optional", denied: []string{"create events", "patch events"}, namespaces: []string{"a"},
			wantLacking: []string{FeatureEvents, FeatureEvents}},
		{name: "leases are checked in their namespace only", denied: []string{"update leases"}, namespaces: []string{"a", "b"},
			lease: "dcm-system", wantLacking: []string{FeatureLeaderElection}},
		{name: "no election, no lease asked for", denied: []string{"get leases"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lacking, err := CheckAccess(context.Background(), denying(tt.denied...), tt.namespaces, tt.lease)
			var missing *MissingPermissionError
			if len(tt.wantMissing) == 0 {
				if err != nil {
					t.Fatalf("CheckAccess: %v", err)
				}
			} else if !errors.As(err, &missing) || strings.Join(missing.Missing, ";") != strings.Join(tt.wantMissing, ";") {
				t.Fatalf("CheckAccess = %v, want missing %q", err, tt.wantMissing)
			}
			var features []string
			for _, l := range lacking {
				features = append(features, l.Feature)
			}
			if !slices.Equal(features, tt.wantLacking) {
				t.Errorf("lacking %v (features %q), want %q", lacking, features, tt.wantLacking)
			}
			for _, f := range tt.wantLacking {
				if !Lacks(lacking, f) {
					t.Errorf("Lacks(%v, %q) = false", lacking, f)
				}
			}
		})
	}
}
