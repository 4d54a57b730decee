// dcmParity runs the parity corpus (wasm/corpus) through the WebAssembly
// planner and returns one string per scenario, built exactly as
// corpus.Expected builds it from the native bridge: one line per call,
// "<fn> <answer>", joined by "\n" — compute, simulateOn, then the follow
// calls in order. An answer is the JSON text the planner returned,
// "error: <message>" when it returned {error}, and seq's number in decimal.
//
// Plain JavaScript for node (vm.runInThisContext) and for a page (a classic
// <script>): it defines one global function. Inputs are the corpus's JSON
// text, passed to the planner as they are and never re-serialised here, so
// both builds read the very same bytes.
function dcmParity(planner, corpus) {
	"use strict";
	const answer = (v) => {
		if (typeof v === "string") {
			return v;
		}
		if (v !== null && typeof v === "object" && typeof v.error === "string") {
			return "error: " + v.error;
		}
		return "unexpected " + typeof v + ": " + String(v);
	};
	const out = new Array(corpus.length);
	for (let i = 0; i < corpus.length; i++) {
		const s = corpus[i];
		const lines = [
			"compute " + answer(planner.compute(s.compute)),
			"simulateOn " + answer(planner.simulateOn(s.snapshot, s.whatifs)),
		];
		for (const c of s.follow || []) {
			const arg = c.arg === undefined ? "" : c.arg;
			switch (c.fn) {
			case "feed":
			case "load":
			case "simulate":
				lines.push(c.fn + " " + answer(planner[c.fn](arg)));
				break;
			case "seq": {
				const n = planner.seq();
				lines.push("seq " + (typeof n === "number" ? String(n) : answer(n)));
				break;
			}
			default:
				lines.push("unknown call " + c.fn);
			}
		}
		out[i] = lines.join("\n");
	}
	return out;
}
