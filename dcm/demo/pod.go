package demo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dcm-router/dcm/dcm/demo/localpod"
)

// stopTimeout bounds how long Run waits for in-flight requests once its
// context is done, so that dcm's own shutdown stays quick; the pod servers'
// Stop applies it.
const stopTimeout = localpod.StopTimeout

// nameGen draws the random parts of names (pod suffixes, generateName) from
// one seeded source, so that a seeded demo names its objects the same way
// every time.
type nameGen struct {
	mu sync.Mutex
	r  *rand.Rand
}

// nameAlphabet is the API server's: lower-case consonants and digits without
// look-alikes, so that random names never spell words.
const nameAlphabet = "bcdfghjklmnpqrstvwxz2456789"

func newNameGen(seed uint64) *nameGen {
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	return &nameGen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

func (g *nameGen) suffix(n int) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	b := make([]byte, n)
	for i := range b {
		b[i] = nameAlphabet[g.r.IntN(len(nameAlphabet))]
	}
	return string(b)
}

// pod is the simulator's record of one pod. Fields below mu are guarded by
// simulator.mu.
type pod struct {
	namespace string
	name      string
	deploy    string
	hash      string
	labels    map[string]string
	// object is the Pod as created; status writes send it with a new status.
	object  *corev1.Pod
	uid     types.UID
	created time.Time
	// terminate is closed once termination is requested.
	terminate chan struct{}

	// mu: simulator.mu
	release     func()           // returns ip to the pool; nil until the server listens
	ip          netip.Addr       // invalid until the server listens
	server      *localpod.Server // nil until the server listens
	started     time.Time
	ready       bool
	readySince  time.Time
	terminating bool
	deletedAt   time.Time
	grace       time.Duration
}

func (p *pod) key() string { return p.namespace + "/" + p.name }

// runPod is the kubelet for one pod: listen, Running, Ready after the
// readiness delay, then on termination keep serving for the preStop delay,
// shut down within the grace period and release the address.
func (s *simulator) runPod(ctx context.Context, p *pod) {
	defer s.wg.Done()
	logger := s.log.With("pod", p.key())
	// Listen returns an error only once the pod is terminated or ctx ends.
	ln, ip, release, err := s.pool.Listen(ctx, s.opts.PodPort, p.terminate, logger)
	if err != nil {
		s.podGone(p)
		return
	}
	served, err := s.podListener(ctx, p, ln)
	if err != nil {
		logger.Warn("pod serves plain HTTP", "err", err)
		served = ln
	}
	ps := localpod.Serve(served, p.name, logger)
	s.mu.Lock()
	p.release, p.ip, p.started, p.server = release, ip, time.Now(), ps
	s.mu.Unlock()
	s.log.Debug("pod listening", "pod", p.key(), "addr", ln.Addr().String())
	s.writePodStatus(ctx, p)
	s.enqueuePod(p)

	ready := time.NewTimer(s.opts.ReadinessDelay)
	select {
	case <-ready.C:
		s.mu.Lock()
		p.ready, p.readySince = true, time.Now()
		s.mu.Unlock()
		s.log.Debug("pod ready", "pod", p.key())
		s.writePodStatus(ctx, p)
		s.enqueuePod(p)
	case <-p.terminate:
	case <-ctx.Done():
	}
	ready.Stop()

	select {
	case <-p.terminate:
	case <-ctx.Done():
	}
	s.mu.Lock()
	deadline := p.deletedAt.Add(p.grace)
	s.mu.Unlock()
	if ctx.Err() != nil {
		deadline = time.Now().Add(min(s.opts.TerminationGrace, stopTimeout))
	} else {
		// The preStop hook runs inside the grace period, as the kubelet's does.
		preStop := time.NewTimer(min(s.opts.PreStopDelay, time.Until(deadline)))
		select {
		case <-preStop.C:
		case <-ctx.Done():
		}
		preStop.Stop()
	}
	switch err := ps.Stop(ctx, deadline); {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		s.log.Info("pod grace period over, cutting in-flight requests", "pod", p.key())
	case err != nil:
		s.log.Warn("pod server did not stop cleanly", "pod", p.key(), "err", err)
	}
	s.log.Debug("pod stopped", "pod", p.key())
	s.podGone(p)
}

// podStatus is what the kubelet would report for the pod now.
func (s *simulator) podStatus(p *pod) corev1.PodStatus {
	s.mu.Lock()
	ip, started, ready, readySince := p.ip, p.started, p.ready, p.readySince
	s.mu.Unlock()
	st := corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBestEffort, HostIP: nodeIP,
		HostIPs: []corev1.HostIP{{IP: nodeIP}}}
	scheduled := metav1.NewTime(p.created)
	st.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: scheduled}}
	if !ip.IsValid() {
		return st
	}
	start := metav1.NewTime(started)
	st.Phase = corev1.PodRunning
	st.PodIP = ip.String()
	st.PodIPs = []corev1.PodIP{{IP: ip.String()}}
	st.StartTime = &start
	readyStatus, readyAt := corev1.ConditionFalse, start
	if ready {
		readyStatus, readyAt = corev1.ConditionTrue, metav1.NewTime(readySince)
	}
	st.Conditions = append(st.Conditions,
		corev1.PodCondition{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue, LastTransitionTime: start},
		corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: scheduled},
		corev1.PodCondition{Type: corev1.ContainersReady, Status: readyStatus, LastTransitionTime: readyAt},
		corev1.PodCondition{Type: corev1.PodReady, Status: readyStatus, LastTransitionTime: readyAt},
	)
	for _, c := range p.object.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image, Ready: ready, Started: ptrTo(true),
			ContainerID: fmt.Sprintf("demo://%s/%s", p.uid, c.Name),
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: start}},
		})
	}
	return st
}

// writePodStatus publishes the pod's status; the status reactor keeps
// everything else of the stored Pod (a deletion mark in particular).
func (s *simulator) writePodStatus(ctx context.Context, p *pod) {
	if ctx.Err() != nil {
		return
	}
	obj := p.object.DeepCopy()
	obj.Status = s.podStatus(p)
	if _, err := s.client.CoreV1().Pods(p.namespace).UpdateStatus(ctx, obj, metav1.UpdateOptions{}); err != nil {
		// Gone already (force-deleted): the termination path takes over.
		s.log.Debug("pod status not written", "pod", p.key(), "err", err)
	}
}

// podGone forgets a stopped pod, returns its address and deletes its Pod
// object with grace 0, which is how the kubelet finishes a graceful delete.
func (s *simulator) podGone(p *pod) {
	s.mu.Lock()
	delete(s.pods, p.key())
	release := p.release
	s.mu.Unlock()
	if release != nil {
		release()
	}
	err := s.client.CoreV1().Pods(p.namespace).Delete(context.Background(), p.name, metav1.DeleteOptions{
		GracePeriodSeconds: ptrTo(int64(0)),
		Preconditions:      &metav1.Preconditions{UID: &p.uid},
	})
	if err != nil && !isNotFound(err) {
		s.log.Warn("delete stopped pod", "pod", p.key(), "err", err)
	}
	s.enqueuePod(p)
}
