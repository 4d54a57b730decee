// /events: the audit log. The feed resumes from the seq the page was
// rendered at, so the list continues without a hole; new events go on top
// and the filter applies as you type.

import { bind, clone } from './bind.js';
import { Feed } from './feed.js';
import * as f from './format.js';

const keep = 1000; // rows the page keeps

export function start({ status, seq }) {
  const form = document.getElementById('event-filter');
  const list = document.getElementById('event-list');
  const count = document.getElementById('event-count');
  let kept = Number(count.querySelector('[data-bind="text=kept"]').textContent) || 0;
  const filter = () => ({ type: form.elements.type.value, q: form.elements.q.value });
  const visible = (li, flt) => f.matchEvent(flt, li.dataset.search || '', li.dataset.type);

  const counts = () => {
    let shown = 0;
    for (const li of list.children) if (!li.hidden) shown++;
    bind(count, { shown, kept });
  };
  const apply = () => {
    const flt = filter();
    for (const li of list.children) li.hidden = !visible(li, flt);
    counts();
  };
  const onInput = () => {
    apply();
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(filter())) if (v) params.set(k, v);
    const q = params.toString();
    history.replaceState(null, '', q ? `/events?${q}` : '/events');
  };
  form.addEventListener('input', onInput);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    onInput();
  });

  // The server filtered the rows it rendered; the rows the feed adds are
  // filtered here, so the list holds every event since the page opened.
  const feed = new Feed({
    status,
    since: seq,
    onEvent: (ev) => {
      const li = eventItem(ev);
      li.hidden = !visible(li, filter());
      list.prepend(li);
      kept++;
      while (list.children.length > keep) list.lastElementChild.remove();
      counts();
    },
    onResync: () => {
      document.getElementById('event-gap').hidden = false;
    },
  });
  feed.start();
}

export function eventItem(ev) {
  const li = clone('tpl-event');
  const r = ev.reload;
  bind(li, {
    type: ev.type, seq: ev.seq, search: f.eventSearch(ev), stamp: ev.time, clock: f.clock(ev.time), seqText: `#${ev.seq}`,
    message: ev.message || '', actor: ev.actor || '', object: f.objectText(ev.object), reason: ev.reason || '',
    reload: r ? f.reloadText(r) : '', reloadError: r?.error || '', backends: (ev.backends || []).join(', '),
    hasOps: (ev.ops || []).length > 0, opCount: f.opCount((ev.ops || []).length),
  });
  li.querySelector('[data-role=ops]').replaceChildren(...(ev.ops || []).map((op) => {
    const item = clone('tpl-op');
    bind(item, { text: f.opText(op) });
    return item;
  }));
  return li;
}
