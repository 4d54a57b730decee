// Runs the what-if planner's WebAssembly in node, for the parity tests
// (wasm/bridge/parity_node_test.go):
//
//	node parity-node.js WASM_EXEC_JS DCM_WASM SCRIPT_JS FUNCTION INPUT_JSON OUTPUT_JSON
//
// It sets up what wasm_exec.js needs (as Go's wasm_exec_node.js does), starts
// the planner, waits for dcmPlannerReady, loads SCRIPT_JS (a plain script
// defining FUNCTION, e.g. parity.js and dcmParity), calls
// FUNCTION(dcmPlanner, input) with INPUT_JSON parsed, and writes
// {"ms": <milliseconds the call took>, "result": <what it returned>} to
// OUTPUT_JSON.
"use strict";

const fs = require("fs");
const vm = require("vm");

const [wasmExec, wasmPath, scriptPath, fnName, inputPath, outputPath] = process.argv.slice(2);
if (!outputPath) {
	console.error("usage: node parity-node.js WASM_EXEC_JS DCM_WASM SCRIPT_JS FUNCTION INPUT_JSON OUTPUT_JSON");
	process.exit(2);
}

globalThis.require = require;
globalThis.fs = fs;
globalThis.path = require("path");
globalThis.TextEncoder ??= require("util").TextEncoder;
globalThis.TextDecoder ??= require("util").TextDecoder;
globalThis.performance ??= require("perf_hooks").performance;
globalThis.crypto ??= require("crypto").webcrypto;

require(wasmExec);

async function main() {
	const go = new Go();
	go.env = { TMPDIR: require("os").tmpdir() };
	let exited = false;
	go.exit = (code) => { exited = true; console.error("the Go program exited with code " + code); };
	const ready = new Promise((resolve) => { globalThis.dcmPlannerReady = resolve; });
	const { instance } = await WebAssembly.instantiate(fs.readFileSync(wasmPath), go.importObject);
	// Not awaited: the planner's main blocks for ever, serving calls.
	const running = go.run(instance);
	await Promise.race([ready, running.then(() => { throw new Error("the planner exited before it was ready"); })]);
	if (exited || typeof globalThis.dcmPlanner !== "object") {
		throw new Error("no dcmPlanner after dcmPlannerReady");
	}
	vm.runInThisContext(fs.readFileSync(scriptPath, "utf8"), { filename: scriptPath });
	const fn = globalThis[fnName];
	if (typeof fn !== "function") {
		throw new Error(scriptPath + " defines no function " + fnName);
	}
	const input = JSON.parse(fs.readFileSync(inputPath, "utf8"));
	const start = performance.now();
	const result = fn(globalThis.dcmPlanner, input);
	const ms = performance.now() - start;
	if (exited) {
		throw new Error("the Go program exited during the run");
	}
	fs.writeFileSync(outputPath, JSON.stringify({ ms, result }));
}

main().then(() => process.exit(0), (err) => {
	console.error(err && err.stack ? err.stack : String(err));
	process.exit(1);
});
