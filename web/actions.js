// Actions: drain, maint, ready, weight, reload. The forms in the page post
// to the API without JavaScript (a confirm checkbox stands in for the
// dialog); with it, a <dialog> asks first and fetch posts JSON with the
// session's CSRF token, and the feed shows the result.

import { bind } from './bind.js';

export const csrf = () => document.querySelector('meta[name=csrf-token]')?.content || '';

// prepareForms drops the no-JavaScript confirm checkbox: the dialog asks.
export function prepareForms(root) {
  for (const box of root.querySelectorAll('.nojs-confirm input')) box.required = false;
}

export function setupActions() {
  prepareForms(document);
  document.addEventListener('submit', (e) => {
    const form = e.target;
    if (!form.matches('form.actions, form.reload-form')) return;
    e.preventDefault();
    act(form, e.submitter).catch((err) => notice(String(err.message || err), 'error'));
  });
}

// describe says what a button will do, for the dialog, and what to post.
function describe(form, button) {
  const action = button?.dataset.action;
  const server = form.dataset.server;
  switch (action) {
    case 'drain':
      return { verb: 'Drain', title: `Drain ${server}?`, body: { state: 'drain' },
        message: 'HAProxy sends it no new requests and lets its sessions finish. It stays drained until you set it back to ready.' };
    case 'maint':
      return { verb: 'Maint', title: `Put ${server} in maintenance?`, body: { state: 'maint' },
        message: 'HAProxy sends it no traffic at all. It stays in maintenance until you set it back to ready.' };
    case 'ready':
      return { verb: 'Ready', title: `Set ${server} ready?`, body: { state: 'ready' },
        message: 'HAProxy sends it traffic again, and Kubernetes decides its state from now on.' };
    case 'weight': {
      const w = Number(form.elements.weight.value);
      if (!Number.isInteger(w) || w < -1 || w > 256) throw new Error('A weight is a whole number from 0 to 256, or -1 to hand it back to Kubernetes.');
      return { verb: 'Set weight', title: `Set the weight of ${server} to ${w}?`, body: { weight: w },
        message: w === -1 ? 'Kubernetes decides its weight again.' : 'It holds until you set -1, which hands the weight back to Kubernetes.' };
    }
    case 'reload':
      return { verb: 'Reload', title: 'Reload HAProxy?', body: { reason: form.elements.reason.value },
        message: 'HAProxy starts a new worker from the files on disk; the old one finishes its connections.' };
  }
  throw new Error('unknown action');
}

async function act(form, button) {
  const what = describe(form, button);
  if (!(await confirmDialog(what))) return;
  const url = form.action;
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json', 'X-CSRF-Token': csrf() },
    body: JSON.stringify(what.body),
  });
  if (!r.ok) {
    let msg = `HTTP ${r.status}`;
    try {
      msg = (await r.json()).error || msg;
    } catch {
      // not JSON: keep the status
    }
    throw new Error(msg);
  }
  notice(`${what.verb}: done.`, 'ok');
}

export function confirmDialog({ title, message, verb }) {
  const d = document.getElementById('confirm-dialog');
  bind(d, { title, message, verb });
  d.returnValue = '';
  d.showModal();
  return new Promise((resolve) => d.addEventListener('close', () => resolve(d.returnValue === 'ok'), { once: true }));
}

function notice(msg, kind) {
  const el = document.getElementById('notice');
  if (!el) return;
  el.textContent = msg;
  el.dataset.kind = kind;
  el.hidden = false;
  clearTimeout(el.timer);
  el.timer = setTimeout(() => (el.hidden = true), 6000);
}
