package demo

import (
	"encoding/json"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// The fake clientset stores what it is given, nothing more: no UIDs, no
// generateName, no subresources (GetScale would panic on the Deployment it
// gets back, UpdateScale would store the Scale in place of the Deployment), a
// status update overwrites the spec, and a Pod delete removes the Pod at once.
// These reactors add the API server behaviour the rest of dcm relies on. The
// fake runs its reaction chain under one lock, so each reactor's
// read-modify-write is atomic with respect to every other client call.

var podsResource = corev1.SchemeGroupVersion.WithResource("pods")

func installReactors(client *fake.Clientset, names *nameGen) {
	tracker := client.Tracker()
	client.PrependReactor("create", "*", createReactor(tracker, names))
	for _, r := range []string{"deployments", "statefulsets", "replicasets"} {
		client.PrependReactor("get", r, getScaleReactor(tracker))
		client.PrependReactor("update", r, updateScaleReactor(tracker))
		client.PrependReactor("patch", r, patchScaleReactor(tracker))
	}
	for _, r := range []string{"pods", "deployments", "statefulsets", "replicasets"} {
		client.PrependReactor("update", r, statusReactor(tracker))
	}
	client.PrependReactor("delete", "pods", podDeleteReactor(tracker))
}

// createReactor fills in what the API server sets on create: name from
// generateName, UID, creation timestamp, generation.
func createReactor(tracker clienttesting.ObjectTracker, names *nameGen) clienttesting.ReactionFunc {
	return func(action clienttesting.Action) (bool, runtime.Object, error) {
		create, ok := action.(clienttesting.CreateActionImpl)
		if !ok || create.GetSubresource() != "" {
			return false, nil, nil
		}
		m, err := meta.Accessor(create.GetObject())
		if err != nil {
			return false, nil, nil
		}
		if m.GetName() == "" && m.GetGenerateName() != "" {
			name, err := freeName(tracker, create.GetResource(), create.GetNamespace(), m.GetGenerateName(), names)
			if err != nil {
				return true, nil, err
			}
			m.SetName(name)
		}
		if m.GetUID() == "" {
			m.SetUID(uuid.NewUUID())
		}
		if ts := m.GetCreationTimestamp(); ts.IsZero() {
			m.SetCreationTimestamp(metav1.Now())
		}
		if m.GetGeneration() == 0 {
			m.SetGeneration(1)
		}
		// Not handled: the tracker stores the object we just completed.
		return false, nil, nil
	}
}

// freeName appends five random characters to a generateName prefix, like the
// API server, retrying the rare collision instead of failing the create.
func freeName(tracker clienttesting.ObjectTracker, gvr schema.GroupVersionResource, ns, prefix string, names *nameGen) (string, error) {
	for range 8 {
		name := prefix + names.suffix(5)
		if _, err := tracker.Get(gvr, ns, name); apierrors.IsNotFound(err) {
			return name, nil
		}
	}
	return "", apierrors.NewAlreadyExists(gvr.GroupResource(), prefix+"*")
}

// scaleOf reads a workload's replicas and selector; replicas points into obj
// so that the caller can change it.
func scaleOf(obj runtime.Object) (replicas **int32, status int32, sel *metav1.LabelSelector, ok bool) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return &o.Spec.Replicas, o.Status.Replicas, o.Spec.Selector, true
	case *appsv1.StatefulSet:
		return &o.Spec.Replicas, o.Status.Replicas, o.Spec.Selector, true
	case *appsv1.ReplicaSet:
		return &o.Spec.Replicas, o.Status.Replicas, o.Spec.Selector, true
	}
	return nil, 0, nil, false
}

// toScale builds the autoscaling/v1 Scale the API server derives from a workload.
func toScale(obj runtime.Object) (*autoscalingv1.Scale, error) {
	replicas, status, sel, ok := scaleOf(obj)
	if !ok {
		return nil, fmt.Errorf("%T has no scale subresource", obj)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	sc := &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{
			Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUID(),
			ResourceVersion: m.GetResourceVersion(), CreationTimestamp: m.GetCreationTimestamp(),
		},
		Spec:   autoscalingv1.ScaleSpec{Replicas: 1},
		Status: autoscalingv1.ScaleStatus{Replicas: status},
	}
	if *replicas != nil {
		sc.Spec.Replicas = **replicas
	}
	if sel != nil {
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err == nil {
			sc.Status.Selector = s.String()
		}
	}
	return sc, nil
}

func getScaleReactor(tracker clienttesting.ObjectTracker) clienttesting.ReactionFunc {
	return func(action clienttesting.Action) (bool, runtime.Object, error) {
		get, ok := action.(clienttesting.GetActionImpl)
		if !ok || get.GetSubresource() != "scale" {
			return false, nil, nil
		}
		obj, err := tracker.Get(get.GetResource(), get.GetNamespace(), get.GetName())
		if err != nil {
			return true, nil, err
		}
		sc, err := toScale(obj)
		return true, sc, err
	}
}

func updateScaleReactor(tracker clienttesting.ObjectTracker) clienttesting.ReactionFunc {
	return func(action clienttesting.Action) (bool, runtime.Object, error) {
		update, ok := action.(clienttesting.UpdateActionImpl)
		if !ok || update.GetSubresource() != "scale" {
			return false, nil, nil
		}
		sc, ok := update.GetObject().(*autoscalingv1.Scale)
		if !ok {
			return true, nil, apierrors.NewBadRequest(fmt.Sprintf("scale subresource wants autoscaling/v1 Scale, got %T", update.GetObject()))
		}
		obj, err := setReplicas(tracker, update.GetResource(), update.GetNamespace(), sc.Name, sc.Spec.Replicas)
		if err != nil {
			return true, nil, err
		}
		out, err := toScale(obj)
		return true, out, err
	}
}

// patchScaleReactor serves the merge, strategic-merge and apply patches of
// the scale subresource; all three carry the new count as spec.replicas. A
// JSON patch is refused rather than misread. ApplyScale gets the Scale back;
// a merge patch can only come from the typed client's generic
// Patch(..., "scale"), which casts the answer to the workload's own type, so
// it gets the workload (a Scale would make the fake panic).
func patchScaleReactor(tracker clienttesting.ObjectTracker) clienttesting.ReactionFunc {
	return func(action clienttesting.Action) (bool, runtime.Object, error) {
		patch, ok := action.(clienttesting.PatchActionImpl)
		if !ok || patch.GetSubresource() != "scale" {
			return false, nil, nil
		}
		if patch.GetPatchType() == types.JSONPatchType {
			return true, nil, apierrors.NewBadRequest("the demo cluster serves merge, strategic-merge and apply patches of the scale subresource, not JSON patches")
		}
		var body struct {
			Spec struct {
				Replicas *int32 `json:"replicas"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(patch.GetPatch(), &body); err != nil {
			return true, nil, apierrors.NewBadRequest(fmt.Sprintf("decode scale patch: %v", err))
		}
		var obj runtime.Object
		var err error
		if body.Spec.Replicas == nil {
			obj, err = tracker.Get(patch.GetResource(), patch.GetNamespace(), patch.GetName())
		} else {
			obj, err = setReplicas(tracker, patch.GetResource(), patch.GetNamespace(), patch.GetName(), *body.Spec.Replicas)
		}
		if err != nil {
			return true, nil, err
		}
		if patch.GetPatchType() != types.ApplyPatchType {
			return true, obj, nil
		}
		out, err := toScale(obj)
		return true, out, err
	}
}

// setReplicas changes a workload's spec.replicas, bumping metadata.generation
// as the API server does for a spec change, and returns the stored object.
func setReplicas(tracker clienttesting.ObjectTracker, gvr schema.GroupVersionResource, ns, name string, n int32) (runtime.Object, error) {
	if n < 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: "autoscaling", Kind: "Scale"}, name,
			field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), n, "must be greater than or equal to 0")})
	}
	obj, err := tracker.Get(gvr, ns, name)
	if err != nil {
		return nil, err
	}
	replicas, _, _, ok := scaleOf(obj)
	if !ok {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	if *replicas != nil && **replicas == n {
		return obj, nil
	}
	*replicas = &n
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	m.SetGeneration(m.GetGeneration() + 1)
	if err := tracker.Update(gvr, obj, ns); err != nil {
		return nil, err
	}
	return tracker.Get(gvr, ns, name)
}

// statusReactor gives workloads and pods the status subresource's split: a
// status update changes only the status, a main update keeps the stored
// status (and a pod's deletion mark) and bumps the generation when the spec
// changed. Without it the simulator's status writes would undo a concurrent
// scale, and a user's update would undo the simulator's status.
func statusReactor(tracker clienttesting.ObjectTracker) clienttesting.ReactionFunc {
	return func(action clienttesting.Action) (bool, runtime.Object, error) {
		update, ok := action.(clienttesting.UpdateActionImpl)
		if !ok {
			return false, nil, nil
		}
		switch update.GetSubresource() {
		case "status", "":
		default:
			return false, nil, nil
		}
		in := update.GetObject()
		m, err := meta.Accessor(in)
		if err != nil {
			return false, nil, nil
		}
		stored, err := tracker.Get(update.GetResource(), update.GetNamespace(), m.GetName())
		if err != nil {
			return true, nil, err
		}
		var out runtime.Object
		if update.GetSubresource() == "status" {
			out = stored
			if !copyStatus(out, in) {
				return false, nil, nil
			}
		} else {
			out = in.DeepCopyObject()
			if !copyStatus(out, stored) {
				return false, nil, nil
			}
			keepServerFields(out, stored)
		}
		if err := tracker.Update(update.GetResource(), out, update.GetNamespace()); err != nil {
			return true, nil, err
		}
		obj, err := tracker.Get(update.GetResource(), update.GetNamespace(), m.GetName())
		return true, obj, err
	}
}

// copyStatus copies src's status into dst, both of the same kind.
func copyStatus(dst, src runtime.Object) bool {
	switch d := dst.(type) {
	case *corev1.Pod:
		s, ok := src.(*corev1.Pod)
		if ok {
			d.Status = *s.Status.DeepCopy()
		}
		return ok
	case *appsv1.Deployment:
		s, ok := src.(*appsv1.Deployment)
		if ok {
			d.Status = *s.Status.DeepCopy()
		}
		return ok
	case *appsv1.StatefulSet:
		s, ok := src.(*appsv1.StatefulSet)
		if ok {
			d.Status = *s.Status.DeepCopy()
		}
		return ok
	case *appsv1.ReplicaSet:
		s, ok := src.(*appsv1.ReplicaSet)
		if ok {
			d.Status = *s.Status.DeepCopy()
		}
		return ok
	}
	return false
}

// keepServerFields restores on an updated object the metadata only the API
// server may set, and bumps the generation when the spec changed.
func keepServerFields(updated, stored runtime.Object) {
	um, err1 := meta.Accessor(updated)
	sm, err2 := meta.Accessor(stored)
	if err1 != nil || err2 != nil {
		return
	}
	um.SetUID(sm.GetUID())
	um.SetCreationTimestamp(sm.GetCreationTimestamp())
	um.SetDeletionTimestamp(sm.GetDeletionTimestamp())
	um.SetDeletionGracePeriodSeconds(sm.GetDeletionGracePeriodSeconds())
	um.SetGeneration(sm.GetGeneration())
	if !apiequality.Semantic.DeepEqual(specOf(updated), specOf(stored)) {
		um.SetGeneration(sm.GetGeneration() + 1)
	}
}

func specOf(obj runtime.Object) any {
	switch o := obj.(type) {
	case *corev1.Pod:
		return o.Spec
	case *appsv1.Deployment:
		return o.Spec
	case *appsv1.StatefulSet:
		return o.Spec
	case *appsv1.ReplicaSet:
		return o.Spec
	}
	return nil
}

// podDeleteReactor makes a Pod delete graceful, as on a real API server: the
// Pod gets deletionTimestamp and deletionGracePeriodSeconds and stays until
// its kubelet (the simulator) has stopped it and deletes it with grace 0. A
// delete with grace 0 removes the Pod at once (kubectl delete --force).
func podDeleteReactor(tracker clienttesting.ObjectTracker) clienttesting.ReactionFunc {
	return func(action clienttesting.Action) (bool, runtime.Object, error) {
		del, ok := action.(clienttesting.DeleteActionImpl)
		if !ok || del.GetSubresource() != "" {
			return false, nil, nil
		}
		opts := del.DeleteOptions
		obj, err := tracker.Get(podsResource, del.GetNamespace(), del.GetName())
		if err != nil {
			return true, nil, err
		}
		pod := obj.(*corev1.Pod)
		if p := opts.Preconditions; p != nil {
			if p.UID != nil && *p.UID != pod.UID {
				return true, nil, apierrors.NewConflict(podsResource.GroupResource(), pod.Name,
					fmt.Errorf("precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, pod.UID))
			}
		}
		if opts.GracePeriodSeconds != nil && *opts.GracePeriodSeconds == 0 {
			// Handled by the tracker's own delete.
			return false, nil, nil
		}
		if pod.DeletionTimestamp != nil {
			return true, nil, nil
		}
		grace := int64(30)
		if pod.Spec.TerminationGracePeriodSeconds != nil {
			grace = *pod.Spec.TerminationGracePeriodSeconds
		}
		if opts.GracePeriodSeconds != nil {
			grace = *opts.GracePeriodSeconds
		}
		now := metav1.NewTime(time.Now())
		pod.DeletionTimestamp = &now
		pod.DeletionGracePeriodSeconds = &grace
		return true, nil, tracker.Update(podsResource, pod, del.GetNamespace())
	}
}
