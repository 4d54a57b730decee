// The overview's replicas: GET /api/v1/fleet asks every dcm replica with
// the session's token, so the list is read again every second while the
// page is shown (the feed is per replica; the fleet is not one feed).

import { fill } from './bind.js';

const every = 1000;

// replicaState is views.ReplicaState: has the replica applied the latest change?
export function replicaState(r) {
  if (!r.status) return ['unreachable', r.error || ''];
  if (r.latest) return ['latest', 'has applied the latest change'];
  if (!r.status.applied) return ['starting', 'has not applied a first state yet'];
  if (r.status.pending) return ['pending', 'has a change from Kubernetes not applied yet'];
  return ['differs', 'serves another state than a replica: one of them has not seen the latest change yet'];
}

export function rowFields(r) {
  const [state, detail] = replicaState(r);
  const s = r.status;
  return {
    name: r.name, self: r.self, state, detail,
    version: s ? s.haproxy.version : '–', pid: s ? String(s.haproxy.pid) : '–', seq: s ? String(s.seq) : '–',
    reloads: s ? String(s.haproxy.reloads) : '–', applied: s?.applied || '–',
  };
}

// readFleet is GET /api/v1/fleet, or null when it cannot be read.
export async function readFleet() {
  try {
    const r = await fetch('/api/v1/fleet', { headers: { Accept: 'application/json' }, cache: 'no-store' });
    return r.ok ? await r.json() : null;
  } catch {
    return null;
  }
}

// followFleet keeps the overview's replica rows current.
export function followFleet() {
  const panel = document.getElementById('fleet');
  if (!panel) return;
  const rows = document.getElementById('fleet-rows');
  const tick = async () => {
    if (!document.hidden) {
      const f = await readFleet();
      if (f) {
        rows.replaceChildren(...f.replicas.map((r) => fill('tpl-replica', rowFields(r))));
        panel.dataset.inStep = String(f.inStep);
        panel.dataset.replicas = String(f.replicas.length);
      }
    }
    setTimeout(tick, every);
  };
  tick();
}
