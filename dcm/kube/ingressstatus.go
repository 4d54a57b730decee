package kube

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/dcm-router/dcm/dcm"
)

// IngressStatusOptions make dcm write status.loadBalancer.ingress of the
// Ingresses it serves, as ingress-nginx does: the address clients reach
// dcm at, which `kubectl get ingress` shows and external-dns reads.
type IngressStatusOptions struct {
	// Client updates ingresses/status (and watches the published Service).
	Client kubernetes.Interface
	// Service (namespace/name, --publish-service) publishes its
	// load-balancer ingress addresses, else its ClusterIPs; it is watched,
	// so a load balancer that gets its address later is published then.
	Service string
	// Addresses (--publish-address) are published as they are: an IP
	// address as ip, anything else as hostname. Service wins when both
	// are set.
	Addresses []string
}

// ingressStatus is the state of the Ingress status writer.
type ingressStatus struct {
	opts  IngressStatusOptions
	queue workqueue.TypedRateLimitingInterface[string] // namespace/name
	mu    sync.Mutex
	// addrs is what is published; known is false until the published
	// Service has been read (nothing is written before).
	addrs []networkingv1.IngressLoadBalancerIngress
	known bool
	// gone holds the Ingresses that left the cache until the writer has
	// cleared dcm's addresses from them.
	gone lastSeen[*networkingv1.Ingress]
}

// ingressGone keeps the last state of an Ingress that left the cache, as
// routeGone does for Routes: relabelled out of the shard, it is no longer
// dcm's, and the delete event carries the object at its new
// resourceVersion, which the status update needs.
func (s *Source) ingressGone(obj any) {
	ing, ok := unwrapTombstone(obj).(*networkingv1.Ingress)
	if !ok || s.is == nil {
		return
	}
	key := ing.Namespace + "/" + ing.Name
	s.is.gone.put(key, ing)
	s.is.queue.Add(key)
}

// WriteIngressStatus makes Run write the status of Ingresses: the
// published addresses on those dcm serves, none on those it stopped
// serving. Call before Run.
func (s *Source) WriteIngressStatus(o IngressStatusOptions) {
	is := &ingressStatus{opts: o,
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())}
	if o.Service == "" {
		is.addrs, is.known = PublishedAddresses(o.Addresses), true
	}
	s.is = is
}

// PublishedAddresses turns --publish-address values into load-balancer
// ingress entries, sorted.
func PublishedAddresses(values []string) []networkingv1.IngressLoadBalancerIngress {
	out := []networkingv1.IngressLoadBalancerIngress{}
	for _, v := range values {
		if v = strings.TrimSpace(v); v == "" {
			continue
		}
		if _, err := netip.ParseAddr(v); err == nil {
			out = append(out, networkingv1.IngressLoadBalancerIngress{IP: v})
		} else {
			out = append(out, networkingv1.IngressLoadBalancerIngress{Hostname: v})
		}
	}
	return sortedLB(out)
}

// ServiceAddresses is what a Service publishes: its load balancer's
// addresses, else its external name, else its ClusterIPs (none for a
// headless Service).
func ServiceAddresses(svc *corev1.Service) []networkingv1.IngressLoadBalancerIngress {
	out := []networkingv1.IngressLoadBalancerIngress{}
	for _, lb := range svc.Status.LoadBalancer.Ingress {
		out = append(out, networkingv1.IngressLoadBalancerIngress{IP: lb.IP, Hostname: lb.Hostname})
	}
	switch {
	case len(out) > 0:
	case svc.Spec.Type == corev1.ServiceTypeExternalName:
		out = append(out, networkingv1.IngressLoadBalancerIngress{Hostname: svc.Spec.ExternalName})
	default:
		ips := svc.Spec.ClusterIPs
		if len(ips) == 0 && svc.Spec.ClusterIP != "" {
			ips = []string{svc.Spec.ClusterIP}
		}
		for _, ip := range ips {
			if ip != corev1.ClusterIPNone {
				out = append(out, networkingv1.IngressLoadBalancerIngress{IP: ip})
			}
		}
	}
	return sortedLB(out)
}

func sortedLB(l []networkingv1.IngressLoadBalancerIngress) []networkingv1.IngressLoadBalancerIngress {
	slices.SortFunc(l, func(a, b networkingv1.IngressLoadBalancerIngress) int {
		return cmp.Or(strings.Compare(a.IP, b.IP), strings.Compare(a.Hostname, b.Hostname))
	})
	return slices.CompactFunc(l, func(a, b networkingv1.IngressLoadBalancerIngress) bool {
		return a.IP == b.IP && a.Hostname == b.Hostname
	})
}

// sameLB compares the addresses of two lists, in any order, ignoring
// ports (dcm writes none).
func sameLB(a, b []networkingv1.IngressLoadBalancerIngress) bool {
	strip := func(l []networkingv1.IngressLoadBalancerIngress) []networkingv1.IngressLoadBalancerIngress {
		out := make([]networkingv1.IngressLoadBalancerIngress, 0, len(l))
		for _, e := range l {
			out = append(out, networkingv1.IngressLoadBalancerIngress{IP: e.IP, Hostname: e.Hostname})
		}
		return sortedLB(out)
	}
	return slices.EqualFunc(strip(a), strip(b), func(x, y networkingv1.IngressLoadBalancerIngress) bool {
		return x.IP == y.IP && x.Hostname == y.Hostname
	})
}

// published is what is published now, and whether it is known yet.
func (is *ingressStatus) published() ([]networkingv1.IngressLoadBalancerIngress, bool) {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.addrs, is.known
}

// watchPublished watches the published Service (its namespace, its name
// only) until ctx ends; every change of its addresses queues every
// Ingress.
func (s *Source) watchPublished(ctx context.Context, wg *sync.WaitGroup) {
	ns, name, _ := strings.Cut(s.is.opts.Service, "/")
	f := informers.NewSharedInformerFactoryWithOptions(s.is.opts.Client, s.opts.Resync, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + name }))
	update := func(obj any) {
		svc, ok := unwrapTombstone(obj).(*corev1.Service)
		if !ok || svc.Name != name {
			return
		}
		addrs := ServiceAddresses(svc)
		s.is.mu.Lock()
		changed := !s.is.known || !sameLB(s.is.addrs, addrs)
		s.is.addrs, s.is.known = addrs, true
		s.is.mu.Unlock()
		if changed {
			s.log.Info("published addresses", "service", s.is.opts.Service, "addresses", lbString(addrs))
			for _, k := range s.ingressKeys() {
				s.is.queue.Add(k)
			}
		}
	}
	_, err := f.Core().V1().Services().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    update,
		UpdateFunc: func(_, obj any) { update(obj) },
		// A deleted Service publishes nothing: every Ingress is cleared.
		DeleteFunc: func(any) {
			update(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone}})
		},
	})
	if err != nil {
		s.log.Error("watch the published service", "err", err)
		return
	}
	f.Start(ctx.Done())
	wg.Go(func() {
		<-ctx.Done()
		f.Shutdown()
	})
}

func lbString(l []networkingv1.IngressLoadBalancerIngress) string {
	parts := make([]string, 0, len(l))
	for _, e := range l {
		parts = append(parts, e.IP+e.Hostname)
	}
	return strings.Join(parts, ",")
}

// ingressKeys lists the namespace/name of every Ingress in the caches.
func (s *Source) ingressKeys() []string {
	var keys []string
	for _, ns := range slices.Sorted(maps.Keys(s.listers)) {
		ings, err := s.listers[ns].ingresses.List(labels.Everything())
		if err != nil {
			s.log.Error("list ingresses", "err", err)
			continue
		}
		for _, ing := range ings {
			keys = append(keys, ing.Namespace+"/"+ing.Name)
		}
	}
	return keys
}

// startStatus starts what writes status: the leader election, the
// workers of Route and Ingress status, the published Service's watch.
func (s *Source) startStatus(ctx context.Context, wg *sync.WaitGroup) {
	if s.rw.status == nil && s.is == nil && s.gw.status == nil {
		return
	}
	if s.election == nil {
		s.leading.Store(true)
	} else {
		wg.Go(func() { s.runElection(ctx) })
	}
	if s.rw.status != nil {
		wg.Go(func() { wait.UntilWithContext(ctx, s.runStatusWorker, time.Second) })
	}
	if s.gw.status != nil {
		wg.Go(func() { wait.UntilWithContext(ctx, s.runGatewayStatusWorker, time.Second) })
	}
	if s.is != nil {
		if s.is.opts.Service != "" {
			s.watchPublished(ctx, wg)
		}
		wg.Go(func() { wait.UntilWithContext(ctx, s.runIngressStatusWorker, time.Second) })
	}
}

func (s *Source) runIngressStatusWorker(ctx context.Context) {
	q := s.is.queue
	for {
		key, shutdown := q.Get()
		if shutdown {
			return
		}
		switch err := s.writeIngressStatus(ctx, key); {
		case err != nil:
			s.log.Warn("writing ingress status, retrying", "ingress", key, "err", err)
			q.AddRateLimited(key)
		default:
			q.Forget(key)
		}
		q.Done(key)
	}
}

// writeIngressStatus makes an Ingress's status.loadBalancer.ingress the
// published addresses if dcm serves it (of its class, in its shard, not
// rejected, or kept serving its last accepted version), and empties it
// if dcm does not but the addresses there are dcm's: an Ingress moved to
// another class keeps what its new controller writes. Nothing is written
// when the status already says so, so the update event it causes ends
// here; nor before the published Service has been read, nor by a replica
// that does not lead.
func (s *Source) writeIngressStatus(ctx context.Context, key string) error {
	addrs, known := s.is.published()
	switch {
	case !s.leading.Load():
		// Winning the Lease queues every Ingress again; one that left
		// the cache meanwhile is the leader's to clear.
		s.is.gone.take(key)
		return nil
	case !known:
		return nil // reading the Service queues it again
	}
	ns, name, _ := strings.Cut(key, "/")
	ls, ok := s.lister(ns)
	if !ok {
		return nil
	}
	gone := s.is.gone.take(key)
	ing, err := ls.ingresses.Ingresses(ns).Get(name)
	switch {
	case apierrors.IsNotFound(err) && gone != nil:
		return s.clearGoneIngress(ctx, gone, addrs)
	case apierrors.IsNotFound(err):
		s.contention.forget("ingress:" + key)
		return nil
	case err != nil:
		return fmt.Errorf("get ingress: %w", err)
	}
	s.syncMu.Lock()
	st := s.ingresses[key]
	s.syncMu.Unlock()
	s.mu.Lock()
	_, rejected := s.rejections[dcm.ObjectRef{Kind: KindIngress, Namespace: ns, Name: name}]
	s.mu.Unlock()
	have := ing.Status.LoadBalancer.Ingress
	want := addrs
	if served := st != nil && (!rejected || st.refused != nil); !served {
		if len(have) == 0 || !sameLB(have, addrs) {
			return nil // not dcm's to clear
		}
		want = nil
	}
	if sameLB(have, want) {
		return nil
	}
	fp := lbString(want)
	if wait := s.contention.hold("ingress:"+key, fp, ing.ResourceVersion, s.now()); wait > 0 {
		s.is.queue.AddAfter(key, wait)
		s.log.Warn("ingress status contended: another writer keeps changing its addresses; leaving it alone for a while",
			"ingress", key, "for", wait)
		return nil
	}
	ing = ing.DeepCopy()
	ing.Status.LoadBalancer.Ingress = want
	out, err := s.is.opts.Client.NetworkingV1().Ingresses(ns).UpdateStatus(ctx, ing, metav1.UpdateOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("update status of ingress %s: %w", key, err)
	}
	s.statusWrites.Add(1)
	s.contention.wrote("ingress:"+key, fp, out.ResourceVersion, s.now())
	return nil
}

// clearGoneIngress empties the status of an Ingress that left the cache
// (out of the shard) if the addresses there are dcm's.
func (s *Source) clearGoneIngress(ctx context.Context, ing *networkingv1.Ingress, addrs []networkingv1.IngressLoadBalancerIngress) error {
	key := ing.Namespace + "/" + ing.Name
	s.contention.forget("ingress:" + key)
	if have := ing.Status.LoadBalancer.Ingress; len(have) == 0 || !sameLB(have, addrs) {
		return nil
	}
	ing = ing.DeepCopy()
	ing.Status.LoadBalancer.Ingress = nil
	_, err := s.is.opts.Client.NetworkingV1().Ingresses(ing.Namespace).UpdateStatus(ctx, ing, metav1.UpdateOptions{})
	switch {
	case err == nil:
		s.statusWrites.Add(1)
		return nil
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		// It changed since: dcm cannot read it (it is outside the cache),
		// and its next event brings it back here if it is still to clear.
		s.log.Warn("ingress left the shard but changed before dcm's addresses could be cleared", "ingress", key)
		return nil
	}
	return fmt.Errorf("clear status of ingress %s: %w", key, err)
}
