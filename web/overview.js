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
  }, { counts: true });
  live.follow(status);
  followFleet();
}
