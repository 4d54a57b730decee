package demo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Timing of the simulated kubelet that Options does not expose.
const (
	// stopTimeout bounds how long Run waits for in-flight requests once its
	// context is done, so that dcm's own shutdown stays quick.
	stopTimeout = 3 * time.Second
	// bindAttempts is how many addresses a pod tries per round before it
	// waits bindRetry and tries again (another process may hold a few).
	bindAttempts = 16
	bindRetry    = time.Second
	// avoidFor keeps an address that could not be bound out of the pool for
	// a while, since whoever holds it is likely to keep it.
	avoidFor = 30 * time.Second
	// maxSlow caps /slow?ms= so that a typo cannot pin a pod for hours.
	maxSlow = 60 * time.Second
)

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

// addrPool hands out pod addresses prefix.x.y (x from 1, y in 1..254), the
// lowest free one first so that addresses stay short and get reused once
// their pod is gone, as pod IPs are in a real cluster.
type addrPool struct {
	prefix [2]byte
	used   map[int]bool
	avoid  map[int]time.Time
	// low is where alloc starts looking: every index below it is used.
	low int
}

// poolSize counts the addresses x in 1..255, y in 1..254.
const poolSize = 255 * 254

func newAddrPool(prefix [2]byte) *addrPool {
	return &addrPool{prefix: prefix, used: map[int]bool{}, avoid: map[int]time.Time{}}
}

func (p *addrPool) addr(i int) netip.Addr {
	return netip.AddrFrom4([4]byte{p.prefix[0], p.prefix[1], byte(1 + i/254), byte(1 + i%254)})
}

// alloc takes the lowest address that is neither used nor being avoided.
func (p *addrPool) alloc(now time.Time) (int, bool) {
	firstAvoided := -1
	for i := p.low; i < poolSize; i++ {
		if p.used[i] {
			continue
		}
		if until, ok := p.avoid[i]; ok {
			if now.Before(until) {
				if firstAvoided < 0 {
					firstAvoided = i
				}
				continue
			}
			delete(p.avoid, i)
		}
		p.used[i] = true
		p.low = i + 1
		if firstAvoided >= 0 {
			p.low = firstAvoided
		}
		return i, true
	}
	if firstAvoided >= 0 {
		p.low = firstAvoided
	}
	return 0, false
}

func (p *addrPool) release(i int) {
	delete(p.used, i)
	p.low = min(p.low, i)
}

// unusable releases an address that could not be bound and keeps it out of
// the pool until the given time.
func (p *addrPool) unusable(i int, until time.Time) {
	p.release(i)
	p.avoid[i] = until
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
	addrIndex   int
	ip          netip.Addr // invalid until the server listens
	started     time.Time
	ready       bool
	readySince  time.Time
	terminating bool
	deletedAt   time.Time
	grace       time.Duration
}

func (p *pod) key() string { return p.namespace + "/" + p.name }

// podServer is a pod's HTTP server.
type podServer struct {
	srv       *http.Server
	cancel    context.CancelFunc // cancels every request's context
	serveDone chan struct{}
}

// listen binds the pod to a free address, trying the next one when an address
// is taken. It returns nil when the pod is terminated or ctx ends first.
func (s *simulator) listen(ctx context.Context, p *pod) net.Listener {
	var lc net.ListenConfig
	for {
		for range bindAttempts {
			if ctx.Err() != nil {
				return nil
			}
			s.mu.Lock()
			i, ok := s.pool.alloc(time.Now())
			s.mu.Unlock()
			if !ok {
				break
			}
			addr := s.pool.addr(i)
			ln, err := lc.Listen(ctx, "tcp", netip.AddrPortFrom(addr, uint16(s.opts.PodPort)).String())
			if err == nil {
				s.mu.Lock()
				p.addrIndex, p.ip, p.started = i, addr, time.Now()
				s.mu.Unlock()
				return ln
			}
			s.mu.Lock()
			if ctx.Err() != nil {
				// The listen failed because Run is ending, not the address.
				s.pool.release(i)
				s.mu.Unlock()
				return nil
			}
			s.pool.unusable(i, time.Now().Add(avoidFor))
			s.mu.Unlock()
			s.log.Warn("pod address unusable, trying the next one", "pod", p.key(), "addr", addr, "err", err)
		}
		s.log.Error("pod found no address to listen on, retrying", "pod", p.key(), "prefix", s.opts.AddrPrefix)
		t := time.NewTimer(bindRetry)
		select {
		case <-t.C:
		case <-p.terminate:
			t.Stop()
			return nil
		case <-ctx.Done():
			t.Stop()
			return nil
		}
	}
}

func serve(ln net.Listener, name string, logger *slog.Logger) *podServer {
	base, cancel := context.WithCancel(context.Background())
	ps := &podServer{
		srv: &http.Server{
			Handler:           podHandler(name),
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       90 * time.Second,
			BaseContext:       func(net.Listener) context.Context { return base },
			ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
		},
		cancel:    cancel,
		serveDone: make(chan struct{}),
	}
	go func() {
		defer close(ps.serveDone)
		// Serve returns ErrServerClosed once shutdown starts; anything else
		// is a listener failure the termination path cleans up after.
		_ = ps.srv.Serve(ln)
	}()
	return ps
}

// stop shuts the server down gracefully: it stops accepting, closes idle
// connections and waits for in-flight requests until deadline, or until
// stopTimeout after ctx ends, whichever is first; then it closes whatever is
// left and cancels the requests' contexts so that no handler outlives it.
func (ps *podServer) stop(ctx context.Context, deadline time.Time) error {
	shCtx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- ps.srv.Shutdown(shCtx) }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		t := time.NewTimer(stopTimeout)
		select {
		case err = <-done:
		case <-t.C:
			cancel()
			err = <-done
		}
		t.Stop()
	}
	closeErr := ps.srv.Close()
	ps.cancel()
	<-ps.serveDone
	return errors.Join(err, closeErr)
}

// podHandler is the demo container: it says who answered, so that a client
// going through HAProxy sees where each request landed.
func podHandler(name string) http.Handler {
	body := []byte(name + "\n")
	answer := func(w http.ResponseWriter) {
		w.Header().Set("X-Pod", name)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write(body)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Pod", name)
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		ms, err := strconv.Atoi(r.URL.Query().Get("ms"))
		if err != nil || ms < 0 {
			w.Header().Set("X-Pod", name)
			http.Error(w, "want /slow?ms=<non-negative integer>", http.StatusBadRequest)
			return
		}
		d := time.Duration(min(ms, int(maxSlow/time.Millisecond))) * time.Millisecond
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			answer(w)
		case <-r.Context().Done():
			// The client left (or the pod was killed): nobody to answer.
		}
	})
	// Every other path answers, so that any route HAProxy sends here works.
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { answer(w) })
	return mux
}

// runPod is the kubelet for one pod: listen, Running, Ready after the
// readiness delay, then on termination keep serving for the preStop delay,
// shut down within the grace period and release the address.
func (s *simulator) runPod(ctx context.Context, p *pod) {
	defer s.wg.Done()
	ln := s.listen(ctx, p)
	if ln == nil {
		s.podGone(p)
		return
	}
	ps := serve(ln, p.name, s.log.With("pod", p.key()))
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
	switch err := ps.stop(ctx, deadline); {
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
	if p.ip.IsValid() {
		s.pool.release(p.addrIndex)
	}
	s.mu.Unlock()
	err := s.client.CoreV1().Pods(p.namespace).Delete(context.Background(), p.name, metav1.DeleteOptions{
		GracePeriodSeconds: ptrTo(int64(0)),
		Preconditions:      &metav1.Preconditions{UID: &p.uid},
	})
	if err != nil && !isNotFound(err) {
		s.log.Warn("delete stopped pod", "pod", p.key(), "err", err)
	}
	s.enqueuePod(p)
}
