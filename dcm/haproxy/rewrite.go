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
// and each changed target. Instead every HTTP backend runs one Lua action
// that looks its own name up in the rewrite map (dcm.MapRewrite), whose
// value is the prefix to replace and its target (routing.RewriteValue),
// and replaces the path, the query string kept, as replace-path does. As
// for the header actions, Lua's Map shares the map file's pattern
// reference by name: an entry added or set at runtime is what the next
// request sees, no reload; a backend without an entry calls no Lua (the cfg looks
// the map up first).
const rewriteLua = `-- Written by dcm; every change is rewritten, edits are lost.
local rewrites = Map.new("` + MapsDir + "/" + string(dcm.MapRewrite) + ".map" + `", Map._str)

core.register_action("dcm_rewrite", { "http-req" }, function(txn)
  local v = rewrites:lookup(txn.sf:be_name())
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
}

// renderHTTPBackendRules are the rules every HTTP backend ends with: the
// route's timeouts, its rewrite, its header actions, each from its map.
func renderHTTPBackendRules(w *bytes.Buffer) {
	renderRouteTimeouts(w)
	renderRewriteRule(w)
	renderHeaderRules(w)
}

// renderRewriteRule runs the rewrite in an HTTP backend (a spare's too).
func renderRewriteRule(w *bytes.Buffer) {
	w.WriteString("    http-request lua.dcm_rewrite if { be_name,map_str(" + MapFile(dcm.MapRewrite) + ") -m found }\n")
}
