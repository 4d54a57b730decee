package routing

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

// TestAllowlistEntries: the allowlist map has an entry for every backend
// with a list, retiring ones too, and none for the others; a short list
// is its value, a long one is cut into chunks of at most
// dcm.MaxAllowlistChunk bytes, between entries, stored once however many
// lists share them and listed before the values that name them; every
// key and value passes the validators the driver applies again.
func TestAllowlistEntries(t *testing.T) {
	long := func(addr string) []string {
		list := []string{addr}
		for i := range 700 {
			list = append(list, fmt.Sprintf("2001:db8:%x::/48", i+1))
		}
		slices.Sort(list)
		return list
	}
	backend := func(name string, list []string) dcm.Backend {
		r := dcm.Route{Namespace: "ns", Name: name, Kind: dcm.KindHTTP, Host: name + ".test", Path: "/", PathType: dcm.PathPrefix, Allowlist: list}
		return dcm.Backend{Name: r.BackendName(), Route: r}
	}
	short := backend("short", []string{"10.0.0.0/8", "::1"})
	open := backend("open", nil)
	retiring := backend("retiring", []string{"127.0.0.2"})
	retiring.Retiring = true
	spared := backend("spared", []string{"127.0.0.3"})
	spared.Slot = "be_http:_pool:1"
	a, b, c := backend("a", long("127.0.0.2")), backend("b", long("127.0.0.2")), backend("c", long("127.0.0.3"))

	entries := Tables(dcm.BackendList(short, open, retiring, spared, a, b, c))[dcm.MapAllowlist]
	values := map[string]string{}
	chunks := map[string]string{}
	for i, e := range entries {
		chunk := strings.HasPrefix(e.Key, dcm.AllowlistChunkPrefix)
		if err := dcm.ValidateMapKey("key", e.Key); err != nil || chunk != dcm.IsAllowlistChunkKey(e.Key) {
			t.Errorf("key %q: %v", e.Key, err)
		}
		if err := dcm.ValidateAllowlistValue("value", e.Value(), chunk); err != nil {
			t.Errorf("%s: %v", e.Key, err)
		}
		if i > 0 && entries[i-1].Key >= e.Key {
			t.Errorf("%s after %s", e.Key, entries[i-1].Key)
		}
		if chunk {
			if len(values) > 0 {
				t.Errorf("chunk %s after a backend's value", e.Key)
			}
			chunks[strings.TrimPrefix(e.Key, dcm.AllowlistChunkPrefix)] = e.Value()
			continue
		}
		values[e.Key] = e.Value()
	}
	want := map[string]string{
		short.ProxyName(): "10.0.0.0/8,::1", retiring.ProxyName(): "127.0.0.2", "be_http:_pool:1": "127.0.0.3",
	}
	for k, v := range want {
		if values[k] != v {
			t.Errorf("%s = %q, want %q", k, values[k], v)
		}
	}
	if _, ok := values[open.ProxyName()]; ok || len(values) != 6 {
		t.Errorf("values for %v", slices.Sorted(func(yield func(string) bool) {
			for k := range values {
				if !yield(k) {
					return
				}
			}
		}))
	}
	for _, bk := range dcm.BackendList(a, b, c) {
		ids, ok := strings.CutPrefix(values[bk.ProxyName()], "@")
		var joined []string
		for _, id := range strings.Split(ids, ",") {
			joined = append(joined, chunks[id])
		}
		if got := strings.Join(joined, ","); !ok || got != strings.Join(bk.Route.Allowlist, ",") {
			t.Errorf("%s: %q names chunks that join to %.60q…", bk.Name, values[bk.ProxyName()], got)
		}
	}
	// a and b share every chunk, c all but the one with its own address.
	if values[a.ProxyName()] != values[b.ProxyName()] {
		t.Errorf("equal lists, values %q and %q", values[a.ProxyName()], values[b.ProxyName()])
	}
	ca, cc := strings.Split(values[a.ProxyName()], ","), strings.Split(values[c.ProxyName()], ",")
	if len(ca) < 4 || len(ca) != len(cc) || ca[0] == cc[0] || !slices.Equal(ca[1:], cc[1:]) || len(chunks) != len(ca)+1 {
		t.Errorf("chunks of a %v, of c %v, %d in the map", ca, cc, len(chunks))
	}
}

// TestSplitAllowlist: chunks fill up to the limit and no further, between
// entries; an entry longer than a chunk is left whole.
func TestSplitAllowlist(t *testing.T) {
	entry := strings.Repeat("1", 10) // ten bytes
	for _, tt := range []struct {
		n    int
		want []int // chunk lengths
	}{
		{1, []int{10}},
		{372, []int{4091}}, // 372 entries and 371 commas
		{373, []int{4091, 10}},
		{745, []int{4091, 4091, 10}},
	} {
		got := splitAllowlist(strings.Join(slices.Repeat([]string{entry}, tt.n), ","))
		var lens []int
		for _, c := range got {
			lens = append(lens, len(c))
		}
		if !slices.Equal(lens, tt.want) {
			t.Errorf("%d entries: chunks of %v, want %v", tt.n, lens, tt.want)
		}
	}
	huge := strings.Repeat("1", dcm.MaxAllowlistChunk+1)
	if got := splitAllowlist(huge + ",1"); len(got) != 1 || got[0] != huge+",1" {
		t.Errorf("an entry over a chunk: %d chunks", len(got))
	}
}

// TestChunkID: an id is 16 hex digits of the text alone; one another text
// holds is hashed again until it is free, and the same text keeps its id.
func TestChunkID(t *testing.T) {
	id := chunkID("10.0.0.0/8", nil)
	if !dcm.IsAllowlistChunkKey(dcm.AllowlistChunkKey(id)) || chunkID("10.0.0.0/8", nil) != id || chunkID("10.0.0.1", nil) == id {
		t.Fatalf("id %q", id)
	}
	taken := map[string]string{id: "127.0.0.1"} // a collision, as if crafted
	other := chunkID("10.0.0.0/8", taken)
	if other == id || !dcm.IsAllowlistChunkKey(dcm.AllowlistChunkKey(other)) {
		t.Errorf("a taken id: %q", other)
	}
	if got := chunkID("10.0.0.0/8", map[string]string{id: "10.0.0.0/8"}); got != id {
		t.Errorf("the same text: %q, want %q", got, id)
	}
}

// TestChunked: Chunked says whether a list has chunks in the map, at the
// limit and either side of it.
func TestChunked(t *testing.T) {
	for _, n := range []int{0, 1, 2, 100, 818, 819, 820, 1000} {
		// Entries of 4 bytes and commas: a list of n is 5n-1 bytes, at the
		// limit (4096) for n = 819.4…: 819 fit, 820 do not.
		var list []string
		for i := range n {
			list = append(list, fmt.Sprintf("%04d", i))
		}
		r := dcm.Route{Namespace: "ns", Name: "a", Kind: dcm.KindHTTP, Host: "a.test", Path: "/", PathType: dcm.PathPrefix, Allowlist: list}
		b := &dcm.Backend{Name: r.BackendName(), Route: r}
		hasChunks := slices.ContainsFunc(allowlistEntries([]*dcm.Backend{b}), func(e dcm.MapEntry) bool { return dcm.IsAllowlistChunkKey(e.Key) })
		if Chunked(b) != hasChunks || hasChunks != (n > 819) {
			t.Errorf("%d entries: Chunked %v, chunks in the map %v", n, Chunked(b), hasChunks)
		}
	}
}
