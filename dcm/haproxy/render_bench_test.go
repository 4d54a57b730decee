package haproxy

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/routing"
)

func bigState(routes, servers int) dcm.State {
	var st dcm.State
	for r := range routes {
		rt := dcm.Route{Namespace: "bench", Name: fmt.Sprintf("app%04d", r), Kind: dcm.KindHTTP,
			Host: fmt.Sprintf("app%04d.bench", r), Path: "/", PathType: dcm.PathPrefix, Balance: "roundrobin"}
		be := dcm.Backend{Name: rt.BackendName(), Kind: dcm.KindHTTP, Route: rt}
		for e := range servers {
			be.Servers = append(be.Servers, dcm.Server{Name: fmt.Sprintf("app%04d-%d:http", r, e),
				// Loopback: BenchmarkMemoryCosts hands these to a running HAProxy.
				Addr: fmt.Sprintf("127.%d.%d.%d", 100+r/250, r%250, e+1), Port: 8080, Weight: 1, State: dcm.StateReady})
		}
		st.Backends = append(st.Backends, &be)
	}
	return st
}

// TestRendererEqualsRender: the caching renderer gives byte-identical files
// to a fresh Render after every step of a random sequence of changes: to
// servers, routes, certificates, allowlists, spares and the pool.
func TestRendererEqualsRender(t *testing.T) {
	settings := Settings{AdminSocket: "/run/dcm/admin.sock", HTTPBind: "127.0.0.1:8000", HTTPSBind: "127.0.0.1:8443"}
	r := NewRenderer(settings)
	rng := rand.New(rand.NewPCG(1, 2))
	st := bigState(20, 4)
	states := []dcm.AdminState{dcm.StateReady, dcm.StateDrain, dcm.StateMaint}
	for step := range 300 {
		if rng.IntN(4) == 0 { // read back from HAProxy, and shared
			st = observed(st, rng)
			r.Share(st)
		}
		backends := slices.Clone(st.Backends)
		i := rng.IntN(len(backends))
		b := new(dcm.Backend)
		*b = *backends[i] // a copy: st shares its backends
		b.Servers = slices.Clone(b.Servers)
		switch rng.IntN(11) {
		case 9: // another route's host: keys claimed by two routes
			b.Route.Host = backends[rng.IntN(len(backends))].Route.Host
		case 10: // a list long enough for chunks now and then
			b.Route.Allowlist = nil
			if rng.IntN(2) == 0 {
				for n := range 600 {
					b.Route.Allowlist = append(b.Route.Allowlist, fmt.Sprintf("10.%d.%d.0/24", n/250, n%250))
				}
				slices.Sort(b.Route.Allowlist) // canonical: sorted as strings
			}
		case 0:
			b.Servers[rng.IntN(len(b.Servers))].Weight = 1 + rng.IntN(10)
		case 1:
			b.Servers[rng.IntN(len(b.Servers))].State = states[rng.IntN(3)]
		case 2:
			b.Servers[rng.IntN(len(b.Servers))].Port = 8000 + rng.IntN(100)
		case 3:
			b.Route.Path = fmt.Sprintf("/p%d", rng.IntN(5))
		case 4:
			b.Route.Balance = []string{dcm.BalanceRoundRobin, dcm.BalanceLeastConn}[rng.IntN(2)]
		case 5:
			b.Servers[rng.IntN(len(b.Servers))].Check = rng.IntN(2) == 0
		case 6: // a certificate comes or goes (the crt-list follows)
			if b.Route.TLS == nil {
				b.Route.Kind, b.Route.TLS = dcm.KindEdge, &dcm.TLSRef{Secret: "bench/tls", Version: fmt.Sprintf("a%d", rng.IntN(3))}
			} else {
				b.Route.Kind, b.Route.TLS = dcm.KindHTTP, nil
			}
		case 7:
			b.Route.Allowlist = [][]string{nil, {"10.0.0.0/8"}}[rng.IntN(2)]
		case 8: // a spare carries it, unless another does
			if !slices.ContainsFunc(backends, func(x *dcm.Backend) bool { return x.Slot != "" }) {
				b.Slot = "be_http:_pool:1"
			} else {
				b.Slot = ""
			}
		}
		backends[i] = b
		if rng.IntN(10) == 0 { // a backend comes or goes
			if rng.IntN(2) == 0 && len(backends) > 1 {
				backends = slices.Delete(backends, i, i+1)
			} else {
				nb := bigState(21+step, 3).Backends[20+step]
				backends = append(backends, nb)
				dcm.SortBackends(backends)
			}
		}
		var pool []string // free spares, never the one a backend carries
		for n := 2; n < 2+rng.IntN(4); n++ {
			pool = append(pool, routing.PoolBackendName(dcm.KindHTTP, n))
		}
		st = dcm.State{Backends: backends, Pool: pool}
		got, err := r.Render(st)
		if err != nil {
			t.Fatal(err)
		}
		want, err := Render(settings, st)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Text(), want.Text()) || !maps.EqualFunc(got.Maps, want.Maps, bytes.Equal) || !bytes.Equal(got.CrtList, want.CrtList) ||
			!slices.EqualFunc(got.Backends, want.Backends, func(a, b BackendFile) bool { return a.Name == b.Name && bytes.Equal(a.Text, b.Text) }) {
			t.Fatalf("step %d: cached rendering differs from a fresh one", step)
		}
	}
}

// observed is st as the engine has it after a read-back: some backends
// replaced with HAProxy's figures (which render nothing), now and then one
// that drifted (which renders otherwise).
func observed(st dcm.State, rng *rand.Rand) dcm.State {
	backends := slices.Clone(st.Backends)
	for i, b := range backends {
		if rng.IntN(2) == 0 {
			continue
		}
		nb := *b
		nb.Servers = slices.Clone(b.Servers)
		for k := range nb.Servers {
			nb.Servers[k].Health, nb.Servers[k].Sessions, nb.Servers[k].Unobserved = "UP", rng.IntN(3), false
		}
		if rng.IntN(10) == 0 && len(nb.Servers) > 0 {
			nb.Servers[0].Weight += 1 + rng.IntN(3)
		}
		backends[i] = &nb
	}
	return dcm.State{Backends: backends, Pool: st.Pool, DefaultCert: st.DefaultCert}
}

// TestRendererShare: Share takes the backends that render as those last
// rendered, leaves the others and the state it was given as they were,
// and the files rendered next are a fresh rendering's; whether it is
// given a whole state or a few backends (a chunk of the read-back, which
// it looks up rather than walks).
func TestRendererShare(t *testing.T) {
	tests := []struct {
		name  string
		given func(i int) bool // the backends of the observation Share gets
	}{
		{"whole state", func(int) bool { return true }},
		{"a few backends", func(i int) bool { return i == 3 || i == 10 || i == 17 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRenderer(testSettings)
			st := bigState(64, 4)
			_, err := r.Render(st)
			mustf(t, err, "render")
			obs := dcm.State{Backends: slices.Clone(st.Backends)}
			var given dcm.State
			for i, b := range obs.Backends {
				nb := *b
				nb.Servers = slices.Clone(b.Servers)
				nb.Servers[0].Health, nb.Servers[0].Sessions = "UP", 2
				if i%5 == 0 {
					nb.Servers[1].Weight = 9 // drift: renders otherwise
				}
				obs.Backends[i] = &nb
				if tt.given(i) {
					given.Backends = append(given.Backends, &nb)
				}
			}
			before := slices.Clone(st.Backends)
			r.Share(given)
			if !slices.Equal(before, st.Backends) {
				t.Fatal("Share modified the state the Renderer rendered")
			}
			for i, b := range r.last {
				want := st.Backends[i]
				if tt.given(i) && i%5 != 0 {
					want = obs.Backends[i]
				}
				if b != want {
					t.Errorf("backend %d: held %p, want %p", i, b, want)
				}
			}
			got, err := r.Render(obs)
			mustf(t, err, "render observed")
			want, err := Render(testSettings, obs)
			mustf(t, err, "fresh render")
			if !bytes.Equal(got.Text(), want.Text()) {
				t.Error("after Share, the rendering differs from a fresh one")
			}
		})
	}
}

func BenchmarkRender1000x10(b *testing.B) {
	st := bigState(1000, 10)
	settings := Settings{AdminSocket: "/tmp/a.sock", HTTPBind: "127.0.0.1:8000"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Render(settings, st); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRendererOneChange1000x10: what the engine pays after each
// runtime batch: one backend of 1,000 changed.
func BenchmarkRendererOneChange1000x10(b *testing.B) {
	st := bigState(1000, 10)
	r := NewRenderer(Settings{AdminSocket: "/tmp/a.sock", HTTPBind: "127.0.0.1:8000"})
	if _, err := r.Render(st); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n++
		backends := slices.Clone(st.Backends)
		be := *backends[n%1000] // a copy: st shares its backends
		be.Servers = slices.Clone(be.Servers)
		be.Servers[0].Weight = 1 + n%2
		backends[n%1000] = &be
		st = dcm.State{Backends: backends}
		if _, err := r.Render(st); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRendererSpareTakenRewritesTwoShards: a route that takes a spare among
// many rewrites the shard of the spare (its file now carries the route)
// and no other: spares that stay in the pool keep their text, so a route
// added at 10,000 routes does not rewrite the thousand spares' shards.
func TestRendererSpareTakenRewritesTwoShards(t *testing.T) {
	r := NewRenderer(Settings{AdminSocket: "/run/dcm/admin.sock", HTTPBind: "127.0.0.1:8000"})
	st := bigState(300, 2)
	for n := range 200 {
		st.Pool = append(st.Pool, routing.PoolBackendName(dcm.KindHTTP, n))
	}
	before, err := r.Render(st)
	if err != nil {
		t.Fatal(err)
	}
	taken := st.Pool[0]
	rt := dcm.Route{Namespace: "bench", Name: "new", Kind: dcm.KindHTTP, Host: "new.bench", Path: "/", PathType: dcm.PathPrefix, Balance: "roundrobin"}
	added := &dcm.Backend{Name: rt.BackendName(), Kind: dcm.KindHTTP, Route: rt, Slot: taken,
		Servers: []dcm.Server{{Name: "new-0:http", Addr: "127.0.0.9", Port: 8080, Weight: 1, State: dcm.StateReady}}}
	next := dcm.State{Backends: append(slices.Clone(st.Backends), added), Pool: st.Pool[1:]}
	after, err := r.Render(next)
	if err != nil {
		t.Fatal(err)
	}
	was := map[string][]byte{}
	for _, f := range before.Backends {
		was[f.Name] = f.Text
	}
	var rewritten []string
	for _, f := range after.Backends {
		if old, ok := was[f.Name]; !ok || len(old) == 0 || &old[0] != &f.Text[0] {
			rewritten = append(rewritten, f.Name)
		}
	}
	want := []string{shardName(shardOf(taken))}
	if shardOf(added.Name) != shardOf(taken) {
		// The spare's shard loses it, the route's shard gains the route
		// under the spare's HAProxy name.
		want = append(want, shardName(shardOf(added.Name)))
		slices.Sort(want)
	}
	if !slices.Equal(rewritten, want) {
		t.Errorf("shards rewritten %v, want %v", rewritten, want)
	}
	fresh, err := Render(Settings{AdminSocket: "/run/dcm/admin.sock", HTTPBind: "127.0.0.1:8000"}, next)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(after.Text(), fresh.Text()) {
		t.Error("the cached rendering differs from a fresh one")
	}
}
