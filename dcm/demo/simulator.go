package demo

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/dcm-router/dcm/dcm/demo/localpod"
)

// clearActionsEvery bounds the memory of the fake clientset, which otherwise
// records a deep copy of every call it serves for as long as the demo runs.
const clearActionsEvery = 30 * time.Second

type keyKind uint8

const (
	deploymentKey keyKind = iota
	serviceKey
)

// key is a work item: reconcile this Deployment's pods and status, or this
// Service's EndpointSlices.
type key struct {
	kind      keyKind
	namespace string
	name      string
}

// simulator plays the deployment and replicaset controllers, the kubelet of
// nodeName and the endpointslice controller. Like those controllers it is
// level-triggered: any event only queues the Deployment or Service it
// concerns, and a sync compares the whole wanted state with the cluster.
//
// Pods are the exception to "read the state from the API": the simulator is
// their kubelet, so its own table is the truth about which pods run, listen
// and are ready, and the Pod objects are what it reports.
type simulator struct {
	client *fake.Clientset
	opts   Options
	names  *nameGen
	log    *slog.Logger

	// Set by run before any goroutine that uses them starts.
	queue    workqueue.TypedRateLimitingInterface[key]
	services corelisters.ServiceLister

	// wg counts the pods' kubelet goroutines.
	wg sync.WaitGroup

	// pool hands out the pods' addresses; it has a lock of its own.
	pool *localpod.Pool

	mu   sync.Mutex
	pods map[string]*pod // by namespace/name
}

func newSimulator(client *fake.Clientset, opts Options, names *nameGen, logger *slog.Logger) (*simulator, error) {
	prefix, err := localpod.ParsePrefix(opts.AddrPrefix)
	if err != nil {
		return nil, err
	}
	return &simulator{
		client: client, opts: opts, names: names, log: logger,
		pods: map[string]*pod{}, pool: localpod.NewPool(prefix),
	}, nil
}

func (s *simulator) run(ctx context.Context) error {
	s.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[key](5*time.Millisecond, 10*time.Second),
		workqueue.TypedRateLimitingQueueConfig[key]{},
	)
	factory := informers.NewSharedInformerFactory(s.client, 0)
	svcInformer := factory.Core().V1().Services()
	s.services = svcInformer.Lister()
	watches := []struct {
		resource string
		informer cache.SharedIndexInformer
		handler  cache.ResourceEventHandler
	}{
		{"deployments", factory.Apps().V1().Deployments().Informer(), s.keyHandler(deploymentKey)},
		{"services", svcInformer.Informer(), s.keyHandler(serviceKey)},
		{"pods", factory.Core().V1().Pods().Informer(), s.podHandler()},
		{"endpointslices", factory.Discovery().V1().EndpointSlices().Informer(), s.sliceHandler()},
	}
	var synced []cache.InformerSynced
	for _, w := range watches {
		if _, err := w.informer.AddEventHandler(w.handler); err != nil {
			s.queue.ShutDown()
			return fmt.Errorf("watch %s: %w", w.resource, err)
		}
		synced = append(synced, w.informer.HasSynced)
	}
	factory.Start(ctx.Done())

	var loops sync.WaitGroup
	if cache.WaitForCacheSync(ctx.Done(), synced...) {
		s.log.Info("demo cluster running", "addrPrefix", s.opts.AddrPrefix, "podPort", s.opts.PodPort)
		loops.Go(func() {
			for s.processNext(ctx) {
			}
		})
		loops.Go(func() { s.clearActions(ctx) })
	}

	<-ctx.Done()
	s.queue.ShutDown()
	// The worker is the only one that starts pods, so once it is gone the
	// pod count can only go down.
	loops.Wait()
	s.wg.Wait()
	factory.Shutdown()
	s.log.Info("demo cluster stopped")
	return nil
}

func (s *simulator) clearActions(ctx context.Context) {
	t := time.NewTicker(clearActionsEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			s.client.ClearActions()
		case <-ctx.Done():
			return
		}
	}
}

func (s *simulator) processNext(ctx context.Context) bool {
	k, shutdown := s.queue.Get()
	if shutdown {
		return false
	}
	defer s.queue.Done(k)
	var err error
	switch k.kind {
	case deploymentKey:
		err = s.syncDeployment(ctx, k.namespace, k.name)
	case serviceKey:
		err = s.syncService(ctx, k.namespace, k.name)
	}
	if err == nil || ctx.Err() != nil {
		s.queue.Forget(k)
		return true
	}
	s.log.Warn("demo sync failed, retrying", "namespace", k.namespace, "name", k.name, "err", err)
	s.queue.AddRateLimited(k)
	return true
}

// objectKey reads namespace and name from an informer object or tombstone.
func objectKey(obj any) (string, string, bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return "", "", false
	}
	return m.GetNamespace(), m.GetName(), true
}

func (s *simulator) keyHandler(kind keyKind) cache.ResourceEventHandler {
	add := func(obj any) {
		if ns, name, ok := objectKey(obj); ok {
			s.queue.Add(key{kind: kind, namespace: ns, name: name})
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    add,
		UpdateFunc: func(_, obj any) { add(obj) },
		DeleteFunc: add,
	}
}

// sliceHandler requeues the Service of a managed slice that someone else
// changed or deleted, so that it is repaired; the simulator's own writes come
// back here too and find nothing to do.
func (s *simulator) sliceHandler() cache.ResourceEventHandler {
	add := func(obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		es, ok := obj.(*discoveryv1.EndpointSlice)
		if !ok || es.Labels[discoveryv1.LabelManagedBy] != managedBy || es.Labels[discoveryv1.LabelServiceName] == "" {
			return
		}
		s.queue.Add(key{kind: serviceKey, namespace: es.Namespace, name: es.Labels[discoveryv1.LabelServiceName]})
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    add,
		UpdateFunc: func(_, obj any) { add(obj) },
		DeleteFunc: add,
	}
}

// podHandler turns deletions into terminations. A graceful delete arrives as
// an update that sets deletionTimestamp; a forced one (or a delete that went
// around the API) as a delete, which still gets the full graceful
// termination, since the pod's process does not vanish with its object.
func (s *simulator) podHandler() cache.ResourceEventHandler {
	handle := func(obj any, deleted bool) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
			deleted = true
		}
		o, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		s.mu.Lock()
		p := s.pods[o.Namespace+"/"+o.Name]
		s.mu.Unlock()
		if p == nil || p.uid != o.UID {
			if !deleted && o.DeletionTimestamp != nil {
				s.finishForeignPod(o)
			}
			return
		}
		switch {
		case deleted:
			s.requestTermination(p, s.opts.TerminationGrace, time.Now())
		case o.DeletionTimestamp != nil:
			s.requestTermination(p, s.graceOf(o), o.DeletionTimestamp.Time)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { handle(obj, false) },
		UpdateFunc: func(_, obj any) { handle(obj, false) },
		DeleteFunc: func(obj any) { handle(obj, true) },
	}
}

// graceOf reads the grace period of a deletion. The API counts in whole
// seconds; when the delete used the pod's own default, the exact configured
// duration is used, so that sub-second test settings keep working.
func (s *simulator) graceOf(o *corev1.Pod) time.Duration {
	if o.DeletionGracePeriodSeconds == nil || *o.DeletionGracePeriodSeconds == graceSeconds(s.opts.TerminationGrace) {
		return s.opts.TerminationGrace
	}
	return time.Duration(*o.DeletionGracePeriodSeconds) * time.Second
}

// finishForeignPod removes a Pod marked for deletion that no simulated
// kubelet runs (someone created it directly), since nothing else would.
func (s *simulator) finishForeignPod(o *corev1.Pod) {
	err := s.client.CoreV1().Pods(o.Namespace).Delete(context.Background(), o.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptrTo(int64(0)),
		Preconditions:      &metav1.Preconditions{UID: &o.UID},
	})
	if err != nil && !isNotFound(err) && !apierrors.IsConflict(err) {
		s.log.Warn("delete foreign pod", "pod", o.Namespace+"/"+o.Name, "err", err)
	}
}

// requestTermination starts a pod's graceful termination; later requests
// change nothing, as a second delete of a terminating pod does not.
func (s *simulator) requestTermination(p *pod, grace time.Duration, at time.Time) {
	s.mu.Lock()
	if p.terminating {
		s.mu.Unlock()
		return
	}
	p.terminating, p.deletedAt, p.grace = true, at, grace
	close(p.terminate)
	s.mu.Unlock()
	s.log.Debug("pod terminating", "pod", p.key(), "grace", grace)
	s.enqueuePod(p)
}

// enqueuePod queues what a pod change can affect: its Deployment's status and
// the slices of every Service that selects it.
func (s *simulator) enqueuePod(p *pod) {
	s.queue.Add(key{kind: deploymentKey, namespace: p.namespace, name: p.deploy})
	svcs, err := s.services.Services(p.namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, svc := range svcs {
		if len(svc.Spec.Selector) > 0 && labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(p.labels)) {
			s.queue.Add(key{kind: serviceKey, namespace: svc.Namespace, name: svc.Name})
		}
	}
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }

// templateHash names a pod template the way the pod-template-hash label
// does: stable for equal templates, 10 characters of the name alphabet.
func templateHash(t *corev1.PodTemplateSpec) string {
	b, err := json.Marshal(t)
	if err != nil {
		// API types always marshal; keep going with a constant hash.
		b = nil
	}
	h := fnv.New64a()
	_, _ = h.Write(b)
	v := h.Sum64()
	out := make([]byte, 10)
	for i := range out {
		out[i] = nameAlphabet[v%uint64(len(nameAlphabet))]
		v /= uint64(len(nameAlphabet))
	}
	return string(out)
}

// rankedPod is a pod with what scale-in decides on, read under s.mu.
type rankedPod struct {
	p          *pod
	bound      bool
	ready      bool
	readySince time.Time
	created    time.Time
}

// deleteFirst orders pods the way the ReplicaSet controller picks victims:
// not yet running before running, not ready before ready, the most recently
// ready before the long ready, then the newest.
func deleteFirst(a, b rankedPod) int {
	switch {
	case a.bound != b.bound:
		return boolFirst(!a.bound, !b.bound)
	case a.ready != b.ready:
		return boolFirst(!a.ready, !b.ready)
	case a.ready && !a.readySince.Equal(b.readySince):
		return b.readySince.Compare(a.readySince)
	case !a.created.Equal(b.created):
		return b.created.Compare(a.created)
	}
	return cmp.Compare(b.p.name, a.p.name)
}

func boolFirst(a, b bool) int {
	switch {
	case a && !b:
		return -1
	case b && !a:
		return 1
	}
	return 0
}

// syncDeployment brings the number of live pods of the current template to
// spec.replicas, retires pods of older templates once the new ones are ready
// and reports the counts in the Deployment's and ReplicaSets' status.
func (s *simulator) syncDeployment(ctx context.Context, ns, name string) error {
	d, err := s.client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if isNotFound(err) {
		return s.removeWorkload(ctx, ns, name)
	}
	if err != nil {
		return fmt.Errorf("get deployment %s/%s: %w", ns, name, err)
	}
	want := 1
	if d.Spec.Replicas != nil {
		want = int(*d.Spec.Replicas)
	}
	hash := templateHash(&d.Spec.Template)
	rs, err := s.ensureReplicaSet(ctx, d, hash, want)
	if err != nil {
		return err
	}

	var current, old []rankedPod
	readyCurrent := 0
	s.mu.Lock()
	for _, p := range s.pods {
		if p.namespace != ns || p.deploy != name || p.terminating {
			continue
		}
		r := rankedPod{p: p, bound: p.ip.IsValid(), ready: p.ready, readySince: p.readySince, created: p.created}
		if p.hash == hash {
			current = append(current, r)
			if p.ready {
				readyCurrent++
			}
		} else {
			old = append(old, r)
		}
	}
	s.mu.Unlock()

	for i := len(current); i < want; i++ {
		if err := s.createPod(ctx, d, rs, hash); err != nil {
			return err
		}
	}
	if len(current) > want {
		slices.SortFunc(current, deleteFirst)
		for _, r := range current[:len(current)-want] {
			if err := s.deletePod(ctx, r.p); err != nil {
				return err
			}
		}
	}
	// Pods of an older template go once the new ones can take the traffic.
	if readyCurrent >= want {
		for _, r := range old {
			if err := s.deletePod(ctx, r.p); err != nil {
				return err
			}
		}
	}
	return s.writeWorkloadStatus(ctx, d, hash, want)
}

// ensureReplicaSet finds or creates the ReplicaSet of the current template,
// which the pods name as their owner.
func (s *simulator) ensureReplicaSet(ctx context.Context, d *appsv1.Deployment, hash string, want int) (*appsv1.ReplicaSet, error) {
	name := d.Name + "-" + hash
	rsClient := s.client.AppsV1().ReplicaSets(d.Namespace)
	rs, err := rsClient.Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		return rs, nil
	}
	if !isNotFound(err) {
		return nil, fmt.Errorf("get replicaset %s/%s: %w", d.Namespace, name, err)
	}
	template := d.Spec.Template.DeepCopy()
	template.Labels = withLabel(template.Labels, appsv1.DefaultDeploymentUniqueLabelKey, hash)
	selector := d.Spec.Selector.DeepCopy()
	if selector == nil {
		selector = &metav1.LabelSelector{}
	}
	selector.MatchLabels = withLabel(selector.MatchLabels, appsv1.DefaultDeploymentUniqueLabelKey, hash)
	rs = &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: d.Namespace,
			Labels:          template.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))},
		},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptrTo(int32(want)), Selector: selector, Template: *template},
	}
	created, err := rsClient.Create(ctx, rs, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return rsClient.Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("create replicaset %s/%s: %w", d.Namespace, name, err)
	}
	return created, nil
}

func withLabel(m map[string]string, k, v string) map[string]string {
	out := maps.Clone(m)
	if out == nil {
		out = map[string]string{}
	}
	out[k] = v
	return out
}

// createPod creates one pod of the ReplicaSet and starts its kubelet.
func (s *simulator) createPod(ctx context.Context, d *appsv1.Deployment, rs *appsv1.ReplicaSet, hash string) error {
	podLabels := withLabel(d.Spec.Template.Labels, appsv1.DefaultDeploymentUniqueLabelKey, hash)
	spec := d.Spec.Template.Spec.DeepCopy()
	spec.NodeName = nodeName
	if spec.TerminationGracePeriodSeconds == nil {
		spec.TerminationGracePeriodSeconds = ptrTo(graceSeconds(s.opts.TerminationGrace))
	}
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	for range 8 {
		name := rs.Name + "-" + s.names.suffix(5)
		now := time.Now()
		obj := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: name, GenerateName: rs.Name + "-", Namespace: d.Namespace,
				// The UID is chosen here rather than by the create reactor so
				// that the pod is in the table, UID and all, before the
				// informer can report it.
				UID:               uuid.NewUUID(),
				CreationTimestamp: metav1.NewTime(now),
				Labels:            podLabels,
				Annotations:       maps.Clone(d.Spec.Template.Annotations),
				OwnerReferences:   []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))},
			},
			Spec:   *spec,
			Status: corev1.PodStatus{Phase: corev1.PodPending},
		}
		p := &pod{
			namespace: d.Namespace, name: name, deploy: d.Name, hash: hash, labels: podLabels,
			object: obj, uid: obj.UID, created: now, terminate: make(chan struct{}),
		}
		obj.Status = s.podStatus(p)
		s.mu.Lock()
		if _, taken := s.pods[p.key()]; taken {
			s.mu.Unlock()
			continue
		}
		s.pods[p.key()] = p
		s.mu.Unlock()
		_, err := s.client.CoreV1().Pods(d.Namespace).Create(ctx, obj, metav1.CreateOptions{})
		if err != nil {
			s.mu.Lock()
			delete(s.pods, p.key())
			s.mu.Unlock()
			if apierrors.IsAlreadyExists(err) {
				continue
			}
			return fmt.Errorf("create pod %s: %w", p.key(), err)
		}
		s.log.Debug("pod created", "pod", p.key())
		s.wg.Add(1)
		go s.runPod(ctx, p)
		return nil
	}
	return fmt.Errorf("create pod for replicaset %s/%s: no free name", d.Namespace, rs.Name)
}

// deletePod deletes a pod through the API, gracefully, and starts its
// termination at once so that the next sync already counts it as gone.
func (s *simulator) deletePod(ctx context.Context, p *pod) error {
	err := s.client.CoreV1().Pods(p.namespace).Delete(ctx, p.name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &p.uid},
	})
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("delete pod %s: %w", p.key(), err)
	}
	s.requestTermination(p, s.opts.TerminationGrace, time.Now())
	return nil
}

// removeWorkload plays the garbage collector for a deleted Deployment: its
// pods terminate and its ReplicaSets go.
func (s *simulator) removeWorkload(ctx context.Context, ns, name string) error {
	var victims []*pod
	s.mu.Lock()
	for _, p := range s.pods {
		if p.namespace == ns && p.deploy == name && !p.terminating {
			victims = append(victims, p)
		}
	}
	s.mu.Unlock()
	for _, p := range victims {
		if err := s.deletePod(ctx, p); err != nil {
			return err
		}
	}
	rsClient := s.client.AppsV1().ReplicaSets(ns)
	list, err := rsClient.List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list replicasets in %s: %w", ns, err)
	}
	for _, rs := range list.Items {
		if owner := metav1.GetControllerOf(&rs); owner == nil || owner.Kind != "Deployment" || owner.Name != name {
			continue
		}
		if err := rsClient.Delete(ctx, rs.Name, metav1.DeleteOptions{}); err != nil && !isNotFound(err) {
			return fmt.Errorf("delete replicaset %s/%s: %w", ns, rs.Name, err)
		}
	}
	return nil
}

// podCounts are the status numbers of one template hash.
type podCounts struct{ live, ready, terminating int32 }

func (s *simulator) countPods(ns, deploy string) map[string]podCounts {
	out := map[string]podCounts{}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.pods {
		if p.namespace != ns || p.deploy != deploy {
			continue
		}
		c := out[p.hash]
		switch {
		case p.terminating:
			c.terminating++
		case p.ready:
			c.live++
			c.ready++
		default:
			c.live++
		}
		out[p.hash] = c
	}
	return out
}

// writeWorkloadStatus reports pod counts on the Deployment and its
// ReplicaSets, writing only what changed.
func (s *simulator) writeWorkloadStatus(ctx context.Context, d *appsv1.Deployment, hash string, want int) error {
	counts := s.countPods(d.Namespace, d.Name)
	var total podCounts
	for _, c := range counts {
		total.live += c.live
		total.ready += c.ready
		total.terminating += c.terminating
	}
	st := d.Status.DeepCopy()
	st.ObservedGeneration = d.Generation
	st.Replicas = total.live
	st.UpdatedReplicas = counts[hash].live
	st.ReadyReplicas = total.ready
	st.AvailableReplicas = total.ready
	st.UnavailableReplicas = max(int32(want)-total.ready, 0)
	st.TerminatingReplicas = ptrTo(total.terminating)
	if !apiequality.Semantic.DeepEqual(&d.Status, st) {
		d = d.DeepCopy()
		d.Status = *st
		if _, err := s.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil && !isNotFound(err) {
			return fmt.Errorf("update status of deployment %s/%s: %w", d.Namespace, d.Name, err)
		}
	}

	rsClient := s.client.AppsV1().ReplicaSets(d.Namespace)
	list, err := rsClient.List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list replicasets in %s: %w", d.Namespace, err)
	}
	for i := range list.Items {
		rs := &list.Items[i]
		if owner := metav1.GetControllerOf(rs); owner == nil || owner.UID != d.UID {
			continue
		}
		h := rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
		replicas := int32(0)
		if h == hash {
			replicas = int32(want)
		}
		if rs.Spec.Replicas == nil || *rs.Spec.Replicas != replicas {
			rs.Spec.Replicas = ptrTo(replicas)
			updated, err := rsClient.Update(ctx, rs, metav1.UpdateOptions{})
			if err != nil {
				return fmt.Errorf("scale replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
			}
			rs = updated
		}
		c := counts[h]
		rst := rs.Status.DeepCopy()
		rst.ObservedGeneration = rs.Generation
		rst.Replicas, rst.FullyLabeledReplicas = c.live, c.live
		rst.ReadyReplicas, rst.AvailableReplicas = c.ready, c.ready
		rst.TerminatingReplicas = ptrTo(c.terminating)
		if !apiequality.Semantic.DeepEqual(&rs.Status, rst) {
			rs.Status = *rst
			if _, err := rsClient.UpdateStatus(ctx, rs, metav1.UpdateOptions{}); err != nil && !isNotFound(err) {
				return fmt.Errorf("update status of replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
			}
		}
	}
	return nil
}

func (s *simulator) podInfos(namespace, app string) []PodInfo {
	s.mu.Lock()
	out := make([]PodInfo, 0, len(s.pods))
	for _, p := range s.pods {
		if namespace != "" && p.namespace != namespace || app != "" && p.deploy != app {
			continue
		}
		info := PodInfo{
			Namespace: p.namespace, Name: p.name, App: p.deploy, Phase: string(corev1.PodPending),
			Ready: p.ready, Terminating: p.terminating, Created: p.created,
		}
		if p.ip.IsValid() {
			info.IP = p.ip.String()
			info.Addr = fmt.Sprintf("%s:%d", info.IP, s.opts.PodPort)
			info.Phase = string(corev1.PodRunning)
		}
		if p.server != nil {
			info.InFlight = p.server.InFlight()
		}
		out = append(out, info)
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b PodInfo) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}
