// One backend: its route, chips and servers table, live. Rows are made anew
// only for servers that changed, so a weight being typed elsewhere in the
// table survives an update.

import { prepareForms } from './actions.js';
import { bind, clone } from './bind.js';
import * as f from './format.js';
import { Live } from './live.js';
import { fillChips } from './rows.js';
import { followTraffic } from './traffic.js';

export function start({ status }) {
  const root = document.getElementById('backend');
  const name = root.dataset.backend;
  const tbody = document.getElementById('server-rows');
  const rendered = new Map(); // server name → JSON it was drawn from

  const live = new Live((change) => {
    if (!change.all && !change.changed.has(name)) return;
    const b = live.backends.get(name);
    document.getElementById('gone').hidden = !!b;
    if (!b) {
      tbody.replaceChildren();
      root.querySelector('[data-role=chips]').replaceChildren();
      rendered.clear();
      return;
    }
    const r = b.route;
    bind(document.getElementById('route-info'), {
      namespace: r.namespace, route: r.name, source: f.sourceText(r), kind: b.kind, host: f.hostsText(r),
      path: f.pathText(r), gateway: f.gatewayText(r), filters: f.filtersText(r), services: f.servicesText(r), workload: f.workloadText(r), balance: f.or(r.balance),
      check: f.onOff(r.check), insecure: f.insecureText(r),
      cert: f.certText(r), upstream: f.upstreamText(r),
    });
    fillChips(root.querySelector('[data-role=chips]'), b);
    syncServers(tbody, b, rendered);
  });
  live.follow(status);
  followTraffic(document.getElementById('traffic'), name);
}

function serverRow(backend, s) {
  const row = clone('tpl-server');
  bind(row, {
    id: f.serverID(s.name), name: s.name, state: f.displayState(s), pod: f.or(s.pod), address: f.address(s),
    health: f.healthText(s), sessions: s.sessions, weight: s.weight, origin: s.origin,
    stateURL: f.actionURL(backend, s.name, 'state'), weightURL: f.actionURL(backend, s.name, 'weight'),
  });
  prepareForms(row);
  return row;
}

function syncServers(tbody, b, rendered) {
  const rows = new Map([...tbody.children].map((el) => [el.dataset.server, el]));
  const want = new Set(b.servers.map((s) => s.name));
  for (const [name, el] of rows) {
    if (!want.has(name)) {
      el.remove();
      rendered.delete(name);
    }
  }
  let prev = null;
  for (const s of b.servers) {
    const json = JSON.stringify(s);
    let el = rows.get(s.name);
    if (!el || rendered.get(s.name) !== json) {
      const fresh = serverRow(b.name, s);
      if (el) el.replaceWith(fresh);
      else if (prev) prev.after(fresh);
      else tbody.prepend(fresh);
      el = fresh;
      rendered.set(s.name, json);
    }
    prev = el;
  }
}
