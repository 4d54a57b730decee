package haproxy

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/dcm-router/dcm/dcm"
)

// AllowlistLuaName is the Lua file of the allowlist fetch, next to the cfg.
const AllowlistLuaName = "dcm_allowlist.lua"

// Client allowlists (dcm.Route.Allowlist). The HTTP frontends have one
// rule for every HTTP route, keyed by the route's HAProxy backend that
// the lookup found (txn.be):
//
//	http-request reject if { var(txn.be),map_str(maps/allowlist.map) -m found } !{ lua.dcm_allowed(txn.be) -m bool }
//
// and every passthrough backend, spares included, the same rule keyed by
// its own name (fe_tls, a TCP frontend, knows the route only when it
// picks the backend by SNI: renderBackend):
//
//	tcp-request content reject if { be_name,map_str(maps/allowlist.map) -m found } !{ lua.dcm_allowed -m bool }
//
// A route without an entry in the allowlist map (dcm.MapAllowlist) pays
// one map lookup and calls no Lua; one with an entry asks the fetch below,
// which reads the same map (Lua's Map shares the map file's pattern
// reference by its name, so an entry added, set or deleted at runtime is
// what the next request sees: measured, no reload). So a list that comes,
// changes or goes is a map entry and never re-renders a backend. Both
// rules close the connection without an answer, as OpenShift's router
// does (http-request reject acts as tcp-request content reject does);
// the HTTP rule is evaluated for every request, the TCP one for the
// connection, and src is the client's address in both (fe_https takes it
// from fe_tls's PROXY header).
//
// It replaces a file per backend (acl … src -f acls/<backend>.acl):
// HAProxy 2.6 keeps pattern references in a list and looks each new one
// up in it, so loading N files is quadratic — `haproxy -c` of 10,000
// backends took 30 s with them and 1.3 s without.
//
// The script parses a list once and caches it by the backend's value
// (bounded in entries, as the header actions' cache is bounded), with
// its addresses in a set and its networks in buckets by their first IPv4
// byte or IPv6 group (those shorter than that in a bucket of their own):
// a client is tested against its bucket's entries, with core.match_addr,
// not against the whole list. A bucket picked wrong could only refuse a
// client, never serve one: match_addr decides. A long
// list's value names its chunks (dcm.MaxAllowlistChunk): the script reads
// them, and on every request checks that the chunks of a cached list are
// still the map's texts (the planner never gives a chunk's key another
// text at runtime, but the script does not count on it). A chunk missing
// means the map changed between two
// lookups: the backend is looked up again, three times at most, then the
// connection is refused (as it is for anything the script cannot read).
// core.match_addr does not compare an IPv4 address with an IPv6 network,
// where HAProxy's ip patterns do for mapped addresses (::ffff:a.b.c.d), so
// the script tries the mapped form too.
const allowlistLua = `-- Written by dcm; every change is rewritten, edits are lost.
local lists = Map.new("` + MapsDir + "/" + string(dcm.MapAllowlist) + ".map" + `", Map._str)
local chunkPrefix = "` + dcm.AllowlistChunkPrefix + `"
local cache, cached = {}, 0

local function first(s, v6)
  if v6 then return tonumber(s:match("^(%x*):") or "", 16) or 0 end
  return tonumber(s:match("^(%d+)%.") or "")
end

local function parse(text, l)
  for s in text:gmatch("[^,]+") do
    local n = core.parse_addr(s)
    if n == nil then return false end
    local v6 = s:find(":", 1, true) ~= nil
    local fam = v6 and l.v6 or l.v4
    local len = tonumber(s:match("/(%d+)$") or "") or (v6 and 128 or 32)
    local k = first(s, v6)
    if k == nil or len < (v6 and 16 or 8) then k = "wide" end
    local b = fam[k]
    if b == nil then b = {}; fam[k] = b end
    b[#b + 1] = n
    if not s:find("/", 1, true) then l.exact[s] = true end
    l.n = l.n + 1
  end
  return true
end

local function resolve(v)
  local l = { v4 = {}, v6 = {}, exact = {}, n = 0, ids = {}, chunks = {} }
  if v:sub(1, 1) ~= "@" then
    if parse(v, l) then return l end
    return nil
  end
  for id in v:sub(2):gmatch("[^,]+") do
    local c = lists:lookup(chunkPrefix .. id)
    if c == nil or not parse(c, l) then return nil end
    l.ids[#l.ids + 1], l.chunks[#l.chunks + 1] = id, c
  end
  return l
end

local function current(l)
  for i, id in ipairs(l.ids) do
    if lists:lookup(chunkPrefix .. id) ~= l.chunks[i] then return false end
  end
  return true
end

-- false: the backend has no list; nil: it cannot be read.
local function list(be)
  for _ = 1, 3 do
    local v = lists:lookup(be)
    if v == nil then return false end
    local l = cache[v]
    if l ~= nil and current(l) then return l end
    l = resolve(v)
    if l ~= nil then
      if cached + l.n > 20000 then cache, cached = {}, 0 end
      cache[v], cached = l, cached + l.n
      return l
    end
  end
  return nil
end

local function any(a, nets)
  if nets == nil then return false end
  for _, n in ipairs(nets) do
    if core.match_addr(a, n) then return true end
  end
  return false
end

local function match(l, s)
  if s == nil then return false end
  if l.exact[s] then return true end
  local a = core.parse_addr(s)
  if a == nil then return false end
  local v6 = s:find(":", 1, true) ~= nil
  local fam = v6 and l.v6 or l.v4
  local k = first(s, v6)
  return (k ~= nil and any(a, fam[k])) or any(a, fam.wide)
end

-- The backend is the one the request is in, or, given a variable's name,
-- the one that variable holds (an HTTP frontend's route).
core.register_fetches("dcm_allowed", function(txn, var)
  local be
  if var == nil then be = txn.f:be_name() else be = txn:get_var(var) end
  if be == nil then return false end
  local l = list(be)
  if l == false then return true end
  if l == nil then return false end
  local src = txn.f:src()
  if match(l, src) then return true end
  if src == nil then return false end
  if src:find(":", 1, true) then
    return next(l.v4) ~= nil and match(l, src:match("^::[fF][fF][fF][fF]:(%d+%.%d+%.%d+%.%d+)$"))
  end
  return next(l.v6) ~= nil and match(l, "::ffff:" .. src)
end)
`

// AllowlistLua is the script dcm writes as AllowlistLuaName.
func AllowlistLua() []byte { return []byte(allowlistLua) }

// renderAllowlistRule is the rule every passthrough backend gets, after
// its servers and before the rate limits: a refused client is not
// counted.
func renderAllowlistRule(w *bytes.Buffer) {
	fmt.Fprintf(w, "    tcp-request content reject if { be_name,map_str(%s) -m found } !{ lua.dcm_allowed -m bool }\n", MapFile(dcm.MapAllowlist))
}

// renderFrontendAllowlistRule is the rule of the HTTP routes, in the HTTP
// frontends (renderRouteRules), before the rate limits.
func renderFrontendAllowlistRule(w *bytes.Buffer) {
	fmt.Fprintf(w, "    http-request reject if { var(txn.be),map_str(%s) -m found } !{ lua.dcm_allowed(txn.be) -m bool }\n", MapFile(dcm.MapAllowlist))
}

// validateAllowlistEntry checks an entry of the allowlist map as the map
// file and add map write it: an HAProxy backend's name and its list or
// its chunks' ids, or a chunk's key and its text.
func validateAllowlistEntry(key, value string) error {
	chunk := dcm.IsAllowlistChunkKey(key)
	if !chunk {
		if err := validateBackendName(key); err != nil {
			return err
		}
	}
	return dcm.ValidateAllowlistValue("allowlist", value, chunk)
}

// legacyACLsDir held a file per backend in dcm before the allowlist map.
const legacyACLsDir = "acls"

// removeLegacyACLs removes the allowlist files an older dcm left in dir:
// no cfg dcm writes reads them (a running HAProxy that did has them in
// memory), and a stale copy of a client list beside the live files only
// misleads whoever reads the work directory. Only *.acl files go, and the
// directory if that empties it.
func removeLegacyACLs(dir string) error {
	acls := filepath.Join(dir, legacyACLsDir)
	entries, err := os.ReadDir(acls)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list old allowlist files: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".acl") {
			continue
		}
		if err := os.Remove(filepath.Join(acls, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove old allowlist file: %w", err)
		}
	}
	// Something else living there is not dcm's to remove: the directory
	// stays then.
	if err := os.Remove(acls); err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTEMPTY) {
		return fmt.Errorf("remove old allowlist directory: %w", err)
	}
	return nil
}
