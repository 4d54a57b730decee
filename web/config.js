// /config: the files and the drift check, read again after every change
// the feed reports (a plan applied rewrites the files; a reload reloads them).

import { bind, clone, text } from './bind.js';
import { Feed } from './feed.js';
import * as f from './format.js';
import { coalesce } from './live.js';

const refreshDelay = 400; // ms: one read for a burst of events
const rewrites = new Set(['applied', 'reload', 'haproxy', 'sync-error', 'observed']);

export function start({ status, seq }) {
  const refresh = async () => {
    try {
      const r = await fetch('/api/v1/config', { headers: { Accept: 'application/json' } });
      const body = await r.json();
      if (!r.ok) throw new Error(body.error || `HTTP ${r.status}`);
      render(body);
    } catch (err) {
      bind(document.getElementById('drift'), { error: `Cannot read the configuration: ${err.message}`, inStep: false });
    }
  };
  const refreshSoon = coalesce(refresh, refreshDelay);
  new Feed({
    status,
    since: seq,
    onEvent: (ev) => {
      if (rewrites.has(ev.type)) refreshSoon();
    },
    onResync: refresh,
  }).start();
}

function render(view) {
  const drift = view.drift || [];
  const panel = document.getElementById('drift');
  bind(panel, { error: '', inStep: drift.length === 0 });
  panel.querySelector('[data-role=drift]').replaceChildren(...drift.map((d) => text('li', d)));

  const files = document.getElementById('files');
  const have = new Map([...files.children].map((el) => [el.dataset.file, el]));
  const order = [];
  for (const file of view.files || []) {
    let el = have.get(file.name);
    if (!el) el = clone('tpl-file');
    have.delete(file.name);
    bind(el, { name: file.name, lines: f.lines(file.content), content: file.content });
    order.push(el);
  }
  for (const el of have.values()) el.remove();
  files.append(...order); // moves kept ones into order, keeping open/closed
}
