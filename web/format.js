// How the model reads on a page. These mirror views/display.go, which
// renders the same pages on the server: the words for ops and server states
// come from display_gen.js, generated from views/words.go; the rest is
// spelled again here, and web's TestFormatParity runs it under node against
// the Go (the browser tests also compare a page as rendered there with the
// page patched from here).

import { displayStates, opLines, stateRules } from './display_gen.js';

export { displayStates };

export function displayState(s) {
  const r = stateRules.find((r) => (r.state && s.state === r.state) || (r.health && s.health === r.health));
  return r ? r.show : 'ready';
}

export const chipLabel = (s) => s.pod || s.name;

export function address(s) {
  const host = s.addr.includes(':') ? `[${s.addr}]` : s.addr;
  return `${host}:${s.port}`;
}

export function healthText(s) {
  const h = s.health || 'unknown';
  return s.check ? h : `${h} (no check)`;
}

export function chipTitle(s) {
  return `${s.name} · ${address(s)} · ${displayState(s)} · health ${healthText(s)} · weight ${s.weight}`;
}

// pathEscape is Go's url.PathEscape for the characters names may hold
// (letters, digits, - . _ :).
export const pathEscape = (s) => encodeURIComponent(s).replace(/%3A/gi, ':');

export const backendURL = (name) => `/backends/${pathEscape(name)}`;
export const serverID = (name) => `srv-${name}`;
export const serverURL = (backend, server) => `${backendURL(backend)}#${serverID(server)}`;
export const actionURL = (backend, server, what) =>
  `/api/v1/backends/${pathEscape(backend)}/servers/${pathEscape(server)}/${what}`;

export const serverCount = (n) => (n === 1 ? '1 server' : `${n} servers`);

export const hostPath = (r) => (r.host || '*') + r.path;

export const backendSearch = (b) => `${b.name} ${routeText(b.route)} ${b.route.namespace}`.toLowerCase();

// A Gateway API route in short, as views/gateway.go says it.
export function ruleText(r) {
  if (!r.gateway) return '';
  if (r.source === 'tlsroute') return `TLSRoute ${r.namespace}/${r.object}`;
  const rule = r.name.replace(`gw_${r.object}.`, '').split('.')[0];
  if (r.source === 'grpcroute') return `GRPCRoute ${r.namespace}/${r.object} rule ${rule.replace(/^g/, '')}`;
  return `HTTPRoute ${r.namespace}/${r.object} rule ${rule}`;
}

export const routeText = (r) => (r.gateway ? `${ruleText(r)} · ${hostsText(r)} · ${matchesText(r)}` : hostPath(r));

export function hostsText(r) {
  if (!r.gateway) return or(r.host);
  return r.gateway.hostnames?.length ? r.gateway.hostnames.join(', ') : '*';
}

const valueMatch = (v) => `${v.name}${v.regex ? '~' : '='}${v.value}`;

export const matchesText = (r) => (r.source === 'tlsroute' ? 'SNI passthrough' : r.gateway.matches.map((m) => [`${m.pathType} ${m.path}`, m.method || null,
  ...(m.headers || []).map((h) => `header ${valueMatch(h)}`), ...(m.query || []).map((q) => `query ${valueMatch(q)}`)]
  .filter((x) => x).join(' ')).join(' | '));

export function gatewayText(r) {
  const g = r.gateway;
  if (!g) return '–';
  const unresolved = r.source === 'tlsroute' ? ' · no backendRef resolves: refused' : ' · no backendRef resolves: 500';
  return `${g.gateway} listener ${g.listener} on ${g.bind}${g.unresolved ? unresolved : ''}`;
}

const mods = (m) => [...(m.set || []).map((h) => ` set ${h.name}=${h.value}`), ...(m.add || []).map((h) => ` add ${h.name}=${h.value}`),
  ...(m.remove || []).map((n) => ` remove ${n}`)].join('');
const pathMod = (p) => (p ? ` path ${p.type} ${p.value}` : '');

export const conditionText = (c) => `${c.type} ${c.status} · ${c.reason} · ${c.message}`;
// A route of the Gateway API panel, as views.RouteViewText says it.
export const routeViewText = (r) => (r.kind ? `${r.namespace}/${r.name} (${r.kind})` : `${r.namespace}/${r.name}`);
export const hostnamesText = (hs) => (hs?.length ? hs.join(', ') : '*');
export const parentText = (p) => (p.listener ? `${p.gateway} ${p.listener}` : p.gateway);

export function filtersText(r) {
  const f = r.gateway?.filters;
  if (!f) return '–';
  const parts = [];
  if (f.requestHeaders) parts.push(`request headers${mods(f.requestHeaders)}`);
  if (f.responseHeaders) parts.push(`response headers${mods(f.responseHeaders)}`);
  const rd = f.redirect;
  if (rd) {
    parts.push(`redirect${rd.scheme ? ` scheme ${rd.scheme}` : ''}${rd.hostname ? ` host ${rd.hostname}` : ''}` +
      `${rd.port ? ` port ${rd.port}` : ''}${pathMod(rd.path)}${rd.statusCode ? ` ${rd.statusCode}` : ''}`);
  }
  const rw = f.rewrite;
  if (rw) parts.push(`rewrite${rw.hostname ? ` host ${rw.hostname}` : ''}${pathMod(rw.path)}`);
  return parts.length ? parts.join('; ') : '–';
}

export function backendStates(b) {
  const states = [...new Set((b.servers || []).map(displayState))];
  return states.sort();
}

export function matchBackend(f, b) {
  if (f.namespace && b.route.namespace !== f.namespace) return false;
  if (f.state && !backendStates(b).includes(f.state)) return false;
  const q = (f.q || '').trim().toLowerCase();
  return q === '' || backendSearch(b).includes(q);
}

export function namespaces(backends) {
  return [...new Set(backends.map((b) => b.route.namespace))].sort();
}

export function ratio(dynamic, reloads) {
  if (dynamic + reloads === 0) return '–';
  return `${((dynamic * 100) / (dynamic + reloads)).toFixed(1)}%`;
}

const plural = (n, one, many) => (n === 1 ? one : many(n));

export function summarize(s) {
  const sum = {
    routes: s.routes.length, backends: s.backends.length, servers: 0,
    ready: 0, drain: 0, maint: 0, down: 0,
    dynamic: s.updates.dynamic, reloads: s.updates.reload, noop: s.updates.noop,
    ratio: ratio(s.updates.dynamic, s.updates.reload),
    inNamespaces: plural(namespaces(s.backends).length, 'in 1 namespace', (n) => `in ${n} namespaces`),
    rejectedText: plural(s.rejected.length, '1 object rejected', (n) => `${n} objects rejected`),
  };
  for (const b of s.backends) {
    for (const srv of b.servers || []) {
      sum.servers++;
      sum[displayState(srv)]++;
    }
  }
  return sum;
}

// zero reports Go's zero time (0001-01-01), which means "never".
const zero = (iso) => !iso || iso.startsWith('0001-');

export function uptime(iso, now = Date.now()) {
  if (zero(iso)) return '–';
  const d = Math.max(0, Math.floor((now - Date.parse(iso)) / 1000));
  const days = Math.floor(d / 86400), h = Math.floor(d / 3600) % 24, m = Math.floor(d / 60) % 60, sec = d % 60;
  if (days > 0) return `${days}d ${h}h`;
  if (h > 0) return `${h}h ${m}m`;
  if (m > 0) return `${m}m ${sec}s`;
  return `${sec}s`;
}

export function seconds(sec) {
  if (sec < 10) return `${(sec * 1000).toFixed(0)} ms`;
  return `${sec.toFixed(1)} s`;
}

const pad = (n) => String(n).padStart(2, '0');

export function clock(iso) {
  if (zero(iso)) return '00:00:00';
  const t = new Date(iso);
  return `${pad(t.getHours())}:${pad(t.getMinutes())}:${pad(t.getSeconds())}`;
}

export const reasons = (rs) => (rs || []).join(', ');

export function workers(r) {
  const o = r.oldPid || 0, n = r.newPid || 0;
  return o === 0 && n === 0 ? '–' : `${o} → ${n}`;
}

export const reloadText = (r) => `${reasons(r.reasons)} · ${seconds(r.durationSeconds || 0)} · worker ${workers(r)}`;

export function objectText(o) {
  if (!o) return '';
  if (!o.namespace && !o.name) return o.kind || '';
  if (!o.namespace) return `${o.kind} ${o.name}`;
  return `${o.kind} ${o.namespace}/${o.name}`;
}

export function eventSearch(ev) {
  const parts = [ev.type, ev.message || '', ev.reason || '', ev.actor || ''];
  const o = objectText(ev.object);
  if (o) parts.push(o);
  parts.push(...(ev.backends || []));
  return parts.join(' ').toLowerCase();
}

export function matchEvent(f, search, type) {
  if (f.type && type !== f.type) return false;
  const q = (f.q || '').trim().toLowerCase();
  return q === '' || search.includes(q);
}

export const opCount = (n) => (n === 1 ? '1 runtime command' : `${n} runtime commands`);

// opText is views.OpText: the first line of opLines that fits the op.
export function opText(op) {
  const line = opLines.find((l) => (!l.kinds || l.kinds.includes(op.op)) && (!l.when || op[l.when] != null));
  return line ? line.parts.map((p) => opPart(op, p)).join('') : String(op.op);
}

function opPart(op, p) {
  if (!p.field) return p.lit;
  let v = op;
  for (const name of p.field) v = v?.[name];
  if (p.count) return String((v || []).length);
  const s = v == null ? p.zero || '' : String(v);
  // Characters, as Go's %.12s counts them, not UTF-16 units.
  return p.max ? [...s].slice(0, p.max).join('') : s;
}

const or = (s) => s || '–';

export function servicesText(r) {
  const out = (r.services || []).map((s) => `${s.name}:${s.port} (weight ${s.weight})`);
  return out.length ? out.join(', ') : '–';
}

export const workloadText = (r) => (r.workload ? `${r.workload.kind} ${r.workload.name}` : '–');

export function sourceText(r) {
  if (!r.object) return '–';
  if (r.gateway) return ruleText(r);
  return `${r.source === 'route' ? 'Route' : 'Ingress'} ${r.namespace}/${r.object}`;
}

// Which certificate a TLS route's clients get, as views.CertText says it.
export function certText(r) {
  const t = r.tls;
  if (!t) return '–';
  const from = t.secret.startsWith('route:') && t.secret.length > 6
    ? `inline in Route ${t.secret.slice(6)}` : `Secret ${t.secret}`;
  if (!t.version) return `${from} (none valid: the default certificate is served)`;
  return `${from} @${t.version.slice(0, 12)}`;
}

// How a reencrypt route's servers check their pods, as views.UpstreamText says it.
export function upstreamText(r) {
  const u = r.upstream;
  if (!u) return '–';
  let ca = u.ca;
  if (ca.startsWith('secret:')) ca = `ca.crt of Secret ${ca.slice(7)}`;
  else if (ca.startsWith('route:')) ca = `destinationCACertificate of Route ${ca.slice(6)}`;
  else if (ca === 'file:default') ca = '--default-backend-ca-file';
  if (!u.version) return `verify ${u.serverName} against ${ca} (none valid: no server)`;
  return `verify ${u.serverName} against ${ca} @${u.version.slice(0, 12)}`;
}

// What plain HTTP requests for a route get, as views.InsecureText says it.
export function insecureText(r) {
  if (r.kind === 'http') return '–';
  let p = r.insecure;
  if (!p) p = r.kind === 'passthrough' ? 'None' : 'Allow';
  return p === 'Redirect' ? `Redirect ${r.redirectCode || 302}` : p;
}

export const pathText = (r) => (r.gateway ? matchesText(r) : r.path ? `${r.path} (${r.pathType})` : '–');

export const onOff = (b) => (b ? 'on' : 'off');

export { or };

export function lines(content) {
  let n = (content.match(/\n/g) || []).length;
  if (content !== '' && !content.endsWith('\n')) n++;
  return n === 1 ? '1 line' : `${n} lines`;
}
