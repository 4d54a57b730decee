package corpus

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/wasm/bridge"
)

// scenario draws scenario i.
func (g *gen) scenario(i int) Scenario {
	routes, maxPods, size := 1+g.r.IntN(4), 6, "small"
	switch {
	case i%250 == 249:
		routes, maxPods, size = 200, 4, "large"
	case i%100 == 50:
		routes, maxPods, size = 30, 16, "medium"
	}
	g.tls = size == "small" && i%20 == 13
	c := g.newCluster(routes, maxPods)
	s := Scenario{}

	// compute: a random history against a new desire, in any mode.
	ccaps := g.caps()
	actual, _ := g.history(c, ccaps)
	switch g.r.IntN(40) {
	case 0:
		actual = dcm.State{} // nothing rendered yet: backends null
	case 1:
		actual = dcm.State{Backends: []*dcm.Backend{}}
	}
	s.Compute = text(bridge.ComputeInput{Actual: actual, Desired: g.desired(c), Caps: ccaps})

	// simulateOn: a snapshot (its own history and mode) and what-ifs.
	caps := g.caps()
	if g.r.IntN(2) == 0 {
		caps = ccaps
	}
	st, d := g.history(c, caps)
	follow := g.r.IntN(4) == 0 || size == "large" || size == "medium" && i%200 == 50
	seq := uint64(1 + g.r.IntN(1_000_000))
	if !follow && g.r.IntN(50) == 0 {
		// Beyond JavaScript's exact integers: only JSON carries it (seq(),
		// a number, would round it, so no follow sequence has one).
		seq = 1<<62 + uint64(g.r.IntN(1000))
	}
	snap := g.snapshot(seq, caps, st, d)
	s.Snapshot = text(snap)
	s.WhatIfs = text(g.whatifs(c, d))

	// A few inputs are broken on purpose: the error text must match too.
	switch g.r.IntN(60) {
	case 0:
		s.Compute = g.pick([]string{`{"actual":5}`, `not json`, `{"caps":{"mode":7}}`, ``, `{"desired":{"backends":[{"endpoints":[{"port":"80"}]}]}}`})
	case 1:
		s.Snapshot = g.pick([]string{`{"seq":-1}`, `[`, `{"backends":{}}`, `null`})
	case 2:
		s.WhatIfs = g.pick([]string{`{}`, `[{"kind":"scale","replicas":"3"}]`, `[1,2]`, `null`, `[]`})
	}

	name := fmt.Sprintf("%04d-%s-%s-%s", i, size, modeName(ccaps), modeName(caps))
	if g.tls {
		name += "-tls"
	}
	if follow {
		s.Follow = g.follow(c, caps, st, d, snap)
		name += "-follow"
	}
	s.Name = name
	return s
}

// text is the JSON of a value; generated text must be valid UTF-8, or the
// JSON of the corpus would not carry it byte for byte.
func text(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	if !utf8.Valid(b) {
		panic("corpus: generated JSON is not UTF-8")
	}
	return string(b)
}
