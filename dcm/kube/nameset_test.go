package kube

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestNameSet: a nameSet holds what a map of its members holds, through
// any sequence of adds and removes.
func TestNameSet(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var set *nameSet
	if set.len() != 0 || slices.Collect(set.all()) != nil {
		t.Fatal("a nil set is not empty")
	}
	set = &nameSet{}
	want := map[string]bool{}
	names := []string{"a/x", "a/y", "b/z", "c/w"}
	for step := range 2000 {
		k := names[rng.IntN(len(names))]
		if rng.IntN(2) == 0 {
			set.add(k)
			want[k] = true
		} else {
			set.remove(k)
			delete(want, k)
		}
		got := slices.Sorted(set.all())
		if !slices.Equal(got, slices.Sorted(maps.Keys(want))) || set.len() != len(want) {
			t.Fatalf("step %d: set holds %q (len %d), want %v", step, got, set.len(), want)
		}
		if set.many != nil && len(set.many) < 2 {
			t.Fatalf("step %d: a map for %d members", step, len(set.many))
		}
	}
}
