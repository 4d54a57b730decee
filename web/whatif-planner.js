// Calling the what-if planner: dcm's planner compiled to WebAssembly, in a
// Web Worker (whatif-worker.js) that follows the feed itself, when the
// build carries it; else POST /api/v1/plan, the same planner on the
// server. Only the answer to the latest question is shown.

import { csrf } from './actions.js';

export class Planner {
  // workerURL: the worker's script, '' without the WebAssembly. stats:
  // window.dcmWhatIf. onPreview(sim, ms, where) shows an answer;
  // onFallback() runs when the worker cannot start and the server takes
  // over (the question is to be asked again).
  constructor(workerURL, stats, { onPreview, onFallback }) {
    this.stats = stats;
    this.onPreview = onPreview;
    this.onFallback = onFallback;
    this.asked = 0; // the id of the latest question
    this.worker = null;
    if (workerURL) {
      this.worker = new Worker(workerURL);
      stats.source = 'wasm';
      this.worker.onmessage = (e) => this.message(e.data);
    } else {
      stats.source = 'server';
    }
  }

  // inBrowser: the worker follows the feed and answers again by itself
  // whenever the state moves.
  get inBrowser() {
    return this.worker !== null;
  }

  message(m) {
    switch (m.type) {
      case 'ready':
        this.stats.plannerMs = m.ms;
        this.stats.wasmBytes = m.wasmBytes;
        break;
      case 'loaded':
        this.stats.loadMs = m.ms;
        this.stats.snapshotChars = m.chars;
        this.stats.loadedAt = m.at - performance.timeOrigin;
        break;
      case 'preview':
        if (m.id !== this.asked) break;
        this.stats.lastSim = m.sim;
        this.onPreview(JSON.parse(m.sim), m.ms, 'in your browser');
        break;
      case 'error':
        this.stats.errors.push(m.message);
        if (m.fatal) {
          this.worker = null;
          this.stats.source = 'server';
          this.onFallback();
        }
        break;
    }
  }

  // The worker's own picture: every feed message as it came, whether a
  // state moving recomputes, a fresh snapshot.
  feed(raw) {
    this.worker?.postMessage({ type: 'feed', raw });
  }

  hold(on) {
    this.worker?.postMessage({ type: 'hold', on });
  }

  refresh() {
    this.worker?.postMessage({ type: 'refresh' });
  }

  // ask previews whatifs; false when there is nothing to preview (an
  // answer still on its way is then dropped).
  ask(whatifs) {
    const id = ++this.asked;
    if (whatifs.length === 0) return false;
    if (this.worker) {
      this.worker.postMessage({ type: 'preview', id, whatifs });
      return true;
    }
    const t0 = performance.now();
    fetch('/api/v1/plan', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json', 'X-CSRF-Token': csrf() },
      body: JSON.stringify({ whatifs }),
    })
      .then((r) => (r.ok ? r.json() : Promise.reject(new Error(`HTTP ${r.status}`))))
      .then((sim) => id === this.asked && this.onPreview(sim, performance.now() - t0, 'on the server'))
      .catch((err) => this.stats.errors.push(String(err.message || err)));
    return true;
  }
}
