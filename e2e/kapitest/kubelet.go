package kapitest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	"github.com/dcm-router/dcm/dcm/demo/localpod"
	"github.com/dcm-router/dcm/e2e/podnet"
)

// NodeName is the one node of the test cluster.
const NodeName = "kapi-node"

// KubeletOptions tune the test kubelet.
type KubeletOptions struct {
	// ReadinessDelay is the time from listening to Ready (default 100ms);
	// a pod's readinessProbe.initialDelaySeconds overrides it.
	ReadinessDelay time.Duration
	// PreStopDelay is how long a terminating pod keeps accepting, as a
	// preStop hook would while endpoints propagate (default 300ms); a
	// pod's preStop sleep action overrides it.
	PreStopDelay time.Duration
	// Pods is the network the pods listen in (required): their addresses
	// are its 10.X.x.y, bound inside its namespace.
	Pods *podnet.Network
}

// Kubelet stands in for the scheduler and the kubelet of one node: it binds
// unscheduled Pods to its node and turns each into a real HTTP server on
// its own address in the test's pod network answering with the pod name, then reports the
// Pod Running and Ready with that IP, so that the real endpointslice
// controller writes real EndpointSlices. A deleted Pod terminates
// gracefully: it stays serving (terminating) for the preStop delay, shuts
// down waiting for its requests, and only then is removed.
type Kubelet struct {
	client kubernetes.Interface
	opts   KubeletOptions
	pool   *localpod.Pool
	log    *slog.Logger

	mu   sync.Mutex
	pods map[types.UID]*runningPod
	// dead are the pods Kill crashed: never started again, whatever the
	// informer says about them before their Failed status lands.
	dead map[types.UID]bool
	wg   sync.WaitGroup
}

type runningPod struct {
	ns, name  string
	uid       types.UID
	readiness time.Duration // from listening to Ready
	preStop   time.Duration // accepting while terminating
	grace     time.Duration
	terminate chan struct{} // closed when the Pod is being deleted
	gone      chan struct{} // closed when the Pod object no longer exists
	killed    chan struct{} // closed by Kill: the container crashed
	once      sync.Once
	goneOnce  sync.Once
	killOnce  sync.Once
	grpc      bool // serves gRPC (a container port named grpc), not HTTP
	// spec is the Pod as first seen, for a pod whose container is the
	// conformance suite's echo-basic (EchoBasicImage); nil for the others.
	spec *corev1.Pod
}

// StartKubelet registers the node and runs the kubelet until ctx ends; it
// returns once its informer has synced.
func StartKubelet(ctx context.Context, client kubernetes.Interface, opts KubeletOptions, log *slog.Logger) (*Kubelet, error) {
	if opts.ReadinessDelay == 0 {
		opts.ReadinessDelay = 100 * time.Millisecond
	}
	if opts.PreStopDelay == 0 {
		opts.PreStopDelay = 300 * time.Millisecond
	}
	if opts.Pods == nil {
		return nil, errors.New("kubelet: KubeletOptions.Pods is required (podnet.Setup)")
	}
	a := opts.Pods.Prefix().Addr().As4()
	pool := localpod.NewPoolWith([2]byte{a[0], a[1]}, opts.Pods.Listen)
	k := &Kubelet{client: client, opts: opts, pool: pool, log: log, pods: map[types.UID]*runningPod{}, dead: map[types.UID]bool{}}
	if err := k.registerNode(ctx); err != nil {
		return nil, err
	}
	f := informers.NewSharedInformerFactory(client, 0)
	inf := f.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.observe(ctx, obj) },
		UpdateFunc: func(_, obj any) { k.observe(ctx, obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok {
				k.deleted(p.UID)
			}
		},
	}); err != nil {
		return nil, err
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("kubelet: pod informer did not sync")
	}
	return k, nil
}

// Wait returns once every pod server has stopped (after ctx ended).
func (k *Kubelet) Wait() { k.wg.Wait() }

func (k *Kubelet) registerNode(ctx context.Context) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: NodeName}}
	created, err := k.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		created, err = k.client.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
	}
	if err != nil {
		return fmt.Errorf("register node: %w", err)
	}
	created.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(), Reason: "KubeletReady"}}
	created.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
	if _, err := k.client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("node status: %w", err)
	}
	return nil
}

func (k *Kubelet) observe(ctx context.Context, obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	switch {
	case p.Spec.NodeName == "" && p.DeletionTimestamp == nil:
		// The scheduler's job: bind it here.
		binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.UID},
			Target: corev1.ObjectReference{Kind: "Node", Name: NodeName}}
		if err := k.client.CoreV1().Pods(p.Namespace).Bind(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsConflict(err) {
			k.log.Warn("bind pod", "pod", p.Namespace+"/"+p.Name, "err", err)
		}
	case p.Spec.NodeName == NodeName:
		k.mu.Lock()
		rp, running := k.pods[p.UID]
		if !running && p.DeletionTimestamp == nil && !k.dead[p.UID] && p.Status.Phase != corev1.PodFailed {
			rp = &runningPod{ns: p.Namespace, name: p.Name, uid: p.UID, terminate: make(chan struct{}), gone: make(chan struct{}),
				killed: make(chan struct{})}
			rp.readiness, rp.preStop = k.lifecycle(p)
			rp.grpc = grpcPod(p)
			if echoContainer(p) != nil {
				rp.spec = p.DeepCopy()
			}
			k.pods[p.UID] = rp
			k.wg.Add(1)
			go func() {
				defer k.wg.Done()
				k.run(ctx, rp, containerPort(p))
			}()
		}
		k.mu.Unlock()
		if rp != nil && p.DeletionTimestamp != nil {
			grace := 30 * time.Second
			if p.DeletionGracePeriodSeconds != nil {
				grace = time.Duration(*p.DeletionGracePeriodSeconds) * time.Second
			}
			// Set once, before terminate is closed: run reads it after.
			rp.once.Do(func() { rp.grace = grace; close(rp.terminate) })
		}
	}
}

func (k *Kubelet) deleted(uid types.UID) {
	k.mu.Lock()
	rp, ok := k.pods[uid]
	k.mu.Unlock()
	if ok {
		rp.once.Do(func() { close(rp.terminate) })
		rp.goneOnce.Do(func() { close(rp.gone) })
	}
}

// Kill crashes a running pod: its server stops at once, without preStop
// or grace, as a container that died. The kubelet then reports the Pod
// Failed, retrying until the API server answers (it may be down), so its
// endpoint goes and its ReplicaSet replaces it. It reports whether the pod
// was running here.
func (k *Kubelet) Kill(ns, name string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, rp := range k.pods {
		if rp.ns == ns && rp.name == name {
			k.dead[rp.uid] = true
			rp.killOnce.Do(func() { close(rp.killed) })
			return true
		}
	}
	return false
}

// lifecycle reads the times a pod's first container asks for: its
// readinessProbe's initial delay (until Ready) and its preStop sleep (how
// long it keeps accepting once deleted, serving while terminating); the
// kubelet's defaults where it asks for none.
func (k *Kubelet) lifecycle(p *corev1.Pod) (readiness, preStop time.Duration) {
	readiness, preStop = k.opts.ReadinessDelay, k.opts.PreStopDelay
	if len(p.Spec.Containers) == 0 {
		return readiness, preStop
	}
	c := p.Spec.Containers[0]
	if c.ReadinessProbe != nil && c.ReadinessProbe.InitialDelaySeconds > 0 {
		readiness = time.Duration(c.ReadinessProbe.InitialDelaySeconds) * time.Second
	}
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Sleep != nil {
		preStop = time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
	}
	return readiness, preStop
}

func containerPort(p *corev1.Pod) int {
	for _, c := range p.Spec.Containers {
		for _, port := range c.Ports {
			if port.ContainerPort > 0 {
				return int(port.ContainerPort)
			}
		}
	}
	return 8080
}

// run is the life of one pod.
func (k *Kubelet) run(ctx context.Context, rp *runningPod, port int) {
	defer func() {
		k.mu.Lock()
		delete(k.pods, rp.uid)
		k.mu.Unlock()
	}()
	log := k.log.With("pod", rp.ns+"/"+rp.name)
	srv, addr, release, err := k.start(ctx, rp, port, log)
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, localpod.ErrCanceled) {
			// A container that cannot start (a bad certificate, say) stays
			// not Ready, as a crash-looping one does, rather than being
			// deleted and replaced by its ReplicaSet in a hot loop.
			log.Error("pod cannot start: it stays not Ready until deleted", "err", err)
			select {
			case <-rp.terminate:
			case <-ctx.Done():
			}
		}
		k.forceDelete(ctx, rp)
		return
	}
	defer release()
	k.setStatus(ctx, rp, addr, false)
	select {
	case <-time.After(rp.readiness):
		k.setStatus(ctx, rp, addr, true)
	case <-rp.terminate:
	case <-rp.killed:
	case <-ctx.Done():
	}
	select {
	case <-rp.terminate:
	case <-rp.killed:
		_ = srv.Stop(ctx, time.Now())
		k.reportFailed(ctx, rp)
		return
	case <-ctx.Done():
		_ = srv.Stop(ctx, time.Now())
		return
	}
	// Terminating: the endpoint is terminating but serving; keep accepting
	// for the preStop delay, then stop gracefully within the grace period.
	select {
	case <-time.After(min(rp.preStop, rp.grace)): // a hook outliving the grace period is cut
	case <-rp.gone:
	case <-ctx.Done():
	}
	if err := srv.Stop(ctx, time.Now().Add(max(rp.grace-rp.preStop, time.Second))); err != nil {
		log.Warn("pod server stop", "err", err)
	}
	k.forceDelete(ctx, rp)
}

// start binds the pod's address and starts what it serves; release returns
// the address to the pool once the server has stopped.
func (k *Kubelet) start(ctx context.Context, rp *runningPod, port int, log *slog.Logger) (podServer, netip.Addr, func(), error) {
	if rp.spec != nil {
		return k.startEcho(ctx, rp, log)
	}
	ln, addr, release, err := k.pool.Listen(ctx, port, rp.terminate, log)
	if err != nil {
		return nil, netip.Addr{}, nil, err
	}
	return servePod(rp, ln, log), addr, release, nil
}

// setStatus reports the pod Running with its IP, Ready or not.
func (k *Kubelet) setStatus(ctx context.Context, rp *runningPod, addr netip.Addr, ready bool) {
	err := k.updateStatus(ctx, rp, func(p *corev1.Pod, now metav1.Time) {
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		p.Status.Phase = corev1.PodRunning
		p.Status.HostIP = "127.0.0.1"
		p.Status.PodIP = addr.String()
		p.Status.PodIPs = []corev1.PodIP{{IP: addr.String()}}
		if p.Status.StartTime == nil {
			p.Status.StartTime = &now
		}
		p.Status.Conditions = []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: status, LastTransitionTime: now},
			{Type: corev1.PodReady, Status: status, LastTransitionTime: now},
		}
	})
	if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
		k.log.Warn("pod status", "pod", rp.ns+"/"+rp.name, "err", err)
	}
}

// reportFailed sets a crashed pod's phase to Failed and its conditions to
// not ready, retrying every half second while the API server is away.
func (k *Kubelet) reportFailed(ctx context.Context, rp *runningPod) {
	for ctx.Err() == nil {
		err := k.updateStatus(ctx, rp, func(p *corev1.Pod, now metav1.Time) {
			p.Status.Phase = corev1.PodFailed
			p.Status.Reason = "Killed"
			p.Status.Conditions = []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, LastTransitionTime: now},
				{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: now},
			}
		})
		if err == nil || apierrors.IsNotFound(err) {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// updateStatus writes the status set changes on the pod rp runs, retried on
// conflicts; a pod of the same name but another UID is left alone.
func (k *Kubelet) updateStatus(ctx context.Context, rp *runningPod, set func(p *corev1.Pod, now metav1.Time)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := k.client.CoreV1().Pods(rp.ns).Get(ctx, rp.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.UID != rp.uid {
			return nil
		}
		set(p, metav1.Now())
		_, err = k.client.CoreV1().Pods(rp.ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	})
}

// forceDelete removes the Pod object once its server has stopped, as the
// kubelet does after the containers exit.
func (k *Kubelet) forceDelete(ctx context.Context, rp *runningPod) {
	if ctx.Err() != nil {
		return // the test is over; so is its namespace
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	zero := int64(0)
	err := k.client.CoreV1().Pods(rp.ns).Delete(ctx, rp.name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &rp.uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		k.log.Warn("delete pod", "pod", rp.ns+"/"+rp.name, "err", err)
	}
}
