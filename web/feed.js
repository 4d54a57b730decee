// The client of GET /api/v1/feed (docs/feed.md). It resumes after a cut
// from the last seq it saw, so no event is lost while the page stays open;
// it retries with exponential backoff and jitter, so a restarted dcm is not
// hit by every open page at once; it checks that seq strictly increases.
//
// The status element in the header shows the state in words and carries
// the figures on data attributes: data-state (connecting, live,
// reconnecting), data-seq (the last seq), data-gaps (seqs that never
// arrived), data-dups, data-resyncs (resumes the server could not serve, a
// snapshot came instead) and data-connects.

const backoffBase = 250; // ms
const backoffMax = 8000; // ms
// The server pings every 20 s; a connection silent for longer is dead even
// if no close ever arrives (a laptop resumed, a NAT forgot it).
const silentLimit = 50000; // ms

const words = { connecting: 'connecting…', live: 'live', reconnecting: 'reconnecting…' };

export class Feed {
  // since: the seq the page was rendered at (events after it follow), or
  // null for a snapshot first. onSnapshot(snapshot), onEvent(event) and
  // onResync() (a resume became a snapshot: events were missed) are the
  // page's; onText(raw) sees every message's text as it came, before it is
  // parsed (the what-if planner takes the text: its worker starts on a
  // snapshot while the page parses it, a third of a second at 10,000
  // backends); onMessage(message, raw) sees every message next, parsed.
  constructor({ status, since = null, onSnapshot = () => {}, onEvent = () => {}, onResync = () => {}, onMessage = () => {}, onText = () => {} }) {
    this.status = status;
    this.last = since;
    this.onText = onText;
    this.onMessage = onMessage;
    this.onSnapshot = onSnapshot;
    this.onEvent = onEvent;
    this.onResync = onResync;
    this.attempt = 0;
    this.counts = { gaps: 0, dups: 0, resyncs: 0, connects: 0 };
    this.ws = null;
    this.silence = 0;
    this.state = 'connecting';
  }

  start() {
    this.connect();
    // Back online or back in view: do not wait for the backoff.
    window.addEventListener('online', () => this.now());
  }

  url() {
    const u = new URL('/api/v1/feed', location.href);
    u.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
    if (this.last !== null) u.searchParams.set('since', String(this.last));
    return u.href;
  }

  connect() {
    clearTimeout(this.retryTimer);
    this.show(this.counts.connects === 0 ? 'connecting' : 'reconnecting');
    let ws;
    try {
      ws = new WebSocket(this.url());
    } catch {
      this.retry();
      return;
    }
    this.ws = ws;
    this.resuming = this.last !== null;
    ws.onmessage = (e) => {
      if (this.ws === ws) this.message(e.data);
    };
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.ws = null;
      clearTimeout(this.silence);
      this.retry();
    };
    ws.onerror = () => ws.close();
  }

  // now reconnects at once when the feed is down.
  now() {
    if (this.ws === null) this.connect();
  }

  retry() {
    this.show('reconnecting');
    const delay = Math.min(backoffMax, backoffBase * 2 ** this.attempt) * (0.5 + Math.random() / 2);
    this.attempt = Math.min(this.attempt + 1, 16);
    this.retryTimer = setTimeout(() => this.connect(), delay);
  }

  watch(ws) {
    clearTimeout(this.silence);
    this.silence = setTimeout(() => ws.close(), silentLimit);
  }

  message(data) {
    this.onText(data);
    let m;
    try {
      m = JSON.parse(data);
    } catch {
      return;
    }
    this.watch(this.ws);
    this.onMessage(m, data);
    switch (m.type) {
      case 'hello':
        this.attempt = 0;
        this.counts.connects++;
        if (this.resuming && !m.hello.resumed) this.counts.resyncs++;
        this.show('live');
        break;
      case 'snapshot':
        this.last = m.seq;
        if (this.resuming) this.onResync();
        this.onSnapshot(m.snapshot);
        break;
      case 'event':
        if (this.last !== null) {
          if (m.seq <= this.last) {
            this.counts.dups++;
            break;
          }
          if (m.seq !== this.last + 1) this.counts.gaps += m.seq - this.last - 1;
        }
        this.last = m.seq;
        this.onEvent(m.event);
        break;
      case 'bye':
        // The server closes next (this client fell behind, or dcm stops);
        // the close resumes from this.last.
        this.byeReason = m.reason;
        break;
    }
    this.show();
  }

  show(state = this.state) {
    this.state = state;
    const el = this.status;
    if (!el) return;
    if (el.dataset.state !== state) {
      // Only on a change: the element is a live region, read out when it changes.
      el.dataset.state = state;
      el.textContent = words[state] || state;
      el.title = state === 'live' ? 'Live: changes appear as they happen' : 'The page reconnects by itself and catches up';
    }
    el.dataset.seq = this.last === null ? '' : String(this.last);
    for (const [k, v] of Object.entries(this.counts)) el.dataset[k] = String(v);
  }
}
