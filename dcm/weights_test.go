package dcm

import (
	"math"
	"slices"
	"testing"
)

func TestServerWeights(t *testing.T) {
	for _, tc := range []struct {
		name          string
		shares, ready []int
		want          []int
	}{
		{"equal pods", []int{80, 20}, []int{2, 2}, []int{256, 64}},
		{"primary scaled out", []int{80, 20}, []int{6, 1}, []int{170, 255}},
		{"primary scaled in", []int{80, 20}, []int{3, 1}, []int{256, 192}},
		{"zero share", []int{100, 0}, []int{2, 3}, []int{256, 0}},
		{"no ready pods", []int{80, 20}, []int{0, 2}, []int{1, 256}},
		{"all zero", []int{0, 0}, []int{1, 1}, []int{0, 0}},
		{"many small pods: a smaller scale rounds better", []int{80, 20}, []int{1, 19}, []int{228, 3}},
		{"tiny share keeps 1", []int{256, 1}, []int{1, 100}, []int{256, 1}},
		{"single service", []int{1}, []int{5}, []int{256}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ServerWeights(tc.shares, tc.ready); !slices.Equal(got, tc.want) {
				t.Errorf("ServerWeights(%v, %v) = %v, want %v", tc.shares, tc.ready, got, tc.want)
			}
		})
	}
}

// TestServerWeightsKeepShares: over every pod count up to 20 per service,
// the traffic each service gets stays within half a percentage point of its
// share when no weight is clamped to 1.
func TestServerWeightsKeepShares(t *testing.T) {
	shares := []int{80, 20}
	for a := 1; a <= 20; a++ {
		for b := 1; b <= 20; b++ {
			w := ServerWeights(shares, []int{a, b})
			total := float64(w[0]*a + w[1]*b)
			got := float64(w[0]*a) / total
			if math.Abs(got-0.8) > 0.005 {
				t.Errorf("%d+%d pods: weights %v give the primary %.3f, want 0.8±0.005", a, b, w, got)
			}
		}
	}
}
