// Applying a what-if: Apply scales through POST /api/v1/scale with the seq
// the preview was computed at — the server refuses with 409 if what it
// depends on has moved — and then follows the feed: the commands HAProxy
// really gets, and the engine's verdict on the prediction, beside the
// preview.

import { confirmDialog, csrf } from './actions.js';
import { fill } from './bind.js';
import { opText, reasons } from './format.js';
import { FleetFollow } from './whatif-fleet.js';
import { plural } from './whatif-preview.js';

const $ = (id) => document.getElementById(id);

export class Applier {
  // preview: the Preview whose current preview Apply makes; onStale():
  // the server refused it as stale, the preview is to be computed afresh.
  constructor({ canAct, preview, onStale }) {
    this.canAct = canAct;
    this.preview = preview;
    this.onStale = onStale;
    this.applied = null; // {whatif, seq, backends, pending, ops}: a change made, being followed
    this.fleet = null; // FleetFollow of the last Apply
  }

  // applicable is the one scale Apply makes, if the preview is exactly that.
  applicable() {
    const c = this.preview.current;
    if (!c || c.whatifs.length !== 1 || c.whatifs[0].kind !== 'scale') return null;
    if ((c.sim.errors || []).length > 0) return null;
    return c.whatifs[0];
  }

  update() {
    const btn = $('wi-apply');
    if (!btn) return;
    const w = this.applicable();
    btn.disabled = !this.canAct || w === null || this.applied?.pending;
    btn.textContent = w ? `Apply: scale ${w.workload.kind} ${w.namespace}/${w.workload.name} to ${w.replicas}` : 'Apply';
    // A rotation is made by updating its Secret, never from here.
    const secrets = [...new Set((this.preview.current?.whatifs || []).filter((x) => x.kind === 'rotate-cert').map((x) => x.secret))];
    $('wi-apply-what').textContent = secrets.length === 0
      ? 'Apply makes the one scale previewed above, through Kubernetes.'
      : `Apply makes a scale alone, through Kubernetes. A certificate rotation is made by updating its Secret (${secrets.join(', ')}): dcm then rotates it as previewed.`;
  }

  async apply() {
    const w = this.applicable();
    if (!w) return;
    const sim = this.preview.current.sim;
    const ok = await confirmDialog({
      verb: 'Scale', title: `Scale ${w.workload.kind} ${w.namespace}/${w.workload.name} to ${w.replicas}?`,
      message: sim.reloads > 0 ? `HAProxy will reload (${reasons(sim.reasons)}).` : `HAProxy gets ${plural(sim.ops, '1 runtime command', '%d runtime commands')}, no reload.`,
    });
    if (!ok) return;
    // Follow from now: HAProxy may get the commands before the answer comes.
    this.applied = { whatif: w, seq: sim.seq, backends: new Set(sim.backends), pending: true, ops: [] };
    $('cmp-ops').replaceChildren();
    $('cmp-rows').replaceChildren();
    $('cmp-verdict').textContent = 'Waiting for HAProxy…';
    $('cmp-verdict').dataset.match = '';
    this.update();
    const r = await fetch('/api/v1/scale', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json', 'X-CSRF-Token': csrf() },
      body: JSON.stringify({ namespace: w.namespace, kind: w.workload.kind, name: w.workload.name, replicas: w.replicas, expectSeq: sim.seq }),
    });
    let body = {};
    try {
      body = await r.json();
    } catch {
      // not JSON: the status says enough
    }
    if (!r.ok) {
      this.applied = null;
      $('compare').hidden = true;
      this.update();
    }
    if (r.status === 409) {
      this.message(`The state moved since this preview (now at seq ${body.seq}); nothing was scaled. The preview has been computed again: check it and apply again.`, 'stale');
      this.onStale();
      return;
    }
    if (!r.ok) {
      this.message(`Not applied: ${body.error || body.message || `HTTP ${r.status}`}`, 'error');
      return;
    }
    const replicas = body.fleet || [{ name: '', self: true, seq: sim.seq }];
    this.message(`Scaled ${w.workload.kind} ${w.namespace}/${w.workload.name} to ${w.replicas}. Following what HAProxy is asked on ${plural(replicas.length, 'this replica', '%d replicas')}…`, 'ok');
    $('compare').hidden = false;
    this.fleet?.stop();
    const applied = this.applied;
    this.fleet = new FleetFollow(w, replicas, () => {
      applied.pending = false;
      this.update();
    });
    this.fleet.start();
  }

  // follow collects, after an Apply, the commands this replica's HAProxy
  // gets for the previewed backends; every replica's verdict on its
  // prediction comes through FleetFollow.
  follow(ev) {
    const applied = this.applied;
    if (!applied || ev.seq <= applied.seq) return;
    if ((ev.type === 'applied' || ev.type === 'reload') && applied.pending) {
      if (ev.type === 'reload') applied.ops.push({ text: `reload (${reasons(ev.reload?.reasons)})`, op: 'reload' });
      for (const o of ev.ops || []) if (applied.backends.has(o.backend)) applied.ops.push({ text: opText(o), op: o.op });
      $('cmp-ops').replaceChildren(...applied.ops.map((o) => fill('tpl-op', o)));
    }
  }

  message(text, kind) {
    const el = $('wi-apply-msg');
    if (!el) return;
    el.textContent = text;
    el.dataset.kind = kind;
    el.hidden = false;
  }
}
