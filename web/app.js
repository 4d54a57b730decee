// The portal's script: one module per page, chosen by <body data-page>.
// Everything on a page is readable without it; it makes the page live.

import { setupActions } from './actions.js';
import * as backend from './backend.js';
import * as backends from './backends.js';
import * as config from './config.js';
import * as events from './events.js';
import { uptime } from './format.js';
import * as overview from './overview.js';
import * as whatif from './whatif.js';

const pages = { overview, backends, backend, events, config, whatif };

document.documentElement.classList.add('js');
const page = pages[document.body.dataset.page];
if (page) {
  setupActions();
  page.start({ status: document.getElementById('feed'), seq: Number(document.body.dataset.seq) });
}

// Uptimes count on between updates.
setInterval(() => {
  for (const t of document.querySelectorAll('time[data-since]')) t.textContent = uptime(t.dataset.since);
}, 1000);
