package plan

import (
	"slices"
	"testing"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/routing"
)

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
