// The live picture of a snapshot page (overview, backends, one backend).
// The feed starts with a snapshot; an event that carries state replaces the
// backends it names at once; a reload carries none, so the snapshot is
// fetched again — and after any event, shortly, to refresh the counts and
// the rest of the page that events do not describe.

import { Feed } from './feed.js';

const refreshDelay = 250; // ms: one fetch for a burst of events

// coalesce runs fn at most once per delay: the first call of a burst
// schedules it, later ones join. Unlike a debounce, a steady stream of
// events cannot put it off for ever; a call after fn started schedules
// the next run, so the last call is always followed by a run.
export function coalesce(fn, delay) {
  let timer = 0;
  return () => {
    if (timer) return;
    timer = setTimeout(() => {
      timer = 0;
      fn();
    }, delay);
  };
}

const byName = (a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

export class Live {
  // onChange({all, changed, summary}) redraws: all on the first snapshot,
  // else the backends named in changed (a Set).
  constructor(onChange) {
    this.onChange = onChange;
    this.snap = null;
    this.backends = new Map();
    this.seq = 0;
    this.refreshSoon = coalesce(() => this.refresh(), refreshDelay);
  }

  // follow starts the feed; onMessage(message, raw) sees every message.
  follow(status, onMessage) {
    this.feed = new Feed({ status, onMessage, onSnapshot: (s) => this.snapshot(s), onEvent: (ev) => this.event(ev) });
    this.feed.start();
  }

  snapshot(s) {
    // A fetched snapshot may be older than events the feed brought since.
    if (this.snap && s.seq < this.seq) return;
    s.backends = (s.backends || []).map(normalize);
    s.routes ||= [];
    s.rejected ||= [];
    const first = this.snap === null;
    const before = this.backends;
    this.backends = new Map(s.backends.map((b) => [b.name, b]));
    const changed = new Set();
    for (const [name, b] of this.backends) {
      if (!before.has(name) || JSON.stringify(before.get(name)) !== JSON.stringify(b)) changed.add(name);
    }
    for (const name of before.keys()) if (!this.backends.has(name)) changed.add(name);
    this.snap = s;
    this.seq = s.seq;
    this.onChange({ all: first, changed, summary: true });
  }

  event(ev) {
    if (this.snap === null || ev.seq <= this.seq) return; // the snapshot holds it already
    this.seq = ev.seq;
    this.snap.seq = ev.seq;
    const changed = new Set();
    // Only these carry the touched backends as they are now; an action or
    // a rejection names backends without their state.
    if (ev.type === 'applied' || ev.type === 'observed') {
      const state = new Map((ev.state || []).map((b) => [b.name, normalize(b)]));
      // A touched backend missing from the state is gone.
      for (const name of ev.backends || []) {
        if (!state.has(name) && this.backends.delete(name)) changed.add(name);
      }
      for (const [name, b] of state) {
        this.backends.set(name, b);
        changed.add(name);
      }
      this.snap.backends = [...this.backends.values()].sort(byName);
    }
    if (ev.type === 'applied') this.snap.updates.dynamic++;
    this.onChange({ all: false, changed, summary: changed.size > 0 });
    this.refreshSoon();
  }

  async refresh() {
    try {
      const r = await fetch('/api/v1/snapshot', { headers: { Accept: 'application/json' } });
      if (!r.ok) throw new Error(`HTTP ${r.status}`);
      this.snapshot(await r.json());
    } catch {
      // The next event, or the resumed feed, refreshes again.
    }
  }
}

function normalize(b) {
  b.servers ||= [];
  return b;
}
