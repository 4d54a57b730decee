package plan

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/routing"
)

// wholeDiff is the map ops of the whole maps of two states: what mapOps
// must give by looking at the backends that changed and their neighbours
// only.
func wholeDiff(before, after dcm.State) []dcm.Op {
	bt, at := routing.Tables(before.Backends), routing.Tables(after.Backends)
	var ops []dcm.Op
	for _, t := range dcm.MapTables {
		if set, del, _ := diffEntries(bt[t], at[t]); len(set)+len(del) > 0 {
			ops = append(ops, dcm.Op{Kind: dcm.OpMapReplace, Map: t, Set: set, Del: del})
		}
	}
	return ops
}

// TestMapOpsAreTheWholeDiff: on histories where one event changes a
// backend or two (as in the engine), the map ops of a plan are the diff
// of the whole maps of actual and Next, entry for entry, though mapOps
// builds the entries of the changed backends and of those that share a
// host or an HAProxy backend with them only. The generator puts a route
// on another's host now and then, on the same key too.
func TestMapOpsAreTheWholeDiff(t *testing.T) {
	caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 3, StickyPool: 2, RuntimeCerts: true, Gateway: propGateway}
	shared, remaps := 0, 0
	for seed := range 1500 {
		g := gen{r: rand.New(rand.NewPCG(uint64(seed), 21))}
		actual, desired := g.calmHistory(caps)
		p := Compute(actual, desired, caps)
		if p.Reload {
			continue
		}
		var got []dcm.Op
		for _, o := range p.Ops {
			if o.Kind == dcm.OpMapReplace {
				got = append(got, o)
			}
		}
		want := wholeDiff(actual, p.Next)
		a, _ := json.Marshal(got)
		b, _ := json.Marshal(want)
		if string(a) != string(b) {
			t.Fatalf("seed %d: map ops\n%s\nthe whole maps' diff\n%s", seed, a, b)
		}
		if len(got) > 0 {
			remaps++
		}
		for _, o := range got {
			for _, e := range o.Set {
				if !e.New && o.Map.Prefix() && !slices.ContainsFunc(o.Del, func(d dcm.MapEntry) bool { return d.Key == e.Key }) {
					shared++ // a key repointed in place: moved, or taken over from a route that left it
				}
			}
		}
	}
	t.Logf("%d plans changed maps, %d repointed a prefix key", remaps, shared)
	if remaps < 300 || shared < 20 {
		t.Errorf("%d plans changed maps, %d repointed a prefix key: the test shows little", remaps, shared)
	}
}

// TestMapOpsSharedKey: two routes claim one key (the kube layer refuses
// that, but one may slip through); the first in route order holds it, and
// when it goes the other takes the key over, by a set map, though only
// the route that went changed.
func TestMapOpsSharedKey(t *testing.T) {
	caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 3, RuntimeCerts: true}
	a := dcm.Route{Namespace: "ns", Name: "a", Kind: dcm.KindHTTP, Host: "h.example", Path: "/", PathType: dcm.PathPrefix, Balance: dcm.BalanceRoundRobin}
	b := a
	b.Name = "b"
	other := a
	other.Name, other.Host = "other", "o.example"
	desired := func(routes ...dcm.Route) dcm.Desired {
		var d dcm.Desired
		for _, r := range routes {
			d.Backends = append(d.Backends, &dcm.DesiredBackend{Name: r.BackendName(), Route: r})
		}
		dcm.SortDesired(d.Backends)
		return d
	}
	st := Fresh(desired(a, b, other), caps)
	if m := routing.Tables(st.Backends)[dcm.MapHostPrefix]; len(m) != 2 || m[0].Backend != a.BackendName() {
		t.Fatalf("host_prefix %+v: want h.example/ held by a", m)
	}
	p := Compute(st, desired(b, other), caps)
	want := []string{"set host_prefix h.example/ be_http:ns:b"}
	if got := mapOpStrings(p.Ops); !slices.Equal(got, want) || p.Reload {
		t.Fatalf("a goes: %q (reload %v), want %q", got, p.Reload, want)
	}
	st = p.Next
	p = Compute(st, desired(a, b, other), caps)
	want = []string{"set host_prefix h.example/ be_http:ns:a"} // its own backend, back from the pool
	if got := mapOpStrings(p.Ops); !slices.Equal(got, want) || p.Reload {
		t.Fatalf("a comes back: %q (reload %v), want %q", got, p.Reload, want)
	}
}

// mapOpStrings spells map ops as the commands HAProxy gets, values as
// MapEntry.Value says them.
func mapOpStrings(ops []dcm.Op) []string {
	var out []string
	for _, o := range ops {
		if o.Kind != dcm.OpMapReplace {
			continue
		}
		for _, e := range o.Set {
			verb := "set"
			if e.New {
				verb = "add"
			}
			out = append(out, verb+" "+string(o.Map)+" "+e.Key+" "+e.Value())
		}
		for _, e := range o.Del {
			out = append(out, "del "+string(o.Map)+" "+e.Key)
		}
	}
	return out
}

// TestMapOpsRewrittenChunk: an allowlist chunk's key that would hold
// another text (ids of two lists' chunks colliding) is not changed entry
// by entry: diffEntries says so, and Compute reloads instead.
func TestMapOpsRewrittenChunk(t *testing.T) {
	chunk := dcm.AllowlistChunkKey("0123456789abcdef")
	before := []dcm.MapEntry{{Key: chunk, Backend: "be_http:ns:a", Action: "10.0.0.0/8"}, {Key: "be_http:ns:a", Backend: "be_http:ns:a", Action: "@0123456789abcdef"}}
	after := []dcm.MapEntry{{Key: chunk, Backend: "be_http:ns:b", Action: "10.0.0.0/8"}, {Key: "be_http:ns:b", Backend: "be_http:ns:b", Action: "@0123456789abcdef"}}
	if _, _, rewritten := diffEntries(before, after); rewritten {
		t.Error("a chunk attributed to another backend, same text: rewritten")
	}
	after[0].Action = "10.0.0.0/9"
	set, _, rewritten := diffEntries(before, after)
	if !rewritten {
		t.Errorf("a chunk's key with another text: not rewritten (set %+v)", set)
	}
}
