// The what-if page. The preview is computed in a Web Worker by dcm's own
// planner compiled to WebAssembly, against the state the feed keeps
// current there, and again whenever that state moves; a build without the
// WebAssembly asks the server (whatif-planner.js). The form says what to
// preview (whatif-form.js) from choices that follow the live state
// (whatif-choices.js); the preview is drawn by whatif-preview.js; Apply
// makes it and follows what HAProxy is asked (whatif-apply.js). This
// module wires them together.
//
// window.dcmWhatIf carries the figures tests read: firstPreviewMs (from
// navigation start), lastMs (the planner's time for the last preview),
// previews, source (wasm or server), plannerMs (start of the planner),
// wasmBytes (the planner's download, as encoded on the wire), lastSim
// (the planner's last answer, as it gave it), and of the last snapshot the
// planner took in: loadMs (its time to read it), snapshotChars (its
// length) and loadedAt (when it was read, from navigation start).

import { coalesce, Live } from './live.js';
import { Applier } from './whatif-apply.js';
import { Choices } from './whatif-choices.js';
import { WhatIfForm } from './whatif-form.js';
import { Planner } from './whatif-planner.js';
import { Preview } from './whatif-preview.js';

const stats = (window.dcmWhatIf = {
  firstPreviewMs: null, lastMs: null, previews: 0, source: '', plannerMs: null, errors: [], loadMs: null, snapshotChars: null, loadedAt: null,
});

const $ = (id) => document.getElementById(id);

export function start({ status }) {
  const el = $('whatif-form');
  $('wi-more').hidden = false;
  document.querySelector('.whatif-form .hold').hidden = false;
  if ($('apply')) $('apply').hidden = false;
  const held = () => $('wi-hold').checked;

  const choices = new Choices();
  const preview = new Preview($('preview'), stats);
  const form = new WhatIfForm(el, choices, () => recompute());
  const applier = new Applier({
    canAct: el.dataset.canAct === 'true', preview,
    onStale: () => {
      $('wi-hold').checked = false;
      planner.hold(false);
      planner.refresh();
      recompute();
    },
  });
  const planner = new Planner(el.dataset.worker, stats, {
    onPreview: (sim, ms, where) => {
      preview.show(sim, ms, where, form.whatifs());
      applier.update();
    },
    onFallback: () => recompute(),
  });

  function recompute() {
    if (planner.ask(form.whatifs())) return;
    preview.clear();
    applier.update();
  }
  const recomputeSoon = coalesce(recompute, 100);

  // The worker follows the feed on its own; the server's planner is asked
  // again when the state moves, unless the preview is held.
  const live = new Live(() => {
    choices.update(live.snap);
    if (!planner.inBrowser && !held()) recomputeSoon();
  });
  live.follow(status, (m) => {
    if (m.type !== 'event') return;
    applier.follow(m.event);
    if (held()) preview.moved(m.event);
  }, (raw) => planner.feed(raw));

  $('wi-hold').addEventListener('change', () => {
    planner.hold(held());
    if (!held()) recompute();
  });
  $('wi-apply')?.addEventListener('click', () => applier.apply().catch((err) => applier.message(String(err.message || err), 'error')));
  recompute();
}
