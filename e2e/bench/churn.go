// Package bench is `make bench`'s comparison: one seeded churn workload run
// through dcm in each mode (reload, slots --slots=1, slots --slots=8,
// dynamic) against the real haproxy binary, with constant load and
// long-lived connections, written up in docs/bench.md with SVG plots.
//
// The comparison is TestCompareModes, built only with -tags bench (make
// bench passes it), so `go test ./...` stays fast; BENCH_QUICK=1 shortens it
// (about a minute here).
package bench

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// EventKind is one kind of change the churn script makes.
type EventKind string

const (
	ScaleOut    EventKind = "scale-out"
	ScaleIn     EventKind = "scale-in"
	Replace     EventKind = "pod-replace"
	RouteAdd    EventKind = "route-add"
	RouteDelete EventKind = "route-delete"
	// CertRotate gives an edge route's Secret a new certificate and key.
	CertRotate EventKind = "cert-rotate"
)

// Event is one scripted change at an offset from the start of the churn.
type Event struct {
	At    time.Duration
	Kind  EventKind
	Route string // route name (namespace bench)
	// N is how many pods a scale changes, or how many a new route starts with.
	N int
	// Edge: the new route (RouteAdd) ends TLS in HAProxy with a certificate
	// of its own.
	Edge bool
	// Victims are the indexes (in the route's pod order, oldest first) of the
	// pods a scale-in or replacement terminates, chosen when the script is
	// made so every mode terminates the same pods.
	Victims []int
}

// Workload sizes the churn.
type Workload struct {
	Seed         uint64
	Routes       int           // routes at the start
	MinEndpoints int           // per route
	MaxEndpoints int           // per route
	Stable       int           // the first Stable routes are never churned: they carry the long-lived connections
	Rate         float64       // events per second
	Duration     time.Duration // of the churn
	EdgeShare    float64       // of the routes, initial and added: edge routes (TLS with their own certificate)
	// RouteDrift bounds how far route adds may run ahead of deletes (and
	// the other way): the churn replaces routes, it does not grow the
	// cluster, so dynamic mode's pool of spares (--pool-size 10) need not
	// grow with the length of the run.
	RouteDrift int
}

// Script is the churn: the initial routes and the events, the same for every
// mode because it depends only on the workload.
type Script struct {
	Initial map[string]int // route → pods at the start
	Order   []string       // initial routes in creation order
	// Edge lists the edge routes, initial and added.
	Edge   map[string]bool
	Events []Event
}

// Certs counts, per edge route, the certificates it has over the script:
// the first, then one per rotation.
func (s Script) Certs() map[string]int {
	out := map[string]int{}
	for name := range s.Edge {
		out[name] = 1
	}
	for _, ev := range s.Events {
		if ev.Kind == CertRotate {
			out[ev.Route]++
		}
	}
	return out
}

// RouteName names the i-th route ever created.
func RouteName(i int) string { return fmt.Sprintf("r%05d", i) }

// MakeScript draws the churn from w.Seed: scale-outs 25%, scale-ins 20%, pod
// replacements 25%, route adds and deletes 20% together (half each, but
// never more than RouteDrift of one ahead of the other), certificate
// rotations of edge routes 10%, at a fixed rate. It tracks pod counts as it
// goes, so a scale never leaves a route outside MinEndpoints..MaxEndpoints
// and a victim always exists.
func MakeScript(w Workload) Script {
	rng := rand.New(rand.NewPCG(w.Seed, 0x6463_6d62_656e_6368)) // "dcmbench"
	draw := func() int { return w.MinEndpoints + rng.IntN(w.MaxEndpoints-w.MinEndpoints+1) }
	s := Script{Initial: map[string]int{}, Edge: map[string]bool{}}
	pods := map[string]int{}
	var live []string // churnable routes, in creation order (a stable order keeps the draw deterministic)
	for i := range w.Routes {
		name := RouteName(i)
		n := draw()
		s.Initial[name], pods[name] = n, n
		s.Order = append(s.Order, name)
		if rng.Float64() < w.EdgeShare {
			s.Edge[name] = true
		}
		if i >= w.Stable {
			live = append(live, name)
		}
	}
	drift := 0 // route adds minus deletes so far
	next := w.Routes
	count := int(w.Rate * w.Duration.Seconds())
	step := time.Duration(float64(time.Second) / w.Rate)
	for i := range count {
		at := time.Duration(i) * step
		r := rng.IntN(100)
		var ev Event
		switch {
		case r < 25 || len(live) == 0:
			name := live[rng.IntN(len(live))]
			n := min(1+rng.IntN(3), w.MaxEndpoints-pods[name])
			if n <= 0 {
				ev = replace(rng, name, pods[name])
				break
			}
			ev = Event{Kind: ScaleOut, Route: name, N: n}
			pods[name] += n
		case r < 45:
			name := live[rng.IntN(len(live))]
			n := min(1+rng.IntN(3), pods[name]-w.MinEndpoints)
			if n <= 0 {
				ev = replace(rng, name, pods[name])
				break
			}
			ev = Event{Kind: ScaleIn, Route: name, N: n, Victims: rng.Perm(pods[name])[:n]}
			slices.Sort(ev.Victims)
			pods[name] -= n
		case r < 70:
			name := live[rng.IntN(len(live))]
			ev = replace(rng, name, pods[name])
		case r < 90:
			if drift >= w.RouteDrift || (r < 80 && drift > -w.RouteDrift) {
				j := rng.IntN(len(live))
				name := live[j]
				live = slices.Delete(live, j, j+1)
				delete(pods, name)
				ev = Event{Kind: RouteDelete, Route: name}
				drift--
				break
			}
			name := RouteName(next)
			next++
			n := draw()
			pods[name] = n
			live = append(live, name)
			ev = Event{Kind: RouteAdd, Route: name, N: n, Edge: rng.Float64() < w.EdgeShare}
			if ev.Edge {
				s.Edge[name] = true
			}
			drift++
		default:
			var edge []string
			for _, name := range live {
				if s.Edge[name] {
					edge = append(edge, name)
				}
			}
			if len(edge) == 0 {
				name := live[rng.IntN(len(live))]
				ev = replace(rng, name, pods[name])
				break
			}
			ev = Event{Kind: CertRotate, Route: edge[rng.IntN(len(edge))]}
		}
		ev.At = at
		s.Events = append(s.Events, ev)
	}
	return s
}

func replace(rng *rand.Rand, route string, pods int) Event {
	return Event{Kind: Replace, Route: route, N: 1, Victims: []int{rng.IntN(pods)}}
}

// NewPods is how many pods an event starts: the pods whose first request
// through HAProxy the benchmark times.
func (e Event) NewPods() int {
	switch e.Kind {
	case ScaleOut, Replace, RouteAdd:
		return e.N
	}
	return 0
}
