package bench

import "time"

// configFor sizes the comparison: the full run fits make bench's 15 minutes
// on two cores with the other benchmarks, the quick one takes about a minute.
func configFor(quick bool) Config {
	c := Config{
		Workload: Workload{Seed: 7, Routes: 1000, MinEndpoints: 1, MaxEndpoints: 10, Stable: 10,
			Rate: 2, Duration: 100 * time.Second, EdgeShare: 0.25, RouteDrift: 3},
		LoadRate: 100, Streams: 50, StreamLife: [2]time.Duration{10 * time.Second, 40 * time.Second},
		Calibrate: 8 * time.Second, ProbeLimit: 30 * time.Second, SampleEvery: 500 * time.Millisecond,
	}
	if quick {
		// About a minute: fewer routes (the pods and HAProxy start four
		// times), a short churn that still has every kind of event.
		c.Quick = true
		c.Routes, c.MaxEndpoints = 200, 6
		c.Duration = 6 * time.Second
		c.Rate = 4
		c.StreamLife = [2]time.Duration{2 * time.Second, 6 * time.Second}
		c.Calibrate = 1500 * time.Millisecond
		c.ProbeLimit = 15 * time.Second
		c.SampleEvery = 250 * time.Millisecond
	}
	return c
}

// scaleConfigFor sizes the scale section (TestScale): the 1,000 and
// 10,000 routes, or 200 and 2,000 in a quick run (BENCH_QUICK=1).
func scaleConfigFor(quick bool) ScaleConfig {
	c := ScaleConfig{Sizes: [2]int{1000, 10000}, Endpoints: 10, Changes: 200, RouteOps: 30, Grow: 1000, GrowStep: 10,
		Conns: 8, Window: 500 * time.Millisecond, Rounds: 30, MaxRequests: 200000, ReadyWithin: 3 * time.Minute, Listeners: 32}
	if quick {
		c.Quick = true
		c.Sizes = [2]int{200, 2000}
		c.Changes, c.RouteOps, c.Grow = 100, 15, 200
		c.Rounds = 16
		c.ReadyWithin = 90 * time.Second
	}
	return c
}
