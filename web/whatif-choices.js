// The what-if form's choices follow the live state: the workloads with
// their pod counts, the pods a stacked event may delete, the routes that
// may be deleted or copied, and the routes whose certificate may rotate.

import { plural } from './whatif-preview.js';

const $ = (id) => document.getElementById(id);

// A cluster can have ten thousand pods: the pod field suggests at most this
// many matches of what is typed, so the live state never rebuilds a huge list.
const podSuggestions = 50;

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

export class Choices {
  constructor() {
    this.services = new Map(); // namespace/service → a route to it, for add-route
    this.routes = new Map(); // backend → its route, for update-route
    this.listeners = new Map(); // "gateway listener" → what a new rule on it gets, for add-httproute
    // backend → its certificate's Secret, for rotate-cert: the page's until
    // the live state comes.
    this.certs = new Map([...$('wi-cert').options].filter((o) => o.value).map((o) => [o.value, o.dataset.secret]));
    this.podList = []; // namespace/pod of the live state, sorted
    this.podSet = new Set();
  }

  // update follows a snapshot (Live's picture).
  update(s) {
    if (!s) return;
    const pods = new Set();
    this.services = new Map();
    this.routes = new Map();
    this.listeners = new Map();
    const counts = new Map();
    for (const b of s.backends) {
      const r = b.route;
      this.routes.set(b.name, r);
      for (const srv of b.servers) if (srv.pod && !srv.retired) pods.add(`${r.namespace}/${srv.pod}`);
      if (r.services?.[0]) this.services.set(`${r.namespace}/${r.services[0].name}`, r);
      const g = r.gateway;
      if (g) {
        this.listeners.set(`${g.gateway} ${g.listener}`, { kind: r.kind, tls: r.tls, gateway: g.gateway, listener: g.listener, bind: g.bind,
          listenerHostname: g.listenerHostname });
      }
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
    this.podList = [...pods].sort();
    this.podSet = pods;
    this.suggestPods();
    options($('wi-add-backend'), s.backends.map((b) => b.name));
    options($('wi-upd-backend'), s.backends.map((b) => b.name));
    options($('wi-add-service'), [...this.services.keys()].sort());
    options($('wi-gw-service'), [...this.services.keys()].sort());
    options($('wi-gw-listener'), [...this.listeners.keys()].sort());
    this.updateCerts(certRoutes(s.backends));
  }

  updateCerts(tls) {
    this.certs = new Map(tls.map((c) => [c.backend, c.secret]));
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
    this.showCertNote();
    options($('wi-add-cert'), tls.map((c) => c.backend));
  }

  // showCertNote says where the chosen route's certificate comes from.
  showCertNote() {
    const note = $('wi-cert').selectedOptions[0]?.dataset.note || '';
    $('wi-cert-note').textContent = note;
    $('wi-cert-note').hidden = note === '';
  }

  // suggestPods offers the pods that match what is typed, else those of
  // the scaled workload's namespace.
  suggestPods() {
    const typed = $('wi-add-pod').value.trim().toLowerCase();
    const ns = ($('wi-workload').value || '').split('/')[0];
    const match = (p) => (typed ? p.toLowerCase().includes(typed) : !ns || p.startsWith(ns + '/'));
    const out = [];
    for (const p of this.podList) {
      if (match(p)) out.push(p);
      if (out.length === podSuggestions) break;
    }
    const list = $('wi-pods');
    const now = [...list.options].map((o) => o.value);
    if (now.length === out.length && now.every((v, i) => v === out[i])) return;
    list.replaceChildren(...out.map((v) => new Option(v, v)));
  }
}

function options(select, values) {
  const keep = select.value;
  select.replaceChildren(...values.map((v) => new Option(v, v, false, v === keep)));
}
