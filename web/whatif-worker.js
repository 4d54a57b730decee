// The what-if planner's Web Worker: dcm's planner (dcm/plan) compiled to
// WebAssembly, so a preview never freezes the page. The page forwards every
// raw feed message; the planner keeps the snapshot on its side and follows
// the events, so a preview sends only its what-ifs across and gets only the
// simulation back. A preview asked for is computed again whenever the state
// moves (at most once per burst of messages).
//
// Messages in:  {type:'feed', raw} | {type:'preview', id, whatifs} | {type:'refresh'}
//               | {type:'hold', on} (on: the state moving does not recompute)
// Messages out: {type:'ready', ms, wasmBytes} | {type:'preview', id, sim, seq, ms} | {type:'error', message}
//               | {type:'loaded', ms, chars, at}: a snapshot taken in, in ms, of chars characters, done
//                 at (performance.timeOrigin + now: the page's clock is another)

/* global Go */
importScripts('wasm_exec.js');

let planner = null;
let loaded = false; // a snapshot arrived
const pending = []; // feed messages that came before the planner
let wanted = null; // the preview to keep current: {id, whatifs}
let computeQueued = false;
let fetching = false;
let hold = false;
// How long the worker waits for the feed's snapshot before it reads one
// from the API itself.
const snapshotWait = 5000; // ms

self.dcmPlannerReady = () => {
  planner = self.dcmPlanner;
};

function call(fn, ...args) {
  const out = fn(...args);
  if (typeof out !== 'string') throw new Error(out && out.error ? out.error : 'the planner failed');
  return out;
}

async function start() {
  const t0 = performance.now();
  const go = new Go();
  let result;
  try {
    result = await WebAssembly.instantiateStreaming(fetch('dcm.wasm'), go.importObject);
  } catch {
    // A proxy that rewrote the content type: compile from the bytes.
    const bytes = await (await fetch('dcm.wasm')).arrayBuffer();
    result = await WebAssembly.instantiate(bytes, go.importObject);
  }
  go.run(result.instance); // main never returns; it calls dcmPlannerReady first
  if (!planner) throw new Error('the planner did not start');
  // What the download cost on the wire (precompressed: brotli or gzip).
  const entry = performance.getEntriesByType('resource').find((e) => e.name.endsWith('/dcm.wasm'));
  postMessage({ type: 'ready', ms: performance.now() - t0, wasmBytes: entry ? entry.encodedBodySize : null });
  for (const raw of pending.splice(0)) feed(raw);
  // The page's feed starts with a snapshot, and every message reaches this
  // worker: reading a second one from the API as well doubled the work
  // before the first preview (30 MB at 10,000 backends, encoded twice by
  // the server and read twice here). Only a feed that has not brought one
  // by then is not waited for.
  if (!loaded) setTimeout(() => loaded || refresh(), snapshotWait);
}

function feed(raw) {
  if (!planner) {
    pending.push(raw);
    return;
  }
  const t0 = performance.now();
  const r = JSON.parse(call(planner.feed, raw));
  if (r.type === 'snapshot') {
    loaded = true;
    tookIn(t0, raw);
  }
  if (r.needSnapshot) refresh();
  else if (r.changed && !hold) queueCompute();
}

// refresh loads the snapshot from the API: after a reload, or missed events.
async function refresh() {
  if (fetching || !planner) return;
  fetching = true;
  try {
    const r = await fetch('/api/v1/snapshot', { headers: { Accept: 'application/json' }, credentials: 'same-origin' });
    if (!r.ok) throw new Error(`snapshot: HTTP ${r.status}`);
    const text = await r.text();
    const t0 = performance.now();
    call(planner.load, text);
    loaded = true;
    tookIn(t0, text);
    if (!hold) queueCompute();
  } catch (e) {
    postMessage({ type: 'error', message: String(e.message || e) });
  } finally {
    fetching = false;
  }
}

// tookIn says how long the planner took to read a snapshot (the page's figures).
function tookIn(t0, text) {
  const now = performance.now();
  postMessage({ type: 'loaded', ms: now - t0, chars: text.length, at: performance.timeOrigin + now });
}

function queueCompute() {
  if (computeQueued || !wanted) return;
  computeQueued = true;
  setTimeout(compute, 0);
}

function compute() {
  computeQueued = false;
  if (!wanted || !planner || !loaded) return;
  const { id, whatifs } = wanted;
  try {
    const t0 = performance.now();
    const sim = call(planner.simulate, JSON.stringify(whatifs));
    const ms = performance.now() - t0;
    postMessage({ type: 'preview', id, sim, seq: planner.seq(), ms });
  } catch (e) {
    postMessage({ type: 'error', id, message: String(e.message || e) });
  }
}

self.onmessage = (e) => {
  const m = e.data;
  try {
    switch (m.type) {
      case 'feed':
        feed(m.raw);
        break;
      case 'preview':
        wanted = { id: m.id, whatifs: m.whatifs };
        queueCompute();
        break;
      case 'refresh':
        refresh();
        break;
      case 'hold':
        hold = !!m.on;
        break;
    }
  } catch (err) {
    postMessage({ type: 'error', message: String(err.message || err) });
  }
};

start().catch((e) => postMessage({ type: 'error', fatal: true, message: `the planner could not start: ${e.message || e}` }));
