// The what-if form: what to preview — a scale, a certificate rotation, and
// events stacked on top (delete a pod, delete, add or change a route, rotate
// another certificate). Every change asks for a preview again.

import { fill } from './bind.js';

const $ = (id) => document.getElementById(id);
const refused = Symbol('refused');

export class WhatIfForm {
  // choices: the Choices the form offers; onChange(): preview again.
  constructor(form, choices, onChange) {
    this.choices = choices;
    this.onChange = onChange;
    this.stack = []; // the events after the scale
    $('wi-add-pod').addEventListener('input', () => {
      $('wi-add-pod').setCustomValidity('');
      choices.suggestPods();
    });
    $('wi-add-kind').addEventListener('change', () => this.showKind());
    this.showKind();
    $('wi-add').addEventListener('click', () => this.add());
    $('wi-stack').addEventListener('click', (e) => {
      const i = e.target.dataset?.index;
      if (i === undefined) return;
      this.stack.splice(Number(i), 1);
      this.drawStack();
      onChange();
    });
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      onChange();
    });
    form.addEventListener('input', (e) => {
      const id = e.target.id;
      if (id === 'wi-workload') {
        const opt = e.target.selectedOptions[0];
        if (opt?.dataset.pods && $('wi-replicas').value === '0') $('wi-replicas').value = opt.dataset.pods;
        choices.suggestPods();
      }
      if (id === 'wi-cert') choices.showCertNote();
      if (id === 'wi-workload' || id === 'wi-replicas' || id === 'wi-cert') onChange();
    });
  }

  // whatifs reads the form: the scale, the rotation, then the stacked events.
  whatifs() {
    const out = [];
    const [namespace, kind, name] = ($('wi-workload').value || '').split('/');
    const n = Number($('wi-replicas').value);
    if (name && $('wi-replicas').value !== '' && Number.isInteger(n) && n >= 0) {
      out.push({ kind: 'scale', namespace, workload: { kind, name }, replicas: n });
    }
    const secret = this.choices.certs.get($('wi-cert').value);
    if (secret) out.push({ kind: 'rotate-cert', secret });
    // change is the stack's label of an update-route, not the planner's.
    return out.concat(this.stack.map(({ change, ...w }) => w));
  }

  showKind() {
    const kind = $('wi-add-kind').value;
    for (const el of document.querySelectorAll('.stack-add [data-for]')) el.hidden = el.dataset.for !== kind;
  }

  // add stacks the event the fields describe. A pod the live state lacks,
  // or a route without a service or host, is refused; a list left empty
  // stacks nothing.
  add() {
    const w = this.stacked($('wi-add-kind').value);
    if (w === refused) return;
    if (w) this.stack.push(w);
    this.drawStack();
    this.onChange();
  }

  stacked(kind) {
    const { podSet, services, certs } = this.choices;
    switch (kind) {
      case 'delete-pod': {
        const input = $('wi-add-pod');
        const value = input.value.trim();
        if (!podSet.has(value)) {
          input.setCustomValidity(value ? `no pod ${value} in the live state` : 'choose a pod');
          input.reportValidity();
          return refused;
        }
        input.setCustomValidity('');
        const [namespace, pod] = value.split('/');
        return { kind, namespace, pod };
      }
      case 'delete-route': {
        const backend = $('wi-add-backend').value;
        return backend ? { kind, backend } : null;
      }
      case 'rotate-cert': {
        const secret = certs.get($('wi-add-cert').value);
        return secret ? { kind, secret } : null;
      }
      case 'update-route': {
        const route = this.choices.routes.get($('wi-upd-backend').value);
        return route ? { kind, route: changed(route, $('wi-upd-change').value), change: $('wi-upd-change').selectedOptions[0]?.textContent } : null;
      }
    }
    if (kind === 'add-httproute') return this.httpRouteRule();
    const svc = services.get($('wi-add-service').value);
    const host = $('wi-add-host').value.trim().toLowerCase();
    const path = $('wi-add-path').value.trim() || '/';
    if (!svc || !host) return refused;
    const name = `whatif-${host.split('.')[0]}`.slice(0, 63);
    return { kind, route: { ...svc, name, object: name, host, path, workload: svc.workload } };
  }

  // httpRouteRule is the route dcm makes of rule 0 of a new HTTPRoute
  // (dcm/kube's translation): on a listener that serves a route now, for
  // a hostname or any, a PathPrefix match, to a Service of its namespace.
  // With another port, on a new listener of the same protocol on that
  // port of the Gateway's address (the planner says whether HAProxy binds
  // it: gateway-listener-port).
  httpRouteRule() {
    const l = this.choices.listeners.get($('wi-gw-listener').value);
    const svc = this.choices.services.get($('wi-gw-service').value);
    const host = $('wi-gw-host').value.trim().toLowerCase();
    const path = $('wi-gw-path').value.trim() || '/';
    const port = $('wi-gw-port').value.trim();
    if (!l || !svc || (port && !/^[1-9][0-9]{0,4}$/.test(port)) || Number(port) > 65535) return refused;
    const object = `whatif-${(host || 'any').split('.')[0]}`.slice(0, 40);
    const { kind, tls, ...gw } = l;
    const addr = gw.bind.slice(0, gw.bind.lastIndexOf(':'));
    if (port && `${addr}:${port}` !== gw.bind) {
      Object.assign(gw, { listener: `whatif-${port}`, bind: `${addr}:${port}`, listenerHostname: undefined });
    }
    return { kind: 'add-route', route: { namespace: svc.namespace, name: `gw_${object}.0.0000000000000000`, object, source: 'httproute',
      kind, tls, host: '', path: '', balance: 'roundrobin', workload: svc.workload,
      services: [{ name: svc.services[0].name, port: svc.services[0].port, weight: 1 }],
      gateway: { ...gw, hostnames: host ? [host] : [], matches: [{ pathType: 'PathPrefix', path }], rank: `999999999999!${svc.namespace}/${object}!0000` } } };
  }

  drawStack() {
    $('wi-stack').replaceChildren(...this.stack.map((w, index) => fill('tpl-stack', { index, text: stackText(w) })));
  }
}

// changed is a copy of route with one setting changed, as its annotation
// would (views/whatif_changes.go names the changes).
function changed(route, change) {
  const r = structuredClone(route);
  switch (change) {
    case 'timeout-5m':
      r.http = { ...r.http, timeoutMs: 300000 };
      break;
    case 'forwarded-never':
      r.http = { ...r.http, forwarded: 'never' };
      break;
    case 'allow-loopback':
      r.allowlist = ['127.0.0.0/8'];
      break;
    case 'sticky':
      r.sticky = !r.sticky;
      break;
    case 'balance-leastconn':
      r.balance = 'leastconn';
      break;
  }
  return r;
}

function stackText(w) {
  switch (w.kind) {
    case 'delete-pod':
      return `delete pod ${w.namespace}/${w.pod}`;
    case 'delete-route':
      return `delete route ${w.backend}`;
    case 'add-route':
      if (w.route.gateway) {
        const g = w.route.gateway;
        return `add HTTPRoute rule ${w.route.namespace}/${w.route.object} on ${g.gateway} ${g.listener}: ` +
          `${g.hostnames[0] || '*'} PathPrefix ${g.matches[0].path} → ${w.route.services[0].name}`;
      }
      return `add route ${w.route.host}${w.route.path} → ${w.route.services[0].name}`;
    case 'rotate-cert':
      return `rotate the certificate of Secret ${w.secret} (made by updating the Secret)`;
    case 'update-route':
      return `change route ${w.route.namespace}/${w.route.name}: ${w.change}`;
  }
  return w.kind;
}
