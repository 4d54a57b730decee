package haproxy

import (
	"bytes"
	"fmt"

	"github.com/dcm-router/dcm/dcm"
)

// RewriteLuaName is the Lua file of the rewrite targets, next to the cfg.
const RewriteLuaName = "dcm_rewrite.lua"

// OpenShift rewrites a route's path with `replace-path ^<path>(.*)$
// <target>\1`: a regex per route. HAProxy 2.6 compiles a regex when it
// parses the cfg (regsub and replace-path take literals, and bytes() no
// variable offset), so a rule per route would reload for each new route
// and each changed target. Instead the HTTP frontends run one Lua action
// that looks the request's route (txn.be, its HAProxy backend) up in the
// rewrite map (dcm.MapRewrite), whose
// value is the prefix to replace and its target (routing.RewriteValue),
// and replaces the path, the query string kept, as replace-path does. As
// for the header actions, Lua's Map shares the map file's pattern
// reference by name: an entry added or set at runtime is what the next
// request sees, no reload; a route without an entry calls no Lua (the cfg looks
// the map up first).
const rewriteLua = `-- Written by dcm; every change is rewritten, edits are lost.
local rewrites = Map.new("` + MapsDir + "/" + string(dcm.MapRewrite) + ".map" + `", Map._str)

core.register_action("dcm_rewrite", { "http-req" }, function(txn)
  local be = txn:get_var("txn.be")
  if be == nil then return end
  local v = rewrites:lookup(be)
  if v == nil then return end
  local sep = v:find("|", 1, true)
  if sep == nil then return end
  local prefix, target = v:sub(1, sep - 1), v:sub(sep + 1)
  local path = txn.sf:path()
  if path == nil or path:sub(1, #prefix) ~= prefix then return end
  local rest = path:sub(#prefix + 1)
  if target == "/" and rest:sub(1, 1) == "/" then rest = rest:sub(2) end
  txn.http:req_set_path(target .. rest)
end)
`

// RewriteLua is the script dcm writes as RewriteLuaName.
func RewriteLua() []byte { return []byte(rewriteLua) }

// renderLuaGlobal loads the scripts, in the global section.
func renderLuaGlobal(w *bytes.Buffer) {
	renderHeadersGlobal(w)
	fmt.Fprintf(w, "    lua-load %s\n", RewriteLuaName)
	fmt.Fprintf(w, "    lua-load %s\n", AllowlistLuaName)
	fmt.Fprintf(w, "    lua-load %s\n", GatewayLuaName)
}

// renderRewriteRule runs the rewrite in the HTTP frontends
// (renderRouteRules), after the forwarded headers, as it ran in the
// backend after them.
func renderRewriteRule(w *bytes.Buffer) {
	w.WriteString("    http-request lua.dcm_rewrite if { var(txn.be),map_str(" + MapFile(dcm.MapRewrite) + ") -m found }\n")
}
