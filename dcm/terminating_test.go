package dcm

import (
	"slices"
	"strings"
	"testing"
)

// eps builds endpoints from "name=state" words: state r, d or m, a t
// after it for Terminating, and an optional "@service".
func eps(words string) []Endpoint {
	states := map[byte]AdminState{'r': StateReady, 'd': StateDrain, 'm': StateMaint}
	var out []Endpoint
	for _, w := range strings.Fields(words) {
		name, spec, _ := strings.Cut(w, "=")
		spec, svc, _ := strings.Cut(spec, "@")
		out = append(out, Endpoint{Name: name, Addr: "10.0.0.1", Port: 80, Weight: 1, State: states[spec[0]],
			Terminating: strings.HasSuffix(spec, "t"), Service: svc})
	}
	return out
}

func TestServeTerminating(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"no endpoints", "", ""},
		{"the last pod terminates: it keeps serving", "old=dt", "old=rt"},
		{"all terminating: all serve", "a=dt b=dt", "a=rt b=rt"},
		{"a ready pod: terminating ones drain", "new=r old=dt", "new=r old=dt"},
		{"a new pod turns ready: the fallback ends", "new=r old=rt", "new=r old=dt"},
		{"a pod not ready yet does not count", "new=m old=dt", "new=m old=rt"},
		{"a drained pod that is not terminating does not count", "admin=d old=dt", "admin=d old=rt"},
		{"terminating ones alone count for nothing", "a=rt b=dt", "a=rt b=rt"},
		{"per service: the other service's ready pod does not count",
			"a1=r@a b1=dt@b b2=dt@b", "a1=r@a b1=rt@b b2=rt@b"},
		{"per service: each its own",
			"a1=r@a a2=rt@a b1=dt@b", "a1=r@a a2=dt@a b1=rt@b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := eps(tc.in)
			before := slices.Clone(in)
			got := ServeTerminating(in)
			if want := eps(tc.want); !slices.Equal(got, want) {
				t.Errorf("ServeTerminating(%s)\n got %+v\nwant %+v", tc.in, got, want)
			}
			if !slices.Equal(in, before) {
				t.Errorf("ServeTerminating modified its input: %+v", in)
			}
			if again := ServeTerminating(got); !slices.Equal(again, got) {
				t.Errorf("not idempotent: %+v then %+v", got, again)
			}
		})
	}
}

// TestServeTerminatingThenReweigh: a route split between services weighs
// a service whose only pod is terminating as a service with one ready pod,
// so it keeps its share.
func TestServeTerminatingThenReweigh(t *testing.T) {
	b := DesiredBackend{Route: Route{Services: []ServiceRef{{Name: "a", Weight: 80}, {Name: "b", Weight: 20}}},
		Endpoints: eps("a1=r@a b1=dt@b")}
	got := b.ServeTerminating().Reweigh().Endpoints
	if got[1].State != StateReady {
		t.Errorf("b's terminating pod should serve b's share: %+v", got)
	}
	want := ServerWeights([]int{80, 20}, []int{1, 1})
	if got[0].Weight != want[0] || got[1].Weight != want[1] {
		t.Errorf("weights %d, %d; want %v", got[0].Weight, got[1].Weight, want)
	}
}
