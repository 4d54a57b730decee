// The overview: counts, HAProxy, the last reload, rejected objects and the
// backends as rows of chips, all kept live. Its counts include no-op syncs,
// which no event reports: it asks Live for counts.

import { bind, clone } from './bind.js';
import { followFleet } from './fleet.js';
import * as f from './format.js';
import { Live } from './live.js';
import { syncRows } from './rows.js';

export function start({ status }) {
  const $ = (id) => document.getElementById(id);
  const live = new Live((change) => {
    const s = live.snap;
    syncRows($('backend-rows'), s.backends, change);
    if (!change.summary) return;
    bind($('summary'), f.summarize(s));
    bind($('haproxy'), {
      version: s.haproxy.version, pid: s.haproxy.pid, started: s.haproxy.started, uptime: f.uptime(s.haproxy.started),
      reloadCount: s.haproxy.reloads, mode: s.mode, running: s.haproxy.running ? 'running' : 'not running',
      runningOK: String(s.haproxy.running),
    });
    const r = s.lastReload;
    bind($('last-reload'), r
      ? { none: false, stamp: r.time, clock: f.clock(r.time), reasons: f.reasons(r.reasons), duration: f.seconds(r.durationSeconds),
          workers: f.workers(r), error: r.error || '' }
      : { none: true });
    bind($('rejected'), { none: s.rejected.length === 0 });
    $('rejected').querySelector('[data-role=rejected]').replaceChildren(...s.rejected.map((rj) => {
      const row = clone('tpl-rejected');
      bind(row, { object: f.objectText(rj.object), reason: rj.reason, message: rj.message });
      return row;
    }));
    showGateways($('gateways'), s.gateways);
  }, { counts: true });
  live.follow(status);
  followFleet();
}

// showGateways redraws the Gateway API panel from the snapshot's gateways
// (kept current by gateways events).
function showGateways(panel, g) {
  const gws = g?.gateways || [];
  const routes = g?.httpRoutes || [];
  bind(panel, { none: gws.length + routes.length === 0 });
  const conds = (row, cs) => row.querySelector('[data-role=conditions]').replaceChildren(...(cs || []).map((c) => {
    const el = clone('tpl-condition');
    bind(el, { type: c.type, status: c.status, text: f.conditionText(c) });
    return el;
  }));
  const rows = (role, list, tpl, fill) => panel.querySelector(`[data-role=${role}]`).replaceChildren(...list.map((x) => {
    const row = clone(tpl);
    fill(row, x);
    return row;
  }));
  rows('gateways', gws, 'tpl-gateway', (row, v) => {
    bind(row, { name: `${v.namespace}/${v.name}`, class: v.class, address: f.or(v.address) });
    conds(row, v.conditions);
  });
  rows('listeners', gws.flatMap((v) => (v.listeners || []).map((l) => [v, l])), 'tpl-listener', (row, [v, l]) => {
    bind(row, { name: `${v.namespace}/${v.name} ${l.name}`, protocol: l.protocol, port: l.port, hostname: f.or(l.hostname), attached: l.attachedRoutes });
    conds(row, l.conditions);
  });
  rows('httproutes', routes.flatMap((r) => (r.parents || []).map((p) => [r, p])), 'tpl-httproute', (row, [r, p]) => {
    bind(row, { name: f.routeViewText(r), hostnames: f.hostnamesText(r.hostnames), parent: f.parentText(p) });
    conds(row, p.conditions);
  });
}
