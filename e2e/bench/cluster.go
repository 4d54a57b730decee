package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
)

// podPort is the port every pod listens on, each on a loopback address of
// its own, as pods in a cluster each have an IP.
const podPort = 18080

// pod is a local HTTP server standing in for a Kubernetes pod: it answers
// its name on every path, and streams on /stream?s=N (a line every half
// second for N seconds), which is how the long-lived connections stay open
// without tripping HAProxy's server timeout.
type pod struct {
	name string
	addr string
	srv  *http.Server
	// terminating: the pod's endpoint is served as drain until it goes.
	terminating bool
	// first is when the pod got its first request (unix ns; 0: none yet).
	// Health checks are off, so only requests HAProxy routed reach it: the
	// end of the event → serving measurement, taken where it happens rather
	// than by a client that must hit the pod among its route's others.
	first atomic.Int64
}

func (p *pod) handler() http.Handler {
	name := p.name
	body := []byte(name + "\n")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.first.Load() == 0 {
			p.first.CompareAndSwap(0, time.Now().UnixNano())
		}
		if r.URL.Path != "/stream" {
			w.Header().Set("X-Pod", name)
			_, _ = w.Write(body)
			return
		}
		secs, _ := strconv.ParseFloat(r.URL.Query().Get("s"), 64)
		w.Header().Set("X-Pod", name)
		flusher, _ := w.(http.Flusher)
		deadline := time.Now().Add(time.Duration(secs * float64(time.Second)))
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for time.Now().Before(deadline) {
			if _, err := w.Write([]byte("tick\n")); err != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
			select {
			case <-t.C:
			case <-r.Context().Done():
				return
			}
		}
		_, _ = w.Write([]byte("end\n"))
	})
}

// nextIP numbers pod addresses across modes, so a pod of the previous mode
// still shutting down never holds an address the next one wants.
var nextIP atomic.Int64

// cluster is the Kubernetes side of one mode's run: routes, their pods (real
// servers) and the desired state dcm gets through a StaticSource.
type cluster struct {
	pubMu   sync.Mutex
	mu      sync.Mutex
	routes  map[string][]*pod // route → pods, oldest first
	nextPod int
	certs   *certs
	gen     map[string]int // edge route → which of its certificates its Secret holds
	set     func(dcm.Desired)
	wg      sync.WaitGroup // pods being stopped
}

func newCluster(set func(dcm.Desired), certs *certs) *cluster {
	return &cluster{routes: map[string][]*pod{}, set: set, certs: certs, gen: map[string]int{}}
}

// route is the dcm route of a route name: Ingress-like, host <name>.bench,
// health checks off (the pods' readiness is what the script says).
func route(name string) dcm.Route {
	return dcm.Route{Namespace: "bench", Name: name, Source: dcm.SourceIngress, Object: name, Kind: dcm.KindHTTP,
		Host: host(name), Path: "/", PathType: dcm.PathPrefix, Balance: dcm.BalanceRoundRobin,
		Services: []dcm.ServiceRef{{Name: name, Port: "http", Weight: 1}}}
}

// edgeRoute is route with TLS ending in HAProxy (an Ingress with spec.tls
// and dcm.io/ssl-redirect "false": the load is plain HTTP and must reach
// the pods, not a redirect), its Secret holding the certificate of the
// given version.
func edgeRoute(name, version string) dcm.Route {
	r := route(name)
	r.Kind = dcm.KindEdge
	r.TLS = &dcm.TLSRef{Secret: secretOf(name), Version: version}
	r.Insecure = dcm.InsecureAllow
	return r
}

// certs are the edge routes' certificates, made once so that every mode
// serves and rotates the same ones.
type certs struct {
	ca       *testkit.CA
	leaves   map[string][]testkit.Leaf // route → its certificates, in rotation order
	versions map[string][]string
}

func makeCerts(tb testing.TB, s Script) *certs {
	c := &certs{ca: testkit.NewCA(tb), leaves: map[string][]testkit.Leaf{}, versions: map[string][]string{}}
	var store testkit.CertStore
	for name, n := range s.Certs() {
		for range n {
			l := c.ca.Leaf(tb, host(name))
			c.leaves[name] = append(c.leaves[name], l)
			c.versions[name] = append(c.versions[name], store.Put(secretOf(name), l.PEM()))
		}
	}
	return c
}

func secretOf(route string) string { return "bench/" + route + "-tls" }

// store is the Secrets as the driver reads them: every certificate of the
// script, by version.
func (c *certs) store() *testkit.CertStore {
	var st testkit.CertStore
	for name, ls := range c.leaves {
		for _, l := range ls {
			st.Put(secretOf(name), l.PEM())
		}
	}
	return &st
}

// rotate moves an edge route's Secret to its next certificate and returns
// it; the caller publishes.
func (c *cluster) rotate(route string) testkit.Leaf {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen[route]++
	return c.certs.leaves[route][c.gen[route]]
}

func host(name string) string { return name + ".bench" }

// startPod binds the next free loopback address (127.200.x.y and up, far
// from the 127.0.x.y the other tests and the demo use; an address someone
// else holds is skipped) and serves the pod there.
func (c *cluster) startPod(route string) (*pod, error) {
	c.mu.Lock()
	name := fmt.Sprintf("%s-%d", route, c.nextPod)
	c.nextPod++
	c.mu.Unlock()
	for range 32 {
		i := int(nextIP.Add(1) - 1)
		addr := fmt.Sprintf("127.%d.%d.%d", 200+i/(254*254), i/254%254+1, i%254+1)
		ln, err := net.Listen("tcp", net.JoinHostPort(addr, strconv.Itoa(podPort)))
		if err != nil {
			continue
		}
		p := &pod{name: name, addr: addr}
		p.srv = &http.Server{Handler: p.handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 30 * time.Second}
		go func() { _ = p.srv.Serve(ln) }() // ErrServerClosed once stopped
		return p, nil
	}
	return nil, fmt.Errorf("pod %s: no loopback address could be bound", name)
}

// stopPod shuts a pod down gracefully in the background, as the kubelet
// does after the endpoint is gone.
func (c *cluster) stopPod(p *pod) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = p.srv.Shutdown(ctx)
		_ = p.srv.Close()
	}()
}

// addPods starts n pods for a route (creating it if needed) and returns
// them; the caller publishes.
func (c *cluster) addPods(route string, n int) ([]*pod, error) {
	var names []*pod
	for range n {
		p, err := c.startPod(route)
		if err != nil {
			return names, err
		}
		c.mu.Lock()
		c.routes[route] = append(c.routes[route], p)
		c.mu.Unlock()
		names = append(names, p)
	}
	return names, nil
}

// terminate marks the pods at the given indexes of a route's live pods as
// terminating (their endpoints drain) and returns them.
func (c *cluster) terminate(route string, victims []int) []*pod {
	c.mu.Lock()
	defer c.mu.Unlock()
	var live []*pod
	for _, p := range c.routes[route] {
		if !p.terminating {
			live = append(live, p)
		}
	}
	var out []*pod
	for _, i := range victims {
		if i < len(live) {
			live[i].terminating = true
			out = append(out, live[i])
		}
	}
	return out
}

// remove drops pods from their route (their endpoints are gone) and stops
// them after grace, so that a request HAProxy still sent them completes.
func (c *cluster) remove(route string, pods []*pod, grace time.Duration) {
	c.mu.Lock()
	if cur, ok := c.routes[route]; ok { // a deleted route took its pods along
		c.routes[route] = slices.DeleteFunc(cur, func(p *pod) bool { return slices.Contains(pods, p) })
	}
	c.mu.Unlock()
	c.publish()
	time.AfterFunc(grace, func() {
		for _, p := range pods {
			c.stopPod(p)
		}
	})
}

// deleteRoute drops a route and stops its pods after grace.
func (c *cluster) deleteRoute(route string, grace time.Duration) {
	c.mu.Lock()
	pods := c.routes[route]
	delete(c.routes, route)
	c.mu.Unlock()
	c.publish()
	time.AfterFunc(grace, func() {
		for _, p := range pods {
			c.stopPod(p)
		}
	})
}

// desired is what Kubernetes would say now: a backend per route, an
// endpoint per pod, ready or (terminating) drain.
func (c *cluster) desired() dcm.Desired {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := dcm.Desired{Backends: make([]*dcm.DesiredBackend, 0, len(c.routes))}
	for name, pods := range c.routes {
		r := route(name)
		if vs := c.certs.versions[name]; len(vs) > 0 {
			r = edgeRoute(name, vs[c.gen[name]])
		}
		b := dcm.DesiredBackend{Name: r.BackendName(), Route: r, Endpoints: make([]dcm.Endpoint, 0, len(pods))}
		for _, p := range pods {
			st := dcm.StateReady
			if p.terminating {
				st = dcm.StateDrain
			}
			b.Endpoints = append(b.Endpoints, dcm.Endpoint{Name: p.name + ":http", Addr: p.addr, Port: podPort, Weight: 1, State: st, Pod: p.name})
		}
		slices.SortFunc(b.Endpoints, func(x, y dcm.Endpoint) int { return strings.Compare(x.Name, y.Name) })
		d.Backends = append(d.Backends, &b)
	}
	slices.SortFunc(d.Backends, func(x, y *dcm.DesiredBackend) int { return strings.Compare(x.Name, y.Name) })
	return d
}

// publish is the API write: dcm sees the new desired state. pubMu keeps
// two writers from publishing their snapshots out of order.
func (c *cluster) publish() {
	c.pubMu.Lock()
	defer c.pubMu.Unlock()
	c.set(c.desired())
}

// close stops every pod and waits for them.
func (c *cluster) close() error {
	c.mu.Lock()
	var all []*pod
	for _, pods := range c.routes {
		all = append(all, pods...)
	}
	c.routes = map[string][]*pod{}
	c.mu.Unlock()
	var errs []error
	for _, p := range all {
		if err := p.srv.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	c.wg.Wait()
	return errors.Join(errs...)
}
