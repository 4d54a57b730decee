// The live picture of a snapshot page (overview, backends, one backend,
// what-if). The feed starts with a snapshot; after it, events patch the
// picture: applied and observed events carry the backends they touched as
// they are now, which replace the page's (docs/feed.md). The snapshot is
// fetched again only when events cannot tell what changed: an event of
// another type (a reload may change any backend, a rejection the rejected
// objects, a restart HAProxy's worker), a gap in the seqs, a reconnect
// (the events resumed may be a restarted dcm's). A page that shows what no
// event carries (the overview's count of no-op syncs) asks for counts:
// after events it fetches once a burst is over, at most every countsDelay.

import { Feed } from './feed.js';

const refreshDelay = 250; // ms: one fetch for a burst of events that need one
const countsDelay = 1000; // ms
const retryMax = 30000; // ms: a failed fetch is tried again, backing off to this

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

// Event types that carry the state of the backends they touch.
const carryState = new Set(['applied', 'observed']);

export class Live {
  // onChange({all, changed, summary}) redraws: all on the first snapshot,
  // else the backends named in changed (a Set). counts: the page shows
  // figures only a snapshot has.
  constructor(onChange, { counts = false } = {}) {
    this.onChange = onChange;
    this.counts = counts;
    this.snap = null;
    this.backends = new Map();
    this.seq = 0;
    this.timer = 0;
    this.at = 0; // when the timer fires
    this.inflight = null; // {from, events, obsolete}: a fetch being made
    this.again = false; // fetch again once the one in flight is done
    this.retry = 0; // ms before a failed fetch is tried again
    this.fetches = 0;
  }

  // follow starts the feed; onMessage(message, raw) sees every message,
  // onText(raw) its text first (Feed's).
  follow(status, onMessage = () => {}, onText = () => {}) {
    this.status = status;
    const message = (m, raw) => {
      // A resume after a cut: the events missed follow, but they may be a
      // restarted dcm's, whose seqs started again.
      if (m.type === 'hello' && m.hello?.resumed) this.soon(refreshDelay);
      onMessage(m, raw);
    };
    this.feed = new Feed({ status, onText, onMessage: message, onSnapshot: (s) => this.snapshot(s), onEvent: (ev) => this.event(ev) });
    this.feed.start();
  }

  // snapshot takes the feed's snapshot; a fetch under way is then moot.
  snapshot(s) {
    if (this.inflight) this.inflight.obsolete = true;
    this.replace(s);
  }

  replace(s) {
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
    this.inflight?.events.push(ev);
    if (ev.seq !== this.seq + 1) this.soon(refreshDelay); // events were missed
    this.seq = ev.seq;
    this.snap.seq = ev.seq;
    const changed = new Set();
    if (ev.type === 'gateways') {
      this.snap.gateways = ev.gateways;
      this.onChange({ all: false, changed, summary: true });
      return;
    }
    if (carryState.has(ev.type)) {
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
      if (ev.type === 'applied') this.snap.updates.dynamic++;
      if (this.counts) this.soon(countsDelay);
    } else {
      this.soon(refreshDelay);
    }
    this.onChange({ all: false, changed, summary: changed.size > 0 || ev.type === 'applied' });
  }

  // soon fetches the snapshot within delay: a fetch already due sooner
  // serves this call too.
  soon(delay) {
    const at = Date.now() + delay;
    if (this.timer && this.at <= at) return;
    clearTimeout(this.timer);
    this.at = at;
    this.timer = setTimeout(() => {
      this.timer = 0;
      this.refresh();
    }, delay);
  }

  // refresh fetches the snapshot. Events that come while it is fetched
  // are patched at once and again over it: it may be older than they are.
  async refresh() {
    if (this.inflight) {
      this.again = true;
      return;
    }
    const f = (this.inflight = { from: this.seq, events: [], obsolete: false });
    this.fetches++;
    if (this.status) this.status.dataset.fetches = String(this.fetches);
    let s = null;
    try {
      const r = await fetch('/api/v1/snapshot', { headers: { Accept: 'application/json' } });
      if (!r.ok) throw new Error(`HTTP ${r.status}`);
      s = await r.json();
    } catch {
      // Tried again below, backing off.
    }
    this.inflight = null;
    if (s && !f.obsolete && s.seq >= f.from) {
      this.retry = 0;
      this.replace(s);
      for (const ev of f.events) this.event(ev);
    } else if (!s) {
      this.retry = Math.min(retryMax, Math.max(1000, this.retry * 2));
      this.soon(this.retry);
    } else if (!f.obsolete) {
      this.again = true; // older than the page: a server behind its feed
    }
    if (this.again) {
      this.again = false;
      this.soon(refreshDelay);
    }
  }
}

function normalize(b) {
  b.servers ||= [];
  return b;
}
