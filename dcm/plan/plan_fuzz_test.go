package plan

import (
	"fmt"
	"testing"
)

// byteChooser takes gen's decisions from the fuzzer's input, one byte per
// decision, so that the coverage-guided mutator steers the shapes of the
// states directly (a seed for a PRNG would scramble every small mutation
// into an unrelated state). An exhausted input decides 0 from then on, so
// every input, however short, is a complete history.
type byteChooser struct{ b []byte }

func (c *byteChooser) IntN(n int) int {
	if len(c.b) == 0 || n <= 1 {
		return 0
	}
	v := int(c.b[0]) % n
	c.b = c.b[1:]
	return v
}

// FuzzCompute checks the planner contract (checkPlan) on histories and
// desires the fuzzer builds byte by byte, in every mode.
func FuzzCompute(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add([]byte("\x03\xff\x00\x01\x11\x22\x33\x44\x55\x66\x77\x88\x99\xaa\xbb\xcc\xdd\xee\xff"))
	modes := modes()
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			data = []byte{0}
		}
		caps := modes[int(data[0])%len(modes)]
		g := gen{r: &byteChooser{b: data[1:]}}
		actual := g.history(caps)
		desired := g.desired()
		checkPlan(t, fmt.Sprintf("%s-slots%d-add%v", caps.Mode, caps.Slots, caps.AddServer), actual, desired, caps)
	})
}
