package demo

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	applyautoscalingv1 "k8s.io/client-go/applyconfigurations/autoscaling/v1"
	"k8s.io/client-go/kubernetes"
)

// emptyCluster is a clientset with the demo's reactors and no apps.
func emptyCluster(t *testing.T) kubernetes.Interface {
	t.Helper()
	c, err := New(Options{Apps: []App{}}, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c.Client()
}

// scaleClient is what the Deployment, StatefulSet and ReplicaSet clients share.
type scaleClient interface {
	GetScale(ctx context.Context, name string, opts metav1.GetOptions) (*autoscalingv1.Scale, error)
	UpdateScale(ctx context.Context, name string, sc *autoscalingv1.Scale, opts metav1.UpdateOptions) (*autoscalingv1.Scale, error)
	ApplyScale(ctx context.Context, name string, sc *applyautoscalingv1.ScaleApplyConfiguration, opts metav1.ApplyOptions) (*autoscalingv1.Scale, error)
}

func TestScaleSubresource(t *testing.T) {
	ctx := context.Background()
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}
	kinds := []struct {
		name   string
		create func(kubernetes.Interface) error
		client func(kubernetes.Interface) scaleClient
		// read returns spec.replicas, status.replicas and generation.
		read func(kubernetes.Interface) (int32, int32, int64)
	}{
		{
			name: "Deployment",
			create: func(c kubernetes.Interface) error {
				_, err := c.AppsV1().Deployments("ns").Create(ctx, &appsv1.Deployment{
					ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns"},
					Spec:       appsv1.DeploymentSpec{Replicas: ptrTo(int32(2)), Selector: sel},
					Status:     appsv1.DeploymentStatus{Replicas: 2},
				}, metav1.CreateOptions{})
				return err
			},
			client: func(c kubernetes.Interface) scaleClient { return c.AppsV1().Deployments("ns") },
			read: func(c kubernetes.Interface) (int32, int32, int64) {
				d, err := c.AppsV1().Deployments("ns").Get(ctx, "x", metav1.GetOptions{})
				if err != nil {
					return -1, -1, -1
				}
				return *d.Spec.Replicas, d.Status.Replicas, d.Generation
			},
		},
		{
			name: "StatefulSet",
			create: func(c kubernetes.Interface) error {
				_, err := c.AppsV1().StatefulSets("ns").Create(ctx, &appsv1.StatefulSet{
					ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns"},
					Spec:       appsv1.StatefulSetSpec{Replicas: ptrTo(int32(2)), Selector: sel},
					Status:     appsv1.StatefulSetStatus{Replicas: 2},
				}, metav1.CreateOptions{})
				return err
			},
			client: func(c kubernetes.Interface) scaleClient { return c.AppsV1().StatefulSets("ns") },
			read: func(c kubernetes.Interface) (int32, int32, int64) {
				s, err := c.AppsV1().StatefulSets("ns").Get(ctx, "x", metav1.GetOptions{})
				if err != nil {
					return -1, -1, -1
				}
				return *s.Spec.Replicas, s.Status.Replicas, s.Generation
			},
		},
		{
			name: "ReplicaSet",
			create: func(c kubernetes.Interface) error {
				_, err := c.AppsV1().ReplicaSets("ns").Create(ctx, &appsv1.ReplicaSet{
					ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns"},
					Spec:       appsv1.ReplicaSetSpec{Replicas: ptrTo(int32(2)), Selector: sel},
					Status:     appsv1.ReplicaSetStatus{Replicas: 2},
				}, metav1.CreateOptions{})
				return err
			},
			client: func(c kubernetes.Interface) scaleClient { return c.AppsV1().ReplicaSets("ns") },
			read: func(c kubernetes.Interface) (int32, int32, int64) {
				r, err := c.AppsV1().ReplicaSets("ns").Get(ctx, "x", metav1.GetOptions{})
				if err != nil {
					return -1, -1, -1
				}
				return *r.Spec.Replicas, r.Status.Replicas, r.Generation
			},
		},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			c := emptyCluster(t)
			if err := k.create(c); err != nil {
				t.Fatalf("create: %v", err)
			}
			sc := k.client(c)

			got, err := sc.GetScale(ctx, "x", metav1.GetOptions{})
			if err != nil || got.Name != "x" || got.Spec.Replicas != 2 || got.Status.Replicas != 2 || got.Status.Selector != "app=x" || got.UID == "" {
				t.Fatalf("GetScale: %+v, %v", got, err)
			}

			got.Spec.Replicas = 5
			out, err := sc.UpdateScale(ctx, "x", got, metav1.UpdateOptions{})
			if err != nil || out.Spec.Replicas != 5 {
				t.Fatalf("UpdateScale: %+v, %v", out, err)
			}
			if spec, status, gen := k.read(c); spec != 5 || status != 2 || gen != 2 {
				t.Errorf("after UpdateScale: spec %d status %d generation %d, want 5 2 2", spec, status, gen)
			}

			// Same count again: no spec change, no new generation.
			if _, err := sc.UpdateScale(ctx, "x", out, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("UpdateScale again: %v", err)
			}
			if _, _, gen := k.read(c); gen != 2 {
				t.Errorf("an unchanged scale bumped the generation to %d", gen)
			}

			applied, err := sc.ApplyScale(ctx, "x", applyautoscalingv1.Scale().WithSpec(applyautoscalingv1.ScaleSpec().WithReplicas(3)), metav1.ApplyOptions{FieldManager: "test"})
			if err != nil || applied.Spec.Replicas != 3 {
				t.Fatalf("ApplyScale: %+v, %v", applied, err)
			}

			neg := out.DeepCopy()
			neg.Spec.Replicas = -1
			if _, err := sc.UpdateScale(ctx, "x", neg, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
				t.Errorf("negative scale: %v, want Invalid", err)
			}
			if _, err := sc.GetScale(ctx, "missing", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("GetScale of a missing object: %v, want NotFound", err)
			}
			missing := out.DeepCopy()
			missing.Name = "missing"
			if _, err := sc.UpdateScale(ctx, "missing", missing, metav1.UpdateOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("UpdateScale of a missing object: %v, want NotFound", err)
			}
			if spec, _, _ := k.read(c); spec != 3 {
				t.Errorf("failed scales changed replicas to %d", spec)
			}
		})
	}
}

func TestScalePatches(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		pt      types.PatchType
		patch   string
		want    int32
		wantErr bool
	}{
		{name: "merge", pt: types.MergePatchType, patch: `{"spec":{"replicas":4}}`, want: 4},
		{name: "strategic", pt: types.StrategicMergePatchType, patch: `{"spec":{"replicas":0}}`, want: 0},
		{name: "no replicas", pt: types.MergePatchType, patch: `{"metadata":{}}`, want: 2},
		{name: "json patch", pt: types.JSONPatchType, patch: `[{"op":"replace","path":"/spec/replicas","value":4}]`, wantErr: true},
		{name: "garbage", pt: types.MergePatchType, patch: `{`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := emptyCluster(t)
			d := appDeployment(App{Namespace: "ns", Name: "x", Path: "/", Replicas: 2}, Options{PodPort: 8080})
			if _, err := c.AppsV1().Deployments("ns").Create(ctx, d, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create: %v", err)
			}
			_, err := c.AppsV1().Deployments("ns").Patch(ctx, "x", tt.pt, []byte(tt.patch), metav1.PatchOptions{}, "scale")
			if (err != nil) != tt.wantErr {
				t.Fatalf("patch: %v, want error %v", err, tt.wantErr)
			}
			got, err := c.AppsV1().Deployments("ns").Get(ctx, "x", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("get: %v", err)
			}
			want := tt.want
			if tt.wantErr {
				want = 2
			}
			if *got.Spec.Replicas != want {
				t.Errorf("replicas %d, want %d", *got.Spec.Replicas, want)
			}
		})
	}
}

func TestStatusAndSpecDoNotOverwriteEachOther(t *testing.T) {
	ctx := context.Background()
	c := emptyCluster(t)
	deployments := c.AppsV1().Deployments("ns")
	d := appDeployment(App{Namespace: "ns", Name: "x", Path: "/", Replicas: 2}, Options{PodPort: 8080})
	stale, err := deployments.Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}

	sc, err := deployments.GetScale(ctx, "x", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sc.Spec.Replicas = 7
	if _, err := deployments.UpdateScale(ctx, "x", sc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A controller's status write from before the scale must not undo it.
	stale.Status.ReadyReplicas = 2
	if _, err := deployments.UpdateStatus(ctx, stale, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("UpdateStatus: %v", err)
	}
	got, _ := deployments.Get(ctx, "x", metav1.GetOptions{})
	if *got.Spec.Replicas != 7 || got.Status.ReadyReplicas != 2 {
		t.Errorf("after a stale status write: replicas %d ready %d, want 7 2", *got.Spec.Replicas, got.Status.ReadyReplicas)
	}

	// A user's update with a stale status must not undo the controller's.
	edit := got.DeepCopy()
	edit.Status = appsv1.DeploymentStatus{}
	edit.Labels = map[string]string{"edited": "yes"}
	if _, err := deployments.Update(ctx, edit, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("Update: %v", err)
	}
	after, _ := deployments.Get(ctx, "x", metav1.GetOptions{})
	if after.Status.ReadyReplicas != 2 || after.Labels["edited"] != "yes" || after.Generation != got.Generation {
		t.Errorf("after a metadata update: ready %d labels %v generation %d (was %d)", after.Status.ReadyReplicas, after.Labels, after.Generation, got.Generation)
	}
	edit = after.DeepCopy()
	edit.Spec.Template.Labels["v"] = "2"
	if _, err := deployments.Update(ctx, edit, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("Update: %v", err)
	}
	if again, _ := deployments.Get(ctx, "x", metav1.GetOptions{}); again.Generation != after.Generation+1 {
		t.Errorf("a spec change left generation at %d", again.Generation)
	}
}

func TestPodDelete(t *testing.T) {
	ctx := context.Background()
	newPod := func(t *testing.T) (kubernetes.Interface, *corev1.Pod) {
		c := emptyCluster(t)
		p, err := c.CoreV1().Pods("ns").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
			Spec:       corev1.PodSpec{TerminationGracePeriodSeconds: ptrTo(int64(12))},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		return c, p
	}
	tests := []struct {
		name      string
		opts      func(p *corev1.Pod) metav1.DeleteOptions
		wantErr   func(error) bool
		wantGone  bool
		wantGrace int64
	}{
		{name: "graceful, pod's grace", opts: func(*corev1.Pod) metav1.DeleteOptions { return metav1.DeleteOptions{} }, wantGrace: 12},
		{name: "graceful, given grace", opts: func(*corev1.Pod) metav1.DeleteOptions {
			return metav1.DeleteOptions{GracePeriodSeconds: ptrTo(int64(3))}
		}, wantGrace: 3},
		{name: "forced", opts: func(*corev1.Pod) metav1.DeleteOptions {
			return metav1.DeleteOptions{GracePeriodSeconds: ptrTo(int64(0))}
		}, wantGone: true},
		{name: "matching UID", opts: func(p *corev1.Pod) metav1.DeleteOptions {
			return metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}}
		}, wantGrace: 12},
		{name: "other UID", opts: func(*corev1.Pod) metav1.DeleteOptions {
			return metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptrTo(types.UID("other"))}}
		}, wantErr: apierrors.IsConflict, wantGrace: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, p := newPod(t)
			err := c.CoreV1().Pods("ns").Delete(ctx, "p", tt.opts(p))
			if tt.wantErr != nil {
				if !tt.wantErr(err) {
					t.Fatalf("delete: %v", err)
				}
			} else if err != nil {
				t.Fatalf("delete: %v", err)
			}
			got, err := c.CoreV1().Pods("ns").Get(ctx, "p", metav1.GetOptions{})
			if tt.wantGone {
				if !apierrors.IsNotFound(err) {
					t.Errorf("get after forced delete: %v, want NotFound", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("get: %v", err)
			}
			if tt.wantGrace < 0 {
				if got.DeletionTimestamp != nil {
					t.Errorf("a failed delete marked the pod")
				}
				return
			}
			if got.DeletionTimestamp == nil || deref(got.DeletionGracePeriodSeconds) != tt.wantGrace {
				t.Errorf("pod after delete: deletionTimestamp %v grace %v, want grace %d", got.DeletionTimestamp, got.DeletionGracePeriodSeconds, tt.wantGrace)
			}
			// Deleting again changes nothing; a status write keeps the mark.
			first := *got.DeletionTimestamp
			if err := c.CoreV1().Pods("ns").Delete(ctx, "p", metav1.DeleteOptions{}); err != nil {
				t.Errorf("second delete: %v", err)
			}
			got.Status.Phase = corev1.PodRunning
			got.DeletionTimestamp = nil
			if _, err := c.CoreV1().Pods("ns").UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("UpdateStatus: %v", err)
			}
			again, _ := c.CoreV1().Pods("ns").Get(ctx, "p", metav1.GetOptions{})
			if again.DeletionTimestamp == nil || !again.DeletionTimestamp.Equal(&first) || again.Status.Phase != corev1.PodRunning {
				t.Errorf("after a second delete and a status write: %v %v", again.DeletionTimestamp, again.Status.Phase)
			}
		})
	}
	if err := emptyCluster(t).CoreV1().Pods("ns").Delete(ctx, "missing", metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("delete of a missing pod: %v, want NotFound", err)
	}
}

func TestCreateFillsServerFields(t *testing.T) {
	ctx := context.Background()
	c := emptyCluster(t)
	seen := map[string]bool{}
	for range 20 {
		cm, err := c.CoreV1().ConfigMaps("ns").Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "cm-", Namespace: "ns"},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		if len(cm.Name) != len("cm-")+5 || cm.Name[:3] != "cm-" || seen[cm.Name] {
			t.Errorf("generated name %q", cm.Name)
		}
		seen[cm.Name] = true
		if cm.UID == "" || cm.CreationTimestamp.IsZero() || cm.Generation != 1 {
			t.Errorf("server fields not set: %+v", cm.ObjectMeta)
		}
	}
	// A name given is kept, and a second create of it fails as on a real server.
	named := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "fixed", Namespace: "ns", UID: "u1"}}
	got, err := c.CoreV1().ConfigMaps("ns").Create(ctx, named, metav1.CreateOptions{})
	if err != nil || got.Name != "fixed" || got.UID != "u1" {
		t.Errorf("create with name: %+v, %v", got, err)
	}
	if _, err := c.CoreV1().ConfigMaps("ns").Create(ctx, named, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("second create: %v, want AlreadyExists", err)
	}
}
