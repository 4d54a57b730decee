package haproxy

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/routing"
)

// Gateway API listeners are served by frontends of their own, bound
// ahead of time on every Gateway address and port (Settings.Gateway), so
// that a new Gateway, listener or route needs no reload: fe_gw_http,
// fe_gw_tls on the HTTPS ports (TLSRoutes by SNI, gateway_tls.go) and,
// behind it, fe_gw_https (TLS ends on its sockets, one per bind, each with
// its own crt-list of its listeners' certificates). They read the Gateway
// maps only, and the
// other frontends never do, so a Gateway bind never serves an Ingress or
// a Route and the other binds never serve a Gateway route.
//
// The Gateway API's request matching (hosts with wildcards at any depth,
// path, method, header and query matches, precedence across routes) and
// its filters are more than map lookups in the cfg can express, and
// HAProxy 2.6 takes header names in set-header literally: a Lua action
// (gatewayLua) walks the candidates the gateway map lists for the bind
// and host (dcm/routing orders them) and checks each against
// its rule in the gateway_rule map. It sets txn.be, the backend, and the
// request's filters, or says 404 (no match), 500 (a rule whose backends
// do not resolve) or where to redirect; the cfg answers those. Lua's Map
// shares the pattern reference of the map file, so a runtime `add map`
// is what the next request sees.

// GatewayLuaName is the Lua file of the Gateway routing, next to the cfg.
const GatewayLuaName = "dcm_gateway.lua"

const gatewayLua = `-- Written by dcm; every change is rewritten, edits are lost.
local candidates = Map.new("` + MapsDir + "/" + string(dcm.MapGateway) + ".map" + `", Map._str)
local rules = Map.new("` + MapsDir + "/" + string(dcm.MapGatewayRule) + ".map" + `", Map._str)
local cache, cached = {}, 0

local function unhex(s)
  return (s:gsub("..", function(h) return string.char(tonumber(h, 16)) end))
end

-- regex compiles a whole-value match; nil (never matches) when it does
-- not compile. Regex.new answers a status and the regex.
local function regex(s)
  local ok, status, re = pcall(Regex.new, "^(?:" .. s .. ")$", true)
  if ok and status then return re end
  return nil
end

local function fields(sec)
  local f = {}
  for x in sec:gmatch("[^-]+") do f[#f + 1] = { t = x:sub(1, 1), v = unhex(x:sub(2)) } end
  return f
end

local function pair(f, i)
  local e = { name = f[i].v, value = f[i + 1] and f[i + 1].v or "" }
  if f[i + 1] and f[i + 1].t == "g" then e.regex, e.re = true, regex(e.value) end
  return e
end

local function decode(v)
  local r = { m = {} }
  for sec in v:gmatch("[^.]+") do
    local tag, f = sec:sub(1, 1), fields(sec:sub(2))
    if tag == "u" then
      r.u = f[1] and f[1].v or "500"
    elseif tag == "t" then
      r.t = true
    elseif tag == "k" then
      r.k = f[1] and f[1].v or ""
    elseif tag == "l" then
      r.l = f[1] and f[1].v or ""
    elseif tag == "m" then
      local m = { kind = f[1].t, path = f[1].v, h = {}, q = {}, class = 2 }
      m.plen = #m.path
      if m.kind == "p" then
        m.path = m.path:gsub("/+$", "")
        m.plen = #m.path
        if m.path == "" then m.path = "/" end
      elseif m.kind == "r" then
        m.re, m.class = regex(m.path), 1
      else
        m.class = 0
      end
      local i = 2
      while i <= #f do
        if f[i].t == "v" then
          m.method, i = f[i].v, i + 1
        else
          local list = m.q
          if f[i].t == "h" then list = m.h end
          list[#list + 1], i = pair(f, i), i + 2
        end
      end
      r.m[#r.m + 1] = m
    elseif tag == "a" or tag == "b" then
      local mods, i = { set = {}, add = {}, del = {} }, 1
      while i <= #f do
        if f[i].t == "d" then
          mods.del[#mods.del + 1], i = f[i].v, i + 1
        else
          local list = mods.set
          if f[i].t == "a" then list = mods.add end
          list[#list + 1], i = pair(f, i), i + 2
        end
      end
      r[tag] = mods
    elseif tag == "r" or tag == "w" then
      local o = {}
      for _, x in ipairs(f) do o[x.t] = x.v end
      r[tag] = o
    end
  end
  return r
end

local function rule(v)
  local d = cache[v]
  if d == nil then
    if cached >= 16384 then cache, cached = {}, 0 end
    d = decode(v)
    cache[v], cached = d, cached + 1
  end
  return d
end

local function unescape(s)
  return (s:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end))
end

local function query(req)
  if req.params == nil then
    req.params = {}
    for kv in (req.qs or ""):gmatch("[^&]+") do
      local k, v = kv:match("^([^=]*)=?(.*)$")
      k = unescape(k)
      if req.params[k] == nil then req.params[k] = unescape(v) end
    end
  end
  return req.params
end

local function value_ok(e, v)
  if v == nil then return false end
  if e.regex then return e.re ~= nil and e.re:exec(v) end
  return v == e.value
end

local function matches(req, m)
  local p = req.path
  if m.kind == "e" then
    if p ~= m.path then return false end
  elseif m.kind == "p" then
    if m.path ~= "/" and p ~= m.path and p:sub(1, #m.path + 1) ~= m.path .. "/" then return false end
  elseif not (m.re and m.re:exec(p)) then
    return false
  end
  if m.method and m.method ~= req.method then return false end
  if #m.h > 0 and req.headers == nil then req.headers = req.txn.http:req_get_headers() end
  for _, e in ipairs(m.h) do
    local vals, ok = req.headers[e.name:lower()], false
    if vals then
      for _, v in pairs(vals) do
        if value_ok(e, v) then ok = true break end
      end
    end
    if not ok then return false end
  end
  for _, e in ipairs(m.q) do
    if not value_ok(e, query(req)[e.name]) then return false end
  end
  return true
end

local function replace_prefix(path, prefix, repl)
  local p = prefix
  if p == "/" then p = "" end
  local rest = path:sub(#p + 1)
  if repl:sub(-1) == "/" and rest:sub(1, 1) == "/" then rest = rest:sub(2) end
  local out = repl .. rest
  if out == "" then out = "/" end
  return out
end

local function headers(txn, mods, response)
  if mods == nil then return end
  local h = txn.http
  for _, n in ipairs(mods.del) do
    if response then h:res_del_header(n) else h:req_del_header(n) end
  end
  for _, e in ipairs(mods.set) do
    if response then h:res_set_header(e.name, e.value) else h:req_set_header(e.name, e.value) end
  end
  for _, e in ipairs(mods.add) do
    if response then h:res_add_header(e.name, e.value) else h:req_add_header(e.name, e.value) end
  end
end

local function redirect(txn, req, d, m)
  local scheme = d.s or req.scheme
  local port = tonumber(d.p or "")
  if port == nil then
    if d.s then
      port = (scheme == "https") and 443 or 80
    else
      port = tonumber(txn.sf:dst_port())
    end
  end
  local host = d.h or req.host
  if not ((scheme == "http" and port == 80) or (scheme == "https" and port == 443)) then
    host = host .. ":" .. port
  end
  local path = req.path
  if d.f then path = d.f elseif d.x then path = replace_prefix(req.path, m.path, d.x) end
  if req.qs and req.qs ~= "" then path = path .. "?" .. req.qs end
  txn:set_var("txn.gw_location", scheme .. "://" .. host .. path)
  txn:set_var("txn.gw_code", d.c or "302")
end

local function serve(txn, req, be, r, m)
  if r.u then
    txn:set_var("txn.gw_status", r.u)
    return
  end
  if r.r then
    redirect(txn, req, r.r, m)
    return
  end
  txn:set_var("txn.be", be)
  headers(txn, r.a, false)
  local w = r.w
  if w then
    if w.h then txn.http:req_set_header("host", w.h) end
    if w.f then
      txn.http:req_set_path(w.f)
    elseif w.x then
      txn.http:req_set_path(replace_prefix(req.path, m.path, w.x))
    end
  end
end

-- levels are the keys a host is looked up under: itself, its wildcards
-- from the longest, any host.
local function levels(host)
  local out = { host }
  local i = host:find(".", 1, true)
  while i do
    out[#out + 1] = "*" .. host:sub(i)
    i = host:find(".", i + 1, true)
  end
  if host ~= "" then out[#out + 1] = "" end
  return out
end

-- better says whether candidate a goes before b: the Gateway API's match
-- precedence (exact path, regular expression, longest prefix, method,
-- most headers, most query parameters), then the more specific hostname,
-- then the rule's rank. Within one hostname the gateway map lists them in
-- this order already (dcm/routing's gatewayEntries).
local function better(a, b)
  local ma, mb = a.m, b.m
  if ma.class ~= mb.class then return ma.class < mb.class end
  if ma.plen ~= mb.plen then return ma.plen > mb.plen end
  if (ma.method ~= nil) ~= (mb.method ~= nil) then return ma.method ~= nil end
  if #ma.h ~= #mb.h then return #ma.h > #mb.h end
  if #ma.q ~= #mb.q then return #ma.q > #mb.q end
  if a.level ~= b.level then return a.level < b.level end
  if a.r.k ~= b.r.k then return (a.r.k or "") < (b.r.k or "") end
  if a.idx ~= b.idx then return a.idx < b.idx end
  return a.be < b.be
end

-- each calls f with every candidate of one hostname's list, in order,
-- and its decoded rule, until f answers true.
local function each(bind, level, f)
  local key, n = bind .. "/" .. level, 0
  while key do
    local v = candidates:lookup(key)
    if v == nil or v == "" then return end
    key = nil
    for item in v:gmatch("[^,]+") do
      if item == "~" then
        n = n + 1
        key = bind .. "/" .. level .. "~" .. n
      else
        local be, idx = item:match("^(.+)/(%d+)$")
        local rv = be and rules:lookup(be)
        if rv and rv ~= "" and f(be, tonumber(idx), rule(rv)) then return end
      end
    end
  end
end

-- listener is the index in levels of the most specific listener hostname
-- of the bind that takes the host, among the listeners of the routes
-- whose hostnames take it: a route's hostnames are within its listener's,
-- so the list of level i holds listeners of level i or less specific, and
-- the walk stops once no list left can hold a more specific one.
local function listener(bind, levels, at, tls)
  local best = #levels
  for i, level in ipairs(levels) do
    if i >= best then break end
    each(bind, level, function(_, _, r)
      if (r.t or false) ~= tls then return false end
      local j = at[r.l or ""]
      if j and j < best then best = j end
      return best <= i
    end)
  end
  return best
end

-- first is the first candidate of one hostname's list whose match
-- matches the request, of the listener whose hostname is lh.
local function first(req, bind, level, lh)
  local out
  each(bind, level, function(be, idx, r)
    if (r.l or "") ~= lh then return false end
    local m = r.m[idx + 1]
    if m and matches(req, m) then
      out = { be = be, idx = idx, r = r, m = m }
      return true
    end
    return false
  end)
  return out
end

-- route finds the request's rule among every route whose hostnames take
-- its host (the host, its wildcards, any host) and whose listener is the
-- most specific of the bind's listeners that take it (the Gateway API's
-- listener isolation): the best of each list's first match.
local function route(txn)
  local host = (txn.sf:req_hdr("host") or ""):lower()
  if host:sub(1, 1) ~= "[" then host = host:gsub(":%d*$", "") end
  if host:sub(-1) == "." then host = host:sub(1, -2) end
  local bind = txn.sf:dst() .. ":" .. txn.sf:dst_port()
  local req = { txn = txn, host = host, path = txn.sf:path() or "/", method = txn.sf:method(),
    qs = txn.sf:query(), scheme = txn:get_var("txn.gw_scheme") or "http" }
  local lv, at = levels(host), {}
  for i, level in ipairs(lv) do at[level] = i end
  local lh = lv[listener(bind, lv, at, false)]
  local best
  for i, level in ipairs(lv) do
    local c = first(req, bind, level, lh)
    if c then
      c.level = i
      if best == nil or better(c, best) then best = c end
    end
  end
  if best then return serve(txn, req, best.be, best.r, best.m) end
  txn:set_var("txn.gw_status", "404")
end

-- tls picks the backend of a TLS connection on a Gateway bind by the
-- ClientHello's server name, before any TLS ends: the first passthrough
-- route (a TLSRoute's, rank order) of the most specific listener whose
-- hostname takes it, at the most specific of its lists. An unresolved
-- one, or none on a bind that serves passthrough routes, refuses the
-- connection; on another bind the connection goes on to TLS termination.
local function tls(txn)
  local sni = (txn.sf:req_ssl_sni() or ""):lower()
  if sni:sub(-1) == "." then sni = sni:sub(1, -2) end
  local bind = txn.sf:dst() .. ":" .. txn.sf:dst_port()
  local lv, at = levels(sni), {}
  for i, level in ipairs(lv) do at[level] = i end
  local lh = lv[listener(bind, lv, at, true)]
  for _, level in ipairs(lv) do
    local found
    each(bind, level, function(be, _, r)
      if r.t and (r.l or "") == lh then found = { be = be, r = r } end
      return found ~= nil
    end)
    if found then
      if found.r.u then return txn:set_var("txn.gw_reject", "1") end
      return txn:set_var("txn.be", found.be)
    end
  end
  if candidates:lookup(bind) == "` + routing.GatewayPassthroughMark + `" then txn:set_var("txn.gw_reject", "1") end
end

core.register_action("dcm_gateway", { "http-req" }, route)
core.register_action("dcm_gateway_tls", { "tcp-req" }, tls)
core.register_action("dcm_gateway_response", { "http-res" }, function(txn)
  local be = txn:get_var("txn.be")
  if be == nil then return end
  local v = rules:lookup(be)
  if v == nil or v == "" then return end
  headers(txn, rule(v).b, true)
end)
`

// GatewayLua is the script dcm writes as GatewayLuaName.
func GatewayLua() []byte { return []byte(gatewayLua) }

// gatewayServed reports whether HAProxy binds Gateway listeners.
func gatewayServed(g dcm.GatewayBinds) bool {
	return len(g.Addresses) > 0 && len(g.HTTPPorts)+len(g.HTTPSPorts) > 0
}

// gatewaySignature is what of a route the Gateway maps are rendered from.
func gatewaySignature(r dcm.Route) string {
	g := r.Gateway
	if g == nil {
		return ""
	}
	return routing.GatewayRuleValue(r) + "|" + g.Bind + "|" + strings.Join(g.Hostnames, ",") + "|" + g.Rank
}

// GatewayBindAddrs lists the binds of one scheme: every address on every
// port, "ip:port", as routes name them (dcm.GatewayRoute.Bind).
func GatewayBindAddrs(g dcm.GatewayBinds, https bool) []string {
	if g.Spares > 0 {
		return nil // the state's binds say which addresses are bound
	}
	ports := g.HTTPPorts
	if https {
		ports = g.HTTPSPorts
	}
	var out []string
	for _, a := range g.Addresses {
		for _, p := range ports {
			out = append(out, a+":"+strconv.Itoa(p))
		}
	}
	return out
}

// validateGateway checks the Gateway binds that reach the cfg.
func validateGatewayBinds(s Settings) error {
	for _, https := range []bool{false, true} {
		for _, b := range s.gatewayBinds(https) {
			if err := dcm.ValidateGatewayBind("gateway bind", b); err != nil {
				return fmt.Errorf("gateway bind %q: want an IPv4 address and a port", b)
			}
		}
	}
	return nil
}

// renderGatewayFrontends writes fe_gw_tls, fe_gw_http and fe_gw_https.
func renderGatewayFrontends(w *bytes.Buffer, s Settings) {
	if !gatewayServed(s.Gateway) {
		return
	}
	renderGatewayTLS(w, s)
	for _, https := range []bool{false, true} {
		binds := s.gatewayBinds(https)
		if len(binds) == 0 {
			continue
		}
		scheme := "http"
		if https {
			scheme = "https"
		}
		fmt.Fprintf(w, "\nfrontend fe_gw_%s\n", scheme)
		for _, b := range binds {
			if https {
				// fe_gw_tls owns the address and hands it the
				// connections no passthrough route takes.
				fmt.Fprintf(w, "    bind unix@%s accept-proxy ssl crt %s crt-list %s alpn http/1.1\n", s.gatewaySocket(b), GatewayCertFile(b, ""), GatewayCrtList(b))
			} else {
				fmt.Fprintf(w, "    bind %s\n", b)
			}
		}
		renderLogFrontend(w, s, false)
		renderHygiene(w)
		fmt.Fprintf(w, "    http-request set-var(txn.gw_scheme) str(%s)\n", scheme)
		renderForwarded(w, s.Forwarded, https)
		w.WriteString("    http-request lua.dcm_gateway\n")
		w.WriteString("    http-request return status 500 default-errorfiles if { var(txn.gw_status) -m str 500 }\n")
		w.WriteString("    http-request return status 503 default-errorfiles if { var(txn.gw_status) -m str 503 }\n")
		w.WriteString("    http-request return status 404 default-errorfiles if { var(txn.gw_status) -m str 404 }\n")
		for _, code := range dcm.RedirectCodes {
			fmt.Fprintf(w, "    http-request redirect location %%[var(txn.gw_location)] code %d if { var(txn.gw_code) -m str %d }\n", code, code)
		}
		// The maps in the cfg too, so that the runtime API knows them
		// whatever Lua does: the second rule never runs (no code is 0).
		fmt.Fprintf(w, "    http-response lua.dcm_gateway_response if { var(txn.be),map_str(%s) -m found }\n", MapFile(dcm.MapGatewayRule))
		fmt.Fprintf(w, "    http-request set-var(txn.gw_any) var(txn.gw_scheme),map_str(%s) if { var(txn.gw_code) -m str 0 }\n", MapFile(dcm.MapGateway))
		w.WriteString("    use_backend %[var(txn.be)] if { var(txn.be) -m found }\n")
		fmt.Fprintf(w, "    default_backend %s\n", DefaultBackend)
	}
}
