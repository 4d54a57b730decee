// Package corpus generates the scenarios of the what-if planner's parity
// tests: the same JSON text goes through the native bridge (Expected) and
// through the WebAssembly build (wasm/testdata/parity.js, in node and in
// Chromium), and the answers must be byte-identical.
//
// A scenario is JSON text only, never Go values, so both sides read the very
// same bytes: a compute input, a snapshot with what-ifs for simulateOn, and
// for some a "follow" sequence of calls to the stateful planner (feed
// messages, load, simulate, seq). Scenario i depends only on the seed and i.
package corpus

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/wasm/bridge"
)

// Scenario is one parity case. Every field is JSON text handed to the
// planner as is.
type Scenario struct {
	Name string `json:"name"`
	// Compute is a bridge.ComputeInput: {actual, desired, caps}.
	Compute string `json:"compute"`
	// Snapshot and WhatIfs go to simulateOn.
	Snapshot string `json:"snapshot"`
	WhatIfs  string `json:"whatifs"`
	// Follow drives the stateful planner (dcmPlanner.feed/load/simulate/seq)
	// in order. It starts with a snapshot feed message, which replaces
	// whatever an earlier scenario left in the planner, so a scenario gives
	// the same answers on a fresh planner and on one shared by the corpus.
	Follow []Call `json:"follow,omitempty"`
}

// Call is one call of the stateful planner.
type Call struct {
	Fn  string `json:"fn"` // one of FnFeed, FnLoad, FnSimulate, FnSeq
	Arg string `json:"arg,omitempty"`
}

// The stateful planner's functions, as dcmPlanner names them.
const (
	FnFeed     = "feed"
	FnLoad     = "load"
	FnSimulate = "simulate"
	FnSeq      = "seq"
)

// Expected runs a scenario through the native bridge and returns what
// parity.js returns for it from the WebAssembly build: one line per call,
// "<fn> <answer>", joined by "\n" — compute, simulateOn, then the follow
// calls. An answer is the JSON text returned, "error: <message>" for a
// failure ({error} in JavaScript), or the number seq returns in decimal.
// The error is for what JavaScript cannot answer: a panic, an unknown call.
func Expected(s Scenario) (out string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("scenario %s: the native planner panicked: %v", s.Name, r)
		}
	}()
	costs := dcm.HAProxy26MemoryCosts()
	lines := make([]string, 0, 2+len(s.Follow))
	lines = append(lines, "compute "+answer(bridge.Compute(s.Compute)))
	lines = append(lines, "simulateOn "+answer(bridge.SimulateOn(s.Snapshot, s.WhatIfs, costs)))
	p := bridge.New(costs)
	for _, c := range s.Follow {
		switch c.Fn {
		case FnFeed:
			lines = append(lines, c.Fn+" "+answer(marshal(p.Feed(c.Arg))))
		case FnLoad:
			lines = append(lines, c.Fn+" "+answer(marshal(p.Load(c.Arg))))
		case FnSimulate:
			lines = append(lines, c.Fn+" "+answer(p.Simulate(c.Arg)))
		case FnSeq:
			lines = append(lines, c.Fn+" "+strconv.FormatUint(p.Seq(), 10))
		default:
			return "", fmt.Errorf("scenario %s: unknown call %q", s.Name, c.Fn)
		}
	}
	return strings.Join(lines, "\n"), nil
}

// answer is one answer as parity.js writes it.
func answer(out []byte, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return string(out)
}

// marshal is what the wasm main does with a FeedResult.
func marshal(r bridge.FeedResult, err error) ([]byte, error) {
	return bridge.EncodeFeedResult(r, err)
}

// Generate returns n scenarios drawn from seed. Most are small (a handful of
// routes and pods); every 100th is medium (30 routes, up to 16 pods a
// workload) and every 250th large (200 routes). Every 20th is about
// certificates: most routes terminate TLS, some share a Secret, modes with
// and without runtime certificates, and half the what-ifs rotate one. About
// a quarter carry a follow sequence; a few carry malformed JSON on purpose.
func Generate(n int, seed uint64) []Scenario {
	out := make([]Scenario, n)
	for i := range out {
		g := &gen{r: rand.New(rand.NewPCG(seed, uint64(i)))}
		out[i] = g.scenario(i)
	}
	return out
}

// Encode is the corpus as the JavaScript drivers read it: a JSON array of
// scenarios.
func Encode(scenarios []Scenario) ([]byte, error) {
	return json.Marshal(scenarios)
}
