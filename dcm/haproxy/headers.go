package haproxy

import (
	"bytes"
	"fmt"

	"github.com/dcm-router/dcm/dcm"
)

// HeadersLuaName is the Lua file of the header actions, next to the cfg.
const HeadersLuaName = "dcm_headers.lua"

// HAProxy 2.6 takes a header name in `http-request set-header` literally,
// so a rule per name would reload the first time a Route names a new
// header. Instead the HTTP frontends run one Lua action per direction
// that looks the request's route (txn.be, its HAProxy backend) up in the
// headers map (dcm.MapHeaders) and
// applies the actions it finds (routing.HeaderValue decodes below). Lua's
// Map shares the pattern reference of the map file by its name, so an
// entry added or set on the runtime API is what the next request sees:
// measured with the real binary, no reload. A route without an entry
// pays one map lookup (docs/routes.md has the numbers).
//
// The script is loaded with lua-load, not lua-load-per-thread: a
// per-thread script is read after the cfg, when its relative name no
// longer resolves against the cfg's directory (default-path config), and
// `haproxy -c` does not read it at all. Fetched values are stripped of control characters before they
// become a header: a client certificate's DER is binary.
const headersLua = `-- Written by dcm; every change is rewritten, edits are lost.
local headers = Map.new("` + MapsDir + "/" + string(dcm.MapHeaders) + ".map" + `", Map._str)
local cache, cached = {}, 0

local function unhex(s)
  return (s:gsub("..", function(h) return string.char(tonumber(h, 16)) end))
end

local function decode(v)
  local out = { q = {}, s = {} }
  for act in v:gmatch("[^.]+") do
    local f = {}
    for x in act:gmatch("[^-]+") do f[#f + 1] = x end
    local a = { del = f[1]:sub(2, 2) == "d", name = unhex(f[2]), segs = {} }
    for i = 3, #f do
      local k = f[i]:sub(1, 1)
      local arg, mods = f[i]:match("^.([0-9A-F]*)([lbq]*)$")
      a.segs[#a.segs + 1] = { k = k, arg = unhex(arg or ""), mods = mods or "" }
    end
    local list = out[f[1]:sub(1, 1)]
    if list then list[#list + 1] = a end
  end
  return out
end

local function actions(v)
  local d = cache[v]
  if d == nil then
    if cached >= 256 then cache, cached = {}, 0 end
    d = decode(v)
    cache[v], cached = d, cached + 1
  end
  return d
end

local function value(txn, phase, segs)
  local parts = {}
  for i, s in ipairs(segs) do
    local x = s.arg
    if s.k == "h" then
      if phase == "q" then x = txn.sf:req_hdr(s.arg) else x = txn.sf:res_hdr(s.arg) end
    elseif s.k == "c" then
      x = txn.sf:ssl_c_der()
    end
    if s.k ~= "t" then
      for m in s.mods:gmatch(".") do
        if m == "l" then x = x:lower()
        elseif m == "b" then x = txn.sc:base64(x)
        elseif m == "q" then x = '"' .. x .. '"' end
      end
      x = x:gsub("%c", "")
    end
    parts[i] = x
  end
  return table.concat(parts)
end

local function run(txn, phase)
  local be = txn:get_var("txn.be")
  if be == nil then return end
  local v = headers:lookup(be)
  if v == nil or v == "" then return end
  for _, a in ipairs(actions(v)[phase]) do
    if phase == "q" then
      if a.del then txn.http:req_del_header(a.name) else txn.http:req_set_header(a.name, value(txn, phase, a.segs)) end
    else
      if a.del then txn.http:res_del_header(a.name) else txn.http:res_set_header(a.name, value(txn, phase, a.segs)) end
    end
  end
end

core.register_action("dcm_request_headers", { "http-req" }, function(txn) run(txn, "q") end)
core.register_action("dcm_response_headers", { "http-res" }, function(txn) run(txn, "s") end)
`

// HeadersLua is the script dcm writes as HeadersLuaName.
func HeadersLua() []byte { return []byte(headersLua) }

// renderHeadersGlobal loads the script, in the global section.
func renderHeadersGlobal(w *bytes.Buffer) {
	fmt.Fprintf(w, "    lua-load %s\n", HeadersLuaName)
}

// renderHeaderRules runs the header actions in the HTTP frontends
// (renderRouteRules). The map is looked up in the cfg first, so that a
// route without actions calls no Lua: it shares the map with the script
// by its name. The response's actions run before fe_https's HSTS rule, as
// a backend's http-response rules ran before the frontend's.
func renderHeaderRules(w *bytes.Buffer) {
	cond := " if { var(txn.be),map_str(" + MapFile(dcm.MapHeaders) + ") -m found }\n"
	w.WriteString("    http-request lua.dcm_request_headers" + cond)
	w.WriteString("    http-response lua.dcm_response_headers" + cond)
}
