// /backends: the list, live, filtered as you type. The filter is the same
// GET form the page offers without JavaScript; the address keeps it, so a
// reload or a shared link shows the same list.

import { bind } from './bind.js';
import * as f from './format.js';
import { Live } from './live.js';
import { syncRows } from './rows.js';

export function start({ status }) {
  const form = document.getElementById('backend-filter');
  const rows = document.getElementById('backend-rows');
  const nsSelect = form.elements.namespace;
  const filter = () => ({ q: form.elements.q.value, namespace: nsSelect.value, state: form.elements.state.value });

  const apply = () => {
    if (!live.snap) return;
    const flt = filter();
    let shown = 0;
    for (const row of rows.children) {
      const b = live.backends.get(row.dataset.backend);
      row.hidden = !(b && f.matchBackend(flt, b));
      if (!row.hidden) shown++;
    }
    bind(document.getElementById('backend-count'), { shown, total: live.snap.backends.length });
    bind(document.getElementById('no-match'), { none: shown === 0 });
  };

  const live = new Live((change) => {
    syncRows(rows, live.snap.backends, change);
    syncNamespaces(nsSelect, f.namespaces(live.snap.backends));
    apply();
  });

  const onInput = () => {
    apply();
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(filter())) if (v) params.set(k, v);
    const q = params.toString();
    history.replaceState(null, '', q ? `/backends?${q}` : '/backends');
  };
  form.addEventListener('input', onInput);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    onInput();
  });
  live.follow(status);
}

// syncNamespaces keeps the namespace options equal to the namespaces there
// are, and the one chosen chosen.
function syncNamespaces(select, names) {
  const have = [...select.options].slice(1).map((o) => o.value);
  if (have.join('\n') === names.join('\n')) return;
  const chosen = select.value;
  const options = names.map((ns) => {
    const o = document.createElement('option');
    o.value = ns;
    o.textContent = ns;
    return o;
  });
  select.replaceChildren(select.options[0], ...options);
  select.value = names.includes(chosen) ? chosen : '';
}
