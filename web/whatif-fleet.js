// After an Apply, every dcm replica (POST /api/v1/scale answers which)
// predicts the scale from its own state and publishes its verdict as a
// prediction event on its own feed. The page reads each replica's events
// through GET /api/v1/fleet/events, with the session's token, until each
// has said: the compare table gets one column per replica.

import { fill, text } from './bind.js';

const every = 500;
// Scale-ins finish when the last request of a retired pod does: a replica
// gets as long as its engine waits for its prediction (2 minutes), and a bit.
const giveUpAfter = 150_000;

const $ = (id) => document.getElementById(id);

// sameScale: the prediction is of this what-if.
function sameScale(p, w) {
  const x = (p.whatifs || [])[0];
  return x && x.namespace === w.namespace && x.workload?.name === w.workload.name && x.replicas === w.replicas;
}

export class FleetFollow {
  // whatif: the scale applied; replicas: [{name, self, seq, error}];
  // onDone(): every replica has said, or given up.
  constructor(whatif, replicas, onDone) {
    this.whatif = whatif;
    this.onDone = onDone;
    this.stopped = false;
    this.cols = replicas.map((r) => ({ ...r, prediction: null, error: r.error || '' }));
    this.started = Date.now();
  }

  start() {
    this.render();
    for (const c of this.cols) if (!c.error) this.poll(c);
  }

  stop() {
    this.stopped = true;
  }

  get done() {
    return this.cols.every((c) => c.prediction || c.error);
  }

  async poll(c) {
    while (!this.stopped && !c.prediction && !c.error) {
      if (Date.now() - this.started > giveUpAfter) {
        c.error = 'no verdict in time';
        break;
      }
      const q = new URLSearchParams({ since: String(c.seq) });
      if (!c.self) q.set('replica', c.name);
      try {
        const r = await fetch(`/api/v1/fleet/events?${q}`, { headers: { Accept: 'application/json' }, cache: 'no-store' });
        const page = await r.json().catch(() => ({}));
        if (r.ok) {
          for (const ev of page.events || []) {
            if (ev.type === 'prediction' && ev.prediction && sameScale(ev.prediction, this.whatif)) c.prediction = ev.prediction;
          }
          if (page.seq > c.seq) c.seq = page.seq;
          if (!page.complete && !c.prediction) c.error = 'its events since the Apply are no longer kept';
        }
      } catch {
        // unreachable for now: try again
      }
      if (!c.prediction && !c.error) await new Promise((res) => setTimeout(res, every));
    }
    if (!this.stopped) this.render();
  }

  render() {
    const head = $('cmp-head');
    head.replaceChildren(text('th', 'Commands by backend and kind'), text('th', 'Predicted'),
      ...this.cols.map((c) => {
        const th = text('th', `Actual, ${c.name}${c.self ? ' (this one)' : ''}`);
        th.dataset.replica = c.name;
        th.dataset.state = c.prediction ? (c.prediction.match ? 'match' : 'differs') : c.error ? 'error' : 'waiting';
        return th;
      }));
    const mine = this.cols.find((c) => c.self)?.prediction;
    const keys = new Set(Object.keys(mine?.predicted || {}));
    for (const c of this.cols) for (const k of Object.keys(c.prediction?.actual || {})) keys.add(k);
    $('cmp-rows').replaceChildren(...[...keys].sort().map((key) => {
      let differs = false;
      const cells = this.cols.map((c) => {
        const p = c.prediction;
        const td = text('td', p ? String(p.actual?.[key] || 0) : c.error ? '—' : '…');
        if (p && (p.actual?.[key] || 0) !== (p.predicted?.[key] || 0)) {
          td.className = 'diff';
          differs = true;
        }
        return td;
      });
      const tr = fill('tpl-cmp', { key, predicted: mine?.predicted?.[key] || 0, cls: differs ? 'diff' : 'same' });
      tr.append(...cells);
      return tr;
    }));
    this.verdict();
    if (this.done && !this.finished) {
      this.finished = true;
      this.onDone();
    }
  }

  verdict() {
    const v = $('cmp-verdict');
    const waiting = this.cols.filter((c) => !c.prediction && !c.error).map((c) => c.name);
    const failed = this.cols.filter((c) => c.error);
    v.dataset.replicas = String(this.cols.length);
    v.dataset.applied = String(this.cols.filter((c) => c.prediction).length);
    if (waiting.length > 0) {
      v.dataset.match = '';
      v.textContent = `Waiting for ${waiting.length} of ${this.cols.length} replicas to apply it: ${waiting.join(', ')}…`;
      return;
    }
    const match = failed.length === 0 && this.cols.every((c) => c.prediction.match);
    v.dataset.match = String(match);
    if (match) {
      v.textContent = this.cols.length === 1
        ? 'Actual = predicted: HAProxy was asked exactly what the preview showed.'
        : `Every replica (${this.cols.length}) applied it: actual = predicted on each.`;
    } else if (failed.length > 0) {
      v.textContent = `Not followed on ${failed.map((c) => `${c.name} (${c.error})`).join(', ')}.`;
    } else {
      v.textContent = 'Actual differs from the prediction (highlighted); the difference is in the audit log and dcm_prediction_mismatch_total.';
    }
  }
}
