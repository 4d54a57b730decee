// Backend rows and server chips, shared by the overview and /backends.

import { bind, clone } from './bind.js';
import * as f from './format.js';

export function chip(backend, s) {
  const el = clone('tpl-chip');
  bind(el, {
    href: f.serverURL(backend, s.name), name: s.name, state: f.displayState(s), title: f.chipTitle(s),
    label: f.chipLabel(s), weight: s.weight,
  });
  return el;
}

export function fillChips(container, b) {
  container.replaceChildren(...b.servers.map((s) => chip(b.name, s)));
}

export function backendRow(b) {
  const el = clone('tpl-backend');
  bind(el, {
    name: b.name, href: f.backendURL(b.name), route: f.routeText(b.route), namespace: b.route.namespace,
    count: f.serverCount(b.servers.length),
  });
  fillChips(el.querySelector('[data-role=chips]'), b);
  return el;
}

// syncRows brings a container of rows keyed by data-backend in line with
// backends (sorted by name): rows of changed backends are made anew, rows
// of others kept, so a live page does not redraw what did not change.
export function syncRows(container, backends, change, make = backendRow) {
  if (change.all) {
    container.replaceChildren(...backends.map(make));
    return;
  }
  const rows = new Map([...container.children].map((el) => [el.dataset.backend, el]));
  const want = new Set(backends.map((b) => b.name));
  for (const [name, el] of rows) {
    if (!want.has(name)) {
      el.remove();
      rows.delete(name);
    }
  }
  let prev = null;
  for (const b of backends) {
    let el = rows.get(b.name);
    if (el && change.changed.has(b.name)) {
      const fresh = make(b);
      el.replaceWith(fresh);
      el = fresh;
    } else if (!el) {
      el = make(b);
      if (prev) prev.after(el);
      else container.prepend(el);
    }
    prev = el;
  }
}
