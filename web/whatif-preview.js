// Showing a what-if preview: the verdict, the totals before and after,
// each step with its runtime commands, the traffic shares and the servers
// left draining. These mirror views/whatif.go, which renders the same
// preview on the server.

import { bind, fill } from './bind.js';
import { opText, reasons } from './format.js';

const $ = (id) => document.getElementById(id);

// plural is views' plural: one, or many with %d for n.
export const plural = (n, one, many) => (n === 1 ? one : many.replace('%d', String(n)));

export function verdict(s) {
  const cmds = plural(s.ops, '1 runtime command', '%d runtime commands');
  if ((s.errors || []).length > 0 && s.ops === 0 && s.reloads === 0) return 'Nothing to do';
  if (s.reloads === 0) return `No reload · ${cmds}`;
  return `Reload (${reasons(s.reasons)}) · ${cmds}`;
}

export const percent = (f) => `${(f * 100).toFixed(1)}%`;

export function bytes(n) {
  if (n < 1 << 20) return `${(n / (1 << 10)).toFixed(1)} KiB`;
  return `${(n / (1 << 20)).toFixed(1)} MiB`;
}

const totalKeys = ['backends', 'tcpBackends', 'ready', 'drain', 'maint', 'cfgServers', 'runtimeServers', 'slotsFree', 'spareBackends'];

export class Preview {
  // el: the preview's section; stats: window.dcmWhatIf.
  constructor(el, stats) {
    this.el = el;
    this.stats = stats;
    this.current = null; // {sim, whatifs}: the preview shown
  }

  clear() {
    this.current = null;
    bind(this.el, { empty: true });
  }

  // show draws the planner's answer to whatifs, computed in ms.
  show(sim, ms, where, whatifs) {
    const { el, stats } = this;
    this.current = { sim, whatifs };
    $('pv-moved').hidden = true;
    delete el.dataset.moved;
    stats.previews++;
    stats.lastMs = ms;
    if (stats.firstPreviewMs === null) stats.firstPreviewMs = performance.now();
    const fields = {
      empty: false, verdict: verdict(sim), reloadText: String(sim.reloads > 0), where, seq: sim.seq,
      took: ` in ${ms.toFixed(1)} ms`, memoryBefore: bytes(sim.before.memoryBytes), memoryAfter: bytes(sim.after.memoryBytes),
    };
    for (const k of totalKeys) {
      fields[`${k}Before`] = sim.before[k];
      fields[`${k}After`] = sim.after[k];
    }
    bind(el, fields);
    el.dataset.source = stats.source;
    el.dataset.seq = String(sim.seq);
    el.dataset.ms = ms.toFixed(2);
    $('pv-errors').replaceChildren(...(sim.errors || []).map((text) => fill('tpl-error', { text })));
    $('pv-steps').replaceChildren(...(sim.steps || []).map((st) => {
      const li = fill('tpl-step', { phase: st.phase, reload: st.reload, reloadText: String(st.reload), reasons: `reload: ${reasons(st.reasons)}` });
      li.querySelector('[data-role=ops]').replaceChildren(...(st.ops || []).map((o) => fill('tpl-op', { text: opText(o), op: o.op })));
      return li;
    }));
    $('pv-traffic').replaceChildren(...(sim.traffic || []).map((s) => fill('tpl-share', { ...s, pod: s.pod || '', share: percent(s.share) })));
    $('pv-draining').replaceChildren(...(sim.draining || []).map((d) => fill('tpl-draining', { ...d, pod: d.pod || '' })));
  }

  // moved marks a held preview when an event moves what it depends on: a
  // reload, or a change to one of its backends.
  moved(ev) {
    const c = this.current;
    if (!c || ev.seq <= c.sim.seq) return;
    if (ev.type !== 'reload' && !(ev.backends || []).some((b) => (c.sim.backends || []).includes(b))) return;
    $('pv-moved').hidden = false;
    this.el.dataset.moved = 'true';
  }
}
