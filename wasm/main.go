//go:build js && wasm

// Command wasm is the what-if planner for the browser: dcm/plan, through
// wasm/bridge, as globalThis.dcmPlanner. Every function takes and returns
// JSON text; on failure it returns {error: "..."} instead of a string.
//
//	feed(message)           one raw message of the portal's feed → FeedResult
//	load(snapshot)          a GET /api/v1/snapshot body → FeedResult
//	simulate(whatifs)       against the kept snapshot → Simulation
//	simulateOn(snap, wifs)  against the snapshot given → Simulation
//	compute(input)          {actual, desired, caps} → Plan
//	seq()                   the kept snapshot's seq, a number
//
// When it is ready it calls globalThis.dcmPlannerReady() if there is one.
package main

import (
	"syscall/js"
	"unsafe"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/wasm/bridge"
)

func main() {
	costs := dcm.HAProxy26MemoryCosts()
	p := bridge.New(costs)
	fn := wrapper(js.Global().Get("TextEncoder").New())
	api := map[string]any{
		"feed":     fn(1, func(a []string) ([]byte, error) { return bridge.EncodeFeedResult(p.Feed(a[0])) }),
		"load":     fn(1, func(a []string) ([]byte, error) { return bridge.EncodeFeedResult(p.Load(a[0])) }),
		"simulate": fn(1, func(a []string) ([]byte, error) { return p.Simulate(a[0]) }),
		"simulateOn": fn(2, func(a []string) ([]byte, error) {
			return bridge.SimulateOn(a[0], a[1], costs)
		}),
		"compute": fn(1, func(a []string) ([]byte, error) { return bridge.Compute(a[0]) }),
		"seq":     js.FuncOf(func(js.Value, []js.Value) any { return float64(p.Seq()) }),
	}
	js.Global().Set("dcmPlanner", js.ValueOf(api))
	if ready := js.Global().Get("dcmPlannerReady"); ready.Type() == js.TypeFunction {
		ready.Invoke()
	}
	select {} // the functions above are called from JavaScript for ever
}

// wrapper returns fn, which wraps a JSON-text function for JavaScript: n
// string arguments in, a string out, or {error} when the arguments or the
// call fail. encoder is a TextEncoder: the arguments come across through it.
func wrapper(encoder js.Value) func(n int, f func([]string) ([]byte, error)) js.Func {
	return func(n int, f func([]string) ([]byte, error)) js.Func {
		return js.FuncOf(func(_ js.Value, args []js.Value) any {
			if len(args) != n {
				return failure("want " + string(rune('0'+n)) + " string arguments")
			}
			in := make([]string, n)
			for i, a := range args {
				if a.Type() != js.TypeString {
					return failure("arguments must be JSON text")
				}
				in[i] = text(encoder, a)
			}
			out, err := f(in)
			if err != nil {
				return failure(err.Error())
			}
			return string(out)
		})
	}
}

// text is a JavaScript string as Go text, copied into Go's memory once.
// js.Value.String copies it twice (into a []byte, then into a string), and
// a snapshot of 10,000 backends is 30 MB: each copy grows the WebAssembly
// memory and gives the collector more to do before the first preview. The
// bytes are never written after the copy, and the bridge keeps slices of
// them, so they may be the string's.
func text(encoder, s js.Value) string {
	u8 := encoder.Call("encode", s)
	b := make([]byte, u8.Length())
	js.CopyBytesToGo(b, u8)
	return unsafe.String(unsafe.SliceData(b), len(b))
}

func failure(msg string) any { return map[string]any{"error": msg} }
