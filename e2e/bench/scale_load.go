package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dcm-router/dcm/e2e/harness"
)

// pods is a cluster's share of the farm: its endpoints are at listeners
// first … first+n-1, consecutive ones for a route, so a route's endpoints
// are at distinct addresses.
type pods struct {
	f                   *podFarm
	first, n, endpoints int
}

// shared is the pods of the clusters measured: the first n listeners.
func (f *podFarm) shared(n, endpoints int) pods { return pods{f: f, n: n, endpoints: endpoints} }

// apart is the pods of the 10-route cluster the throughput is compared
// with: the last endpoints listeners, after the first skip, so each side's
// connections to its pods can be counted.
func (f *podFarm) apart(skip, endpoints int) pods {
	return pods{f: f, first: skip, n: endpoints, endpoints: endpoints}
}

func (p pods) addr(r, e int) string { return p.f.addrs[p.first+(r*p.endpoints+e)%p.n] }

// conns counts the connections its listeners accepted so far.
func (p pods) conns() int {
	counts := p.f.conns()
	n := 0
	for i := range p.n {
		if p.first+i < len(counts) {
			n += counts[p.first+i]
		}
	}
	return n
}

// check says whether an answer through HAProxy for route r's host came
// from one of r's endpoints.
func (p pods) check(r, code int, body string) error {
	if code != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d", KubeHost(r), code)
	}
	host, addr, _ := strings.Cut(strings.TrimSpace(body), " ")
	addrs := make([]string, p.endpoints)
	for e := range addrs {
		addrs[e] = p.addr(r, e)
	}
	if host != KubeHost(r) || !slices.Contains(addrs, addr) {
		return fmt.Errorf("%s answered by %q, not one of its pods %v", KubeHost(r), body, addrs)
	}
	return nil
}

// servesAll sends a request for every route's host through HAProxy (eight
// keep-alive connections) until each answered from its pods, or until
// deadline; it returns when the last one did.
func servesAll(ctx context.Context, addr string, routes int, p pods, deadline time.Time) error {
	var next atomic.Int64
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			client := &http.Client{Timeout: 10 * time.Second}
			defer client.CloseIdleConnections()
			for r := int(next.Add(1) - 1); r < routes; r = int(next.Add(1) - 1) {
				var err error
				for {
					code, body, gerr := get(ctx, client, addr, KubeHost(r), "/")
					if err = errors.Join(gerr, p.check(r, code, body)); gerr == nil && err == nil {
						break
					}
					if time.Now().After(deadline) {
						mu.Lock()
						errs = append(errs, fmt.Errorf("route %d of %d not served in time: %w", r, routes, err))
						mu.Unlock()
						return
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// loader sends the throughput load to one HAProxy: conns keep-alive
// connections, each request for a random route's host, drawn from hot
// when it is set.
type loader struct {
	addr    string
	routes  int
	hot     []int
	pods    pods
	clients []*http.Client
	rngs    []*rand.Rand
}

func newLoader(s side, conns int, seed uint64) *loader {
	l := &loader{addr: s.addr, routes: s.routes, hot: s.hot, pods: s.pods}
	for i := range conns {
		// One connection per client: exactly conns connections to HAProxy.
		tr := &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1}
		l.clients = append(l.clients, &http.Client{Timeout: 10 * time.Second, Transport: tr})
		l.rngs = append(l.rngs, rand.New(rand.NewPCG(seed, uint64(i))))
	}
	return l
}

func (l *loader) close() {
	for _, c := range l.clients {
		c.CloseIdleConnections()
	}
}

// window is one measurement: requests until d passes or max were sent.
type window struct {
	requests, failed int
	took             time.Duration
	reasons          map[string]int
}

func (l *loader) window(d time.Duration, max int) window {
	var sent atomic.Int64
	var mu sync.Mutex
	w := window{reasons: map[string]int{}}
	begin := time.Now()
	deadline := begin.Add(d)
	var wg sync.WaitGroup
	for i, c := range l.clients {
		wg.Go(func() {
			rng := l.rngs[i]
			for time.Now().Before(deadline) && sent.Add(1) <= int64(max) {
				r := rng.IntN(l.routes)
				if len(l.hot) > 0 {
					r = l.hot[rng.IntN(len(l.hot))]
				}
				code, body, err := get(context.Background(), c, l.addr, KubeHost(r), "/")
				if err == nil {
					err = l.pods.check(r, code, body)
				}
				mu.Lock()
				w.requests++
				if err != nil {
					w.failed++
					w.reasons[reason(code, err)]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	w.took = time.Since(begin)
	return w
}

// baseRoutes is the size the throughput at scale is compared with.
const baseRoutes = 10

// side is one HAProxy the throughput load goes to: to all its routes, or
// to the routes hot names.
type side struct {
	addr   string
	routes int
	hot    []int
	pods   pods
}

// spread is baseRoutes of routes spread evenly over all of them.
func spread(routes int) []int {
	hot := make([]int, baseRoutes)
	for i := range hot {
		hot[i] = i * routes / baseRoutes
	}
	return hot
}

// startBase starts a second dcm and HAProxy of baseRoutes routes on the
// given pods, serving once it returns; it ends with the test.
func startBase(t *testing.T, cfg ScaleConfig, p pods) side {
	k := NewKubeCluster(baseRoutes, cfg.Endpoints, p.f.port, p.addr)
	s, err := harness.TryStart(t, harness.Options{Source: k.Source(t)})
	if err != nil {
		t.Fatalf("a %d-route stack: %v", baseRoutes, err)
	}
	if err := servesAll(context.Background(), s.HTTPAddr, baseRoutes, p, time.Now().Add(cfg.ReadyWithin)); err != nil {
		t.Fatal(err)
	}
	return side{addr: s.HTTPAddr, routes: baseRoutes, pods: p}
}

// runThroughput measures requests per second through the stack's HAProxy
// at its size against a second dcm and HAProxy of baseRoutes routes on
// pods of their own.
//
// Twice: with the load spread over all its routes, and over baseRoutes of
// them (spread) against all of the small stack's. Over all 10,000 routes,
// each of their 100,000 servers sees a request every few seconds, longer
// than HAProxy keeps an idle connection to it (pool-purge-delay), so
// nearly every request opens a new connection to a pod, which a stack of
// 10 routes never does; over as many routes on each side, the pods'
// connections are reused alike, and the ratio is what the number of
// routes costs a request: the lookup in maps of 10,000 entries.
func runThroughput(t *testing.T, cfg ScaleConfig, s *harness.Stack, routes int, f *podFarm) (all, lookup Throughput) {
	base := startBase(t, cfg, f.apart(cfg.Listeners, cfg.Endpoints))
	big := side{addr: s.HTTPAddr, routes: routes, pods: f.shared(cfg.Listeners, cfg.Endpoints)}
	all = compareThroughput(t, cfg, big, base)
	big.hot = spread(routes)
	lookup = compareThroughput(t, cfg, big, base)
	return all, lookup
}

// throughputControl is the same measurement between two stacks of
// baseRoutes routes: how far apart the method puts two equal sides on
// this machine.
func throughputControl(t *testing.T, cfg ScaleConfig, f *podFarm) Throughput {
	a := startBase(t, cfg, f.shared(cfg.Listeners, cfg.Endpoints))
	b := startBase(t, cfg, f.apart(cfg.Listeners, cfg.Endpoints))
	return compareThroughput(t, cfg, a, b)
}

// compareThroughput sends the load to a and to base in turns, after a
// warm-up of each.
func compareThroughput(t *testing.T, cfg ScaleConfig, a, base side) Throughput {
	big, small := newLoader(a, cfg.Conns, 1), newLoader(base, cfg.Conns, 2)
	defer big.close()
	defer small.close()
	tp := Throughput{FailReasons: map[string]int{}}
	var took, baseTook time.Duration
	// run is one window on l; a warm-up (connections open, caches warm)
	// counts failures only.
	run := func(l *loader, warm bool) float64 {
		c0 := l.pods.conns()
		w := l.window(cfg.Window, cfg.MaxRequests)
		tp.Failed += w.failed
		for k, v := range w.reasons {
			tp.FailReasons[k] += v
		}
		switch {
		case warm:
		case l == big:
			tp.Requests, tp.NewConns, took = tp.Requests+w.requests, tp.NewConns+l.pods.conns()-c0, took+w.took
		default:
			tp.BaseReqs, tp.BaseConns, baseTook = tp.BaseReqs+w.requests, tp.BaseConns+l.pods.conns()-c0, baseTook+w.took
		}
		return float64(w.requests) / w.took.Seconds()
	}
	run(small, true)
	run(big, true)
	// Short windows, one stack after the other and the order swapped each
	// round, each round's ratio taken: what else the shared machine does
	// falls on both sides of most rounds alike, and the median leaves out
	// the rounds where it did not.
	for round := range cfg.Rounds {
		var rps, base float64
		if round%2 == 0 {
			base = run(small, false)
			rps = run(big, false)
		} else {
			rps = run(big, false)
			base = run(small, false)
		}
		tp.Ratios = append(tp.Ratios, rps/base)
	}
	slices.Sort(tp.Ratios)
	tp.RPS, tp.BaseRPS = float64(tp.Requests)/took.Seconds(), float64(tp.BaseReqs)/baseTook.Seconds()
	if tp.Failed > 0 {
		t.Errorf("%d routes: %d requests of the throughput load failed: %v", a.routes, tp.Failed, tp.FailReasons)
	}
	return tp
}
