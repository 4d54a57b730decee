package dcm

import "math"

// MaxWeight is the largest server weight HAProxy accepts.
const MaxWeight = 256

// ServerWeights splits a route's traffic between its services: services[i]
// has the relative weight shares[i] and ready[i] ready endpoints, and every
// server of service i gets the weight out[i], so that the services keep
// their shares whatever their number of pods.
//
// HAProxy's weights are integers in 0..256, so the per-server shares are
// scaled and rounded. Scaling the largest to 256 is not enough: when one
// service has few pods and another many, the small weights round badly (80/20
// over 1 and 19 pods is 256 : 3.37, and 3 gives the primary 81.8 %). So every
// scale from 256 down is tried and the one whose rounded weights come
// closest to the wanted shares wins (the larger scale on a tie). A service
// whose share is not zero keeps at least weight 1 per server. A service
// without ready endpoints gets no traffic whatever its weight; its servers
// get weight 1, to be recomputed when they turn ready.
func ServerWeights(shares, ready []int) []int {
	per := make([]float64, len(shares))
	var top, total float64
	for i, w := range shares {
		if w > 0 && ready[i] > 0 {
			per[i] = float64(w) / float64(ready[i])
			top = max(top, per[i])
			total += float64(w)
		}
	}
	weights := func(scale int) []int {
		out := make([]int, len(shares))
		for i, w := range shares {
			switch {
			case w <= 0:
				out[i] = 0
			case ready[i] == 0:
				out[i] = 1
			default:
				out[i] = max(1, int(math.Round(per[i]*float64(scale)/top)))
			}
		}
		return out
	}
	if top == 0 {
		return weights(MaxWeight)
	}
	// errorOf is the largest gap between a service's share of the traffic
	// and the share it asked for.
	errorOf := func(ws []int) float64 {
		var sum float64
		for i := range ws {
			sum += float64(ws[i] * ready[i])
		}
		var worst float64
		for i, w := range shares {
			if w > 0 && ready[i] > 0 {
				worst = max(worst, math.Abs(float64(ws[i]*ready[i])/sum-float64(w)/total))
			}
		}
		return worst
	}
	best := weights(MaxWeight)
	bestErr := errorOf(best)
	for scale := MaxWeight - 1; scale >= 1 && bestErr > 0; scale-- {
		ws := weights(scale)
		if e := errorOf(ws); e < bestErr-1e-12 {
			best, bestErr = ws, e
		}
	}
	return best
}
