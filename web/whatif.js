// The what-if page. The preview is computed in a Web Worker by dcm's own
// planner compiled to WebAssembly (whatif-worker.js), against the state the
// feed keeps current there, and again whenever that state moves; a build
// without the WebAssembly asks POST /api/v1/plan, the same planner on the
// server. Apply scales through POST /api/v1/scale with the seq the preview
// was computed at — the server refuses with 409 if what it depends on has
// moved — and then follows the feed: the commands HAProxy really gets, and
// the engine's verdict on the prediction, beside the preview.
//
// window.dcmWhatIf carries the figures tests read: firstPreviewMs (from
// navigation start), lastMs (the planner's time for the last preview),
// previews, source (wasm or server), plannerMs (start of the planner),
// wasmBytes (the planner's download, as encoded on the wire) and
// lastSim (the planner's last answer, as it gave it).

import { confirmDialog, csrf } from './actions.js';
import { bind, clone } from './bind.js';
import { opText } from './format.js';
import { coalesce, Live } from './live.js';

const stats = (window.dcmWhatIf = { firstPreviewMs: null, lastMs: null, previews: 0, source: '', plannerMs: null, errors: [] });

const $ = (id) => document.getElementById(id);
const plural = (n, one, many) => (n === 1 ? one : many.replace('%d', String(n)));

// These mirror views/whatif.go, which renders the same preview on the server.
export function verdict(s) {
  const cmds = plural(s.ops, '1 runtime command', '%d runtime commands');
  if ((s.errors || []).length > 0 && s.ops === 0 && s.reloads === 0) return 'Nothing to do';
  if (s.reloads === 0) return `No reload · ${cmds}`;
  return `Reload (${(s.reasons || []).join(', ')}) · ${cmds}`;
}

// certRoutes lists the routes that serve a certificate of their own (their
// TLS field), by backend, as views.CertRoutes does.
export function certRoutes(backends) {
  const out = [];
  const sharing = new Map();
  for (const b of backends) {
    const secret = b.route?.tls?.secret;
    if (b.retiring || !secret) continue;
    sharing.set(secret, (sharing.get(secret) || 0) + 1);
    out.push({ backend: b.name, hostPath: `${b.route.host || '*'}${b.route.path}`, secret });
  }
  for (const c of out) c.sharing = sharing.get(c.secret);
  return out.sort((a, b) => (a.backend < b.backend ? -1 : a.backend > b.backend ? 1 : 0));
}

export const certLabel = (c) => `${c.hostPath} · ${c.backend} · Secret ${c.secret}`;

export function certNote(c) {
  const shared = c.sharing > 1 ? plural(c.sharing - 1, ' (and of 1 other route)', ' (and of %d other routes)') : '';
  return `The certificate of ${c.hostPath}${shared} comes from Secret ${c.secret}. ` +
    'This preview is not applied from here: to rotate it, update that Secret; dcm then does what the preview shows.';
}

export const percent = (f) => `${(f * 100).toFixed(1)}%`;

export function bytes(n) {
  if (n < 1 << 20) return `${(n / (1 << 10)).toFixed(1)} KiB`;
  return `${(n / (1 << 20)).toFixed(1)} MiB`;
}

const totalKeys = ['backends', 'ready', 'drain', 'maint', 'cfgServers', 'runtimeServers', 'slotsFree', 'spareBackends'];

// opKey is how the engine counts commands for a prediction (dcm/engine).
const opKey = (o) => `${o.backend} ${o.op}${o.op === 'set-state' ? `:${o.state}` : ''}`;

export function start({ status }) {
  const form = $('whatif-form');
  const canAct = form.dataset.canAct === 'true';
  const preview = $('preview');
  const stack = []; // the events after the scale
  let asked = 0; // the id of the latest preview asked
  let current = null; // {sim, whatifs}: the preview shown
  let applied = null; // {whatif, seq, backends}: a change made, being followed
  let services = new Map(); // namespace/service → a route to it, for add-route
  // backend → its certificate's Secret, for rotate-cert: the page's until
  // the live state comes.
  let certs = new Map([...$('wi-cert').options].filter((o) => o.value).map((o) => [o.value, o.dataset.secret]));
  const podSuggestions = 50;
  let podList = []; // namespace/pod of the live state, sorted
  let podSet = new Set();

  $('wi-more').hidden = false;
  document.querySelector('.whatif-form .hold').hidden = false;
  if ($('apply')) $('apply').hidden = false;

  const live = new Live(() => {
    refreshChoices();
    if (!worker && !held()) recomputeSoon();
  });
  const held = () => $('wi-hold').checked;

  // The planner: in a worker when the build carries it, else the server.
  let worker = null;
  if (form.dataset.worker) {
    worker = new Worker(form.dataset.worker);
    stats.source = 'wasm';
    worker.onmessage = (e) => {
      const m = e.data;
      switch (m.type) {
        case 'ready':
          stats.plannerMs = m.ms;
          stats.wasmBytes = m.wasmBytes;
          break;
        case 'preview':
          if (m.id !== asked) break;
          stats.lastSim = m.sim;
          show(JSON.parse(m.sim), m.ms, 'in your browser');
          break;
        case 'error':
          stats.errors.push(m.message);
          if (m.fatal) {
            // Without the planner, the server previews.
            worker = null;
            stats.source = 'server';
            recompute();
          }
          break;
      }
    };
  } else {
    stats.source = 'server';
  }
  live.follow(status, (m, raw) => {
    worker?.postMessage({ type: 'feed', raw });
    if (m.type !== 'event') return;
    follow(m.event);
    // A held preview says when what it depends on moves.
    const ev = m.event;
    if (current && held() && ev.seq > current.sim.seq &&
        (ev.type === 'reload' || (ev.backends || []).some((b) => current.sim.backends.includes(b)))) {
      $('pv-moved').hidden = false;
      preview.dataset.moved = 'true';
    }
  });

  // whatifs reads the form: the scale, then the stacked events.
  function whatifs() {
    const out = [];
    const [namespace, kind, name] = ($('wi-workload').value || '').split('/');
    const n = Number($('wi-replicas').value);
    if (name && $('wi-replicas').value !== '' && Number.isInteger(n) && n >= 0) {
      out.push({ kind: 'scale', namespace, workload: { kind, name }, replicas: n });
    }
    const secret = certs.get($('wi-cert').value);
    if (secret) out.push({ kind: 'rotate-cert', secret });
    return out.concat(stack);
  }

  function recompute() {
    const ws = whatifs();
    const id = ++asked;
    if (ws.length === 0) {
      current = null;
      bind(preview, { empty: true });
      updateApply();
      return;
    }
    if (worker) {
      worker.postMessage({ type: 'preview', id, whatifs: ws });
      return;
    }
    const t0 = performance.now();
    fetch('/api/v1/plan', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json', 'X-CSRF-Token': csrf() },
      body: JSON.stringify({ whatifs: ws }),
    })
      .then((r) => (r.ok ? r.json() : Promise.reject(new Error(`HTTP ${r.status}`))))
      .then((sim) => id === asked && show(sim, performance.now() - t0, 'on the server'))
      .catch((err) => stats.errors.push(String(err.message || err)));
  }
  const recomputeSoon = coalesce(recompute, 100);

  function show(sim, ms, where) {
    current = { sim, whatifs: whatifs() };
    $('pv-moved').hidden = true;
    delete preview.dataset.moved;
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
    bind(preview, fields);
    preview.dataset.source = stats.source;
    preview.dataset.seq = String(sim.seq);
    preview.dataset.ms = ms.toFixed(2);
    $('pv-errors').replaceChildren(...(sim.errors || []).map((text) => fill('tpl-error', { text })));
    $('pv-steps').replaceChildren(...(sim.steps || []).map((st) => {
      const li = fill('tpl-step', { phase: st.phase, reload: st.reload, reloadText: String(st.reload), reasons: `reload: ${(st.reasons || []).join(', ')}` });
      li.querySelector('[data-role=ops]').replaceChildren(...(st.ops || []).map((o) => fill('tpl-op', { text: opText(o), op: o.op })));
      return li;
    }));
    $('pv-traffic').replaceChildren(...(sim.traffic || []).map((s) => fill('tpl-share', { ...s, pod: s.pod || '', share: percent(s.share) })));
    $('pv-draining').replaceChildren(...(sim.draining || []).map((d) => fill('tpl-draining', { ...d, pod: d.pod || '' })));
    updateApply();
  }

  // The one scale Apply makes, if the preview is exactly that.
  function applicable() {
    if (!current || current.whatifs.length !== 1 || current.whatifs[0].kind !== 'scale') return null;
    if ((current.sim.errors || []).length > 0) return null;
    return current.whatifs[0];
  }

  function updateApply() {
    const btn = $('wi-apply');
    if (!btn) return;
    const w = applicable();
    btn.disabled = !canAct || w === null || applied?.pending;
    btn.textContent = w ? `Apply: scale ${w.workload.kind} ${w.namespace}/${w.workload.name} to ${w.replicas}` : 'Apply';
    // A rotation is made by updating its Secret, never from here.
    const secrets = [...new Set((current?.whatifs || []).filter((x) => x.kind === 'rotate-cert').map((x) => x.secret))];
    $('wi-apply-what').textContent = secrets.length === 0
      ? 'Apply makes the one scale previewed above, through Kubernetes.'
      : `Apply makes a scale alone, through Kubernetes. A certificate rotation is made by updating its Secret (${secrets.join(', ')}): dcm then rotates it as previewed.`;
  }

  async function apply() {
    const w = applicable();
    if (!w) return;
    const sim = current.sim;
    const ok = await confirmDialog({
      verb: 'Scale', title: `Scale ${w.workload.kind} ${w.namespace}/${w.workload.name} to ${w.replicas}?`,
      message: sim.reloads > 0 ? `HAProxy will reload (${sim.reasons.join(', ')}).` : `HAProxy gets ${plural(sim.ops, '1 runtime command', '%d runtime commands')}, no reload.`,
    });
    if (!ok) return;
    // Follow from now: HAProxy may get the commands before the answer comes.
    applied = { whatif: w, seq: sim.seq, backends: new Set(sim.backends), pending: true, ops: [] };
    $('cmp-ops').replaceChildren();
    $('cmp-rows').replaceChildren();
    $('cmp-verdict').textContent = 'Waiting for HAProxy…';
    $('cmp-verdict').dataset.match = '';
    updateApply();
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
      applied = null;
      $('compare').hidden = true;
      updateApply();
    }
    if (r.status === 409) {
      message(`The state moved since this preview (now at seq ${body.seq}); nothing was scaled. The preview has been computed again: check it and apply again.`, 'stale');
      $('wi-hold').checked = false;
      worker?.postMessage({ type: 'hold', on: false });
      worker?.postMessage({ type: 'refresh' });
      recompute();
      return;
    }
    if (!r.ok) {
      message(`Not applied: ${body.error || body.message || `HTTP ${r.status}`}`, 'error');
      return;
    }
    message(`Scaled ${w.workload.kind} ${w.namespace}/${w.workload.name} to ${w.replicas}. Following what HAProxy is asked…`, 'ok');
    $('compare').hidden = false;
  }

  // follow collects, after an Apply, the commands HAProxy gets for the
  // previewed backends, and the engine's verdict on the prediction.
  function follow(ev) {
    if (!applied || ev.seq <= applied.seq) return;
    if ((ev.type === 'applied' || ev.type === 'reload') && applied.pending) {
      if (ev.type === 'reload') applied.ops.push({ text: `reload (${(ev.reload?.reasons || []).join(', ')})`, op: 'reload' });
      for (const o of ev.ops || []) if (applied.backends.has(o.backend)) applied.ops.push({ text: opText(o), op: o.op });
      $('cmp-ops').replaceChildren(...applied.ops.map((o) => fill('tpl-op', o)));
    }
    if (ev.type !== 'prediction' || !ev.prediction) return;
    const p = ev.prediction;
    const w = (p.whatifs || [])[0];
    if (!w || w.namespace !== applied.whatif.namespace || w.workload?.name !== applied.whatif.workload.name || w.replicas !== applied.whatif.replicas) return;
    applied.pending = false;
    const keys = [...new Set([...Object.keys(p.predicted || {}), ...Object.keys(p.actual || {})])].sort();
    $('cmp-rows').replaceChildren(...keys.map((key) => {
      const pr = p.predicted?.[key] || 0, ac = p.actual?.[key] || 0;
      return fill('tpl-cmp', { key, predicted: pr, actual: ac, cls: pr === ac ? 'same' : 'diff' });
    }));
    const v = $('cmp-verdict');
    v.dataset.match = String(p.match);
    v.textContent = p.match ? 'Actual = predicted: HAProxy was asked exactly what the preview showed.' : 'Actual differs from the prediction (highlighted); the difference is in the audit log and dcm_prediction_mismatch_total.';
    updateApply();
  }

  function message(text, kind) {
    const el = $('wi-apply-msg');
    if (!el) return;
    el.textContent = text;
    el.dataset.kind = kind;
    el.hidden = false;
  }

  // The choices of the stacked events follow the live state.
  function refreshChoices() {
    const s = live.snap;
    if (!s) return;
    const pods = new Set();
    services = new Map();
    const counts = new Map();
    for (const b of s.backends) {
      const r = b.route;
      for (const srv of b.servers) if (srv.pod && !srv.retired) pods.add(`${r.namespace}/${srv.pod}`);
      if (r.services?.[0]) services.set(`${r.namespace}/${r.services[0].name}`, r);
      if (r.workload) {
        const key = `${r.namespace}/${r.workload.kind}/${r.workload.name}`;
        const set = counts.get(key) || new Set();
        for (const srv of b.servers) if (srv.pod && !srv.retired && srv.state !== 'drain') set.add(srv.pod);
        counts.set(key, set);
      }
    }
    for (const opt of $('wi-workload').options) {
      const set = counts.get(opt.value);
      if (!set) continue;
      const [ns, kind, name] = opt.value.split('/');
      opt.textContent = `${kind} ${ns}/${name} · ${plural(set.size, '1 pod', '%d pods')}`;
      opt.dataset.pods = String(set.size);
    }
    podList = [...pods].sort();
    podSet = pods;
    suggestPods();
    options($('wi-add-backend'), s.backends.map((b) => b.name));
    options($('wi-add-service'), [...services.keys()].sort());
    const tls = certRoutes(s.backends);
    certs = new Map(tls.map((c) => [c.backend, c.secret]));
    // Rebuilt only when it changes: the feed must not close an open list.
    const cert = $('wi-cert');
    const now = [...cert.options].slice(1).map((o) => `${o.value} ${o.textContent} ${o.dataset.note}`);
    if (now.length !== tls.length || tls.some((c, i) => now[i] !== `${c.backend} ${certLabel(c)} ${certNote(c)}`)) {
      const keep = cert.value;
      cert.replaceChildren(new Option('None', ''), ...tls.map((c) => {
        const o = new Option(certLabel(c), c.backend, false, c.backend === keep);
        o.dataset.secret = c.secret;
        o.dataset.note = certNote(c);
        return o;
      }));
    }
    $('wi-cert-none').hidden = tls.length > 0;
    showCertNote();
    options($('wi-add-cert'), tls.map((c) => c.backend));
  }

  // The chosen route's note: where its certificate comes from.
  function showCertNote() {
    const note = $('wi-cert').selectedOptions[0]?.dataset.note || '';
    $('wi-cert-note').textContent = note;
    $('wi-cert-note').hidden = note === '';
  }

  // A cluster can have ten thousand pods: the pod field suggests at most
  // podSuggestions matches of what is typed (the scaled workload's
  // namespace first), so the live state never rebuilds a huge list.
  function suggestPods() {
    const typed = $('wi-add-pod').value.trim().toLowerCase();
    const ns = ($('wi-workload').value || '').split('/')[0];
    const match = (p) => (typed ? p.toLowerCase().includes(typed) : !ns || p.startsWith(ns + '/'));
    const out = [];
    for (const p of podList) {
      if (match(p)) out.push(p);
      if (out.length === podSuggestions) break;
    }
    const list = $('wi-pods');
    const now = [...list.options].map((o) => o.value);
    if (now.length === out.length && now.every((v, i) => v === out[i])) return;
    list.replaceChildren(...out.map((v) => new Option(v, v)));
  }
  $('wi-add-pod').addEventListener('input', () => {
    $('wi-add-pod').setCustomValidity('');
    suggestPods();
  });

  function options(select, values) {
    const keep = select.value;
    select.replaceChildren(...values.map((v) => new Option(v, v, false, v === keep)));
  }

  // Stacked events.
  function showKind() {
    const kind = $('wi-add-kind').value;
    for (const el of document.querySelectorAll('.stack-add [data-for]')) el.hidden = el.dataset.for !== kind;
  }
  $('wi-add-kind').addEventListener('change', showKind);
  showKind();
  $('wi-add').addEventListener('click', () => {
    const kind = $('wi-add-kind').value;
    if (kind === 'delete-pod') {
      const value = $('wi-add-pod').value.trim();
      const input = $('wi-add-pod');
      if (!podSet.has(value)) {
        input.setCustomValidity(value ? `no pod ${value} in the live state` : 'choose a pod');
        input.reportValidity();
        return;
      }
      input.setCustomValidity('');
      const [namespace, pod] = value.split('/');
      stack.push({ kind, namespace, pod });
    } else if (kind === 'delete-route') {
      const backend = $('wi-add-backend').value;
      if (backend) stack.push({ kind, backend });
    } else if (kind === 'rotate-cert') {
      const secret = certs.get($('wi-add-cert').value);
      if (secret) stack.push({ kind, secret });
    } else {
      const svc = services.get($('wi-add-service').value);
      const host = $('wi-add-host').value.trim().toLowerCase();
      const path = $('wi-add-path').value.trim() || '/';
      if (!svc || !host) return;
      const name = `whatif-${host.split('.')[0]}`.slice(0, 63);
      stack.push({ kind, route: { ...svc, name, object: name, host, path, workload: svc.workload } });
    }
    drawStack();
    recompute();
  });
  $('wi-stack').addEventListener('click', (e) => {
    const i = e.target.dataset?.index;
    if (i === undefined) return;
    stack.splice(Number(i), 1);
    drawStack();
    recompute();
  });
  function drawStack() {
    $('wi-stack').replaceChildren(...stack.map((w, index) => fill('tpl-stack', { index, text: stackText(w) })));
  }

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    recompute();
  });
  $('wi-hold').addEventListener('change', () => {
    worker?.postMessage({ type: 'hold', on: held() });
    if (!held()) recompute();
  });
  form.addEventListener('input', (e) => {
    if (e.target.id === 'wi-workload') {
      const opt = e.target.selectedOptions[0];
      if (opt?.dataset.pods && $('wi-replicas').value === '0') $('wi-replicas').value = opt.dataset.pods;
      suggestPods();
    }
    if (e.target.id === 'wi-cert') showCertNote();
    if (e.target.id === 'wi-workload' || e.target.id === 'wi-replicas' || e.target.id === 'wi-cert') recompute();
  });
  $('wi-apply')?.addEventListener('click', () => apply().catch((err) => message(String(err.message || err), 'error')));
  recompute();
}

function stackText(w) {
  switch (w.kind) {
    case 'delete-pod':
      return `delete pod ${w.namespace}/${w.pod}`;
    case 'delete-route':
      return `delete route ${w.backend}`;
    case 'add-route':
      return `add route ${w.route.host}${w.route.path} → ${w.route.services[0].name}`;
    case 'rotate-cert':
      return `rotate the certificate of Secret ${w.secret} (made by updating the Secret)`;
  }
  return w.kind;
}

function fill(tpl, fields) {
  const el = clone(tpl);
  bind(el, fields);
  return el;
}
