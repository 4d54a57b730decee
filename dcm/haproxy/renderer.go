package haproxy

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/routing"
)

// BackendFile is one file of BackendsDir: a shard of the HAProxy backends,
// those whose name hashes to it (shardOf), sorted by name. Name is the
// shard's, two hex digits.
type BackendFile struct {
	Name string
	Text []byte
}

// Shards is how many files the backends are spread over. One file per
// backend would make a change rewrite the least, but HAProxy 2.6 reads
// many files slowly (10,000 backends' files took haproxy -c 5.6 s against
// 1.6 s for the same text in one file), and one file for all of them is a
// 7 MB rewrite for every change at 10,000 routes of 10 servers (19 MB when
// every backend carried its route's rules): 256 shards keep both small,
// about 40 backends (28 KB) a file at 10,000.
const Shards = 256

// shardOf is the shard of a backend's name: FNV-1a, so every process and
// every version of dcm agrees.
func shardOf(name string) int {
	h := uint32(2166136261)
	for i := 0; i < len(name); i++ {
		h ^= uint32(name[i])
		h *= 16777619
	}
	return int(h % Shards)
}

// shardName names shard i: two hex digits.
func shardName(i int) string { return dcm.HexUint(uint64(i), 2) }

// validShardName reports whether a name is a shard's.
func validShardName(name string) bool {
	return len(name) == 2 && strings.Trim(name, "0123456789abcdef") == ""
}

// BackendFileName is the file of a shard, relative to the work directory.
func BackendFileName(shard string) string { return BackendsDir + "/" + shard + ".cfg" }

// backendFileHeader starts every shard: relative paths in it (maps, CA
// files) resolve against the work directory, the parent of its own, as
// haproxy.cfg's resolve against its directory.
const backendFileHeader = "# Written by dcm; every change is rewritten, edits are lost.\nglobal\n    default-path parent\n"

// Renderer renders like Render and remembers what it rendered, so that a
// change to one backend among thousands costs that backend: states share
// unchanged backends (dcm.State), so a backend whose pointer did not move
// keeps its file; one that moved is rendered again only if what it renders
// from changed; the maps and the crt-list are rendered again only when a
// changed backend's keys or certificate did. The output is byte-identical
// to Render's. A Renderer is not safe for concurrent use.
type Renderer struct {
	settings Settings
	global   []byte
	// last holds the backends last rendered, sorted by name, and files
	// their files, in the same order.
	last  []*dcm.Backend
	files []renderedBackend
	// pool is the pool last rendered and spares its backends, sorted by
	// name.
	pool   []string
	spares []BackendFile
	// shards holds the text of every shard, empty for one with no backend.
	shards [Shards][]byte
	// proxies maps each HAProxy backend name to the backend it carries.
	proxies map[string]string
	// maps holds the map files last rendered and lines their entries.
	maps    map[string][]byte
	lines   mapLines
	crtList []byte
	gwLists map[string][]byte
	// extra are the Gateway binds global was rendered with
	// (dcm.State.GatewayBinds).
	extra []dcm.GatewayBind
}

// renderedBackend is a backend's file: what it was rendered from is the
// backend last rendered, which no one modifies, not a copy (at 10,000
// routes the copies of the map keys alone took 4 MB). Its text is a slice
// of its shard's: the text is held once.
type renderedBackend struct {
	text  []byte
	shard int
}

// routeKey holds what the maps are rendered from, per backend; compared
// for a backend that moved, never kept.
type routeKey struct {
	backend, slot, name, namespace, host, path string
	insecure                                   string // dcm.Route.InsecureAction
	rateLimit                                  string // dcm.Route.RateLimitValue
	http                                       dcm.HTTPOptions
	headers                                    string // routing.HeaderValue
	allowlist                                  string // dcm.Route.Allowlist, joined
	kind                                       dcm.RouteKind
	pathType                                   dcm.PathType
	balance                                    string
	retiring                                   bool
	sticky                                     bool // the cookie maps' entries
	gateway                                    string
}

func keyOf(b *dcm.Backend) routeKey {
	rt := b.Route
	return routeKey{backend: b.Name, slot: b.Slot, name: rt.Name, namespace: rt.Namespace, host: rt.Host, path: rt.Path,
		kind: rt.Kind, pathType: rt.PathType, balance: rt.Balance, retiring: b.Retiring, insecure: routing.InsecureAction(rt),
		rateLimit: rt.RateLimitValue(), http: rt.HTTP, headers: routing.HeaderValue(rt), sticky: rt.Sticky,
		allowlist: strings.Join(rt.Allowlist, ","), gateway: gatewaySignature(rt)}
}

// NewRenderer returns a Renderer with an empty cache.
func NewRenderer(s Settings) *Renderer {
	return &Renderer{settings: s}
}

// Render renders st.
func (r *Renderer) Render(st dcm.State) (Files, error) {
	if r.global == nil || !slices.Equal(st.GatewayBinds, r.extra) {
		s := r.settings
		s.gatewayExtra = st.GatewayBinds
		if err := s.validate(); err != nil {
			return Files{}, err
		}
		var g bytes.Buffer
		renderGlobal(&g, s)
		r.global, r.extra, r.gwLists = g.Bytes(), st.GatewayBinds, nil
	}
	backends := st.Backends
	if !slices.IsSortedFunc(backends, func(a, b *dcm.Backend) int { return strings.Compare(a.Name, b.Name) }) {
		backends = slices.Clone(backends)
		slices.SortStableFunc(backends, func(a, b *dcm.Backend) int { return strings.Compare(a.Name, b.Name) })
	}
	files, ch, err := r.renderBackends(backends)
	if err != nil {
		return Files{}, err
	}
	spares := r.spares
	if r.proxies == nil || !slices.Equal(st.Pool, r.pool) {
		if spares, ch.sparesGone, ch.sparesCame, err = r.renderSpares(st.Pool); err != nil {
			return Files{}, err
		}
	}
	proxies, err := r.carried(ch)
	if err != nil {
		return Files{}, err
	}
	maps, lines := r.maps, r.lines
	if maps == nil || ch.keys {
		var patched bool
		if maps, lines, patched, err = patchMaps(r.lines, r.maps, backends, ch); err != nil {
			return Files{}, err
		}
		if !patched {
			if maps, lines, err = renderMaps(backends); err != nil {
				return Files{}, err
			}
		}
	}
	list := r.crtList
	if r.settings.HTTPSBind != "" && (list == nil || ch.certs) {
		if list, err = renderCrtList(backends, r.settings.HTTP2); err != nil {
			return Files{}, err
		}
	}
	gwLists := r.gwLists
	if gwLists == nil || ch.certs {
		if gwLists, err = renderGatewayCrtLists(r.settings.gatewayBindsWith(r.extra, true), backends); err != nil {
			return Files{}, err
		}
	}
	shards := r.shardTexts(backends, files, spares, ch)
	r.last, r.files, r.pool, r.spares, r.proxies, r.maps, r.lines, r.crtList, r.shards = backends, files, st.Pool, spares, proxies, maps, lines, list, shards
	r.gwLists = gwLists
	out := Files{Config: r.global, Backends: shardFiles(&shards), Maps: maps, GatewayLists: gwLists}
	if r.settings.HTTPSBind != "" {
		out.CrtList = list
	}
	return out, nil
}

// changes is what a rendering found changed since the last: the backends
// whose pointer moved, as they were (gone) and as they are (came), whether
// one of their map keys moved, whether one of them serves a certificate,
// and the shards whose text changed (a backend that moved but renders as
// it did leaves its shard as it is).
type changes struct {
	gone, came  []*dcm.Backend
	keys, certs bool
	shards      [Shards]bool
	// sparesGone and sparesCame are the free spares that left the pool and
	// joined it.
	sparesGone, sparesCame []string
}

// renderBackends renders the file of every backend, reusing the last
// rendering of those that did not change.
func (r *Renderer) renderBackends(backends []*dcm.Backend) ([]renderedBackend, changes, error) {
	var ch changes
	if r.proxies == nil {
		ch.keys, ch.certs = true, true // nothing rendered yet
	}
	files := make([]renderedBackend, len(backends))
	certs := func(b *dcm.Backend) bool { return b.Route.TLS != nil }
	i := 0
	for k, b := range backends {
		if k > 0 && backends[k-1].Name == b.Name {
			return nil, ch, fmt.Errorf("backend %q appears twice", b.Name)
		}
		for i < len(r.last) && r.last[i].Name < b.Name {
			ch.gone, ch.keys = append(ch.gone, r.last[i]), true
			ch.certs = ch.certs || certs(r.last[i])
			ch.shards[r.files[i].shard] = true
			i++
		}
		if i < len(r.last) && r.last[i] == b {
			files[k] = r.files[i]
			i++
			continue
		}
		var prev *dcm.Backend
		var old renderedBackend
		if i < len(r.last) && r.last[i].Name == b.Name {
			prev, old = r.last[i], r.files[i]
			ch.gone = append(ch.gone, r.last[i])
			ch.certs = ch.certs || certs(r.last[i])
			i++
		}
		rb, err := r.renderBackend(b, prev, old)
		if err != nil {
			return nil, ch, err
		}
		files[k] = rb
		ch.came = append(ch.came, b)
		ch.keys = ch.keys || prev == nil || keyOf(prev) != keyOf(b)
		ch.certs = ch.certs || certs(b)
		if prev == nil || !sameBytes(rb.text, old.text) {
			ch.shards[rb.shard] = true
		}
	}
	for ; i < len(r.last); i++ {
		ch.gone, ch.keys = append(ch.gone, r.last[i]), true
		ch.certs = ch.certs || certs(r.last[i])
		ch.shards[r.files[i].shard] = true
	}
	return files, ch, nil
}

// sameBytes reports whether a and b are the same bytes in memory.
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// renderBackend renders b's file, or keeps old's text when b renders as
// prev, which old was rendered from, did.
func (r *Renderer) renderBackend(b, prev *dcm.Backend, old renderedBackend) (renderedBackend, error) {
	if prev != nil && sameSection(prev, b) {
		return old, nil
	}
	var w bytes.Buffer
	if err := renderBackend(&w, *b, r.settings.CookieSecret, r.settings.HTTP2); err != nil {
		return renderedBackend{}, err
	}
	return renderedBackend{text: w.Bytes(), shard: shardOf(b.Name)}, nil
}

// sameSection reports whether two backends of one name render the same
// backend section: what renderBackend reads of them is the same.
func sameSection(a, b *dcm.Backend) bool {
	var at, bt [2]int64
	at[0], at[1] = a.Route.TCPTimeouts()
	bt[0], bt[1] = b.Route.TCPTimeouts()
	return a.Route.Balance == b.Route.Balance && a.Route.Sticky == b.Route.Sticky && at == bt && a.Slot == b.Slot &&
		slices.EqualFunc(a.Servers, b.Servers, sameRendering)
}

// renderSpares gives the free spares' files, sorted by name, and which
// spares left the pool and joined it. A spare's file depends on its name
// alone, so a kept spare keeps its file: a route that takes one spare
// among a thousand renders one file, not a thousand.
func (r *Renderer) renderSpares(pool []string) (out []BackendFile, gone, came []string, err error) {
	names := slices.Clone(pool)
	slices.Sort(names)
	out = make([]BackendFile, 0, len(names))
	old := r.spares
	for i, name := range names {
		if i > 0 && names[i-1] == name {
			return nil, nil, nil, fmt.Errorf("spare backend %q: in the pool twice", name)
		}
		for len(old) > 0 && old[0].Name < name {
			gone = append(gone, old[0].Name)
			old = old[1:]
		}
		if len(old) > 0 && old[0].Name == name {
			out = append(out, old[0])
			old = old[1:]
			continue
		}
		f, err := r.renderSpare(name)
		if err != nil {
			return nil, nil, nil, err
		}
		out = append(out, f)
		came = append(came, name)
	}
	for _, f := range old {
		gone = append(gone, f.Name)
	}
	return out, gone, came, nil
}

// renderSpare renders one free spare's file.
func (r *Renderer) renderSpare(name string) (BackendFile, error) {
	if _, ok := routing.SpareKind(name); !ok {
		return BackendFile{}, fmt.Errorf("spare backend %q: not a pool or route backend name", name)
	}
	spare := dcm.Backend{Name: name}
	if k, _, _ := routing.ParsePoolBackend(name); k == routing.PoolSticky {
		spare.Route.Sticky = true // a cookie and no key: the route that takes it sets one
	}
	var w bytes.Buffer
	if err := renderBackend(&w, spare, r.settings.CookieSecret, r.settings.HTTP2); err != nil {
		return BackendFile{}, err
	}
	return BackendFile{Name: name, Text: w.Bytes()}, nil
}

// carried maps each HAProxy backend to the backend it carries, refusing a
// state where two share one. It follows what moved: the backends that
// changed, and the spares when the pool did. The changes are checked in an
// overlay first, so a refused rendering leaves the Renderer's map as it
// was without copying it.
func (r *Renderer) carried(ch changes) (map[string]string, error) {
	proxies := r.proxies
	if proxies == nil {
		proxies = map[string]string{}
	}
	if len(ch.gone)+len(ch.came)+len(ch.sparesGone)+len(ch.sparesCame) == 0 {
		return proxies, nil
	}
	overlay := map[string]string{} // "": the entry goes
	get := func(proxy string) (string, bool) {
		if name, ok := overlay[proxy]; ok {
			return name, name != ""
		}
		name, ok := proxies[proxy]
		return name, ok
	}
	for _, b := range ch.gone {
		if name, _ := get(b.ProxyName()); name == b.Name {
			overlay[b.ProxyName()] = ""
		}
	}
	for _, s := range ch.sparesGone {
		if name, _ := get(s); name == s {
			overlay[s] = ""
		}
	}
	for _, b := range ch.came {
		if other, dup := get(b.ProxyName()); dup && other != b.Name {
			return nil, fmt.Errorf("HAProxy backend %q carries two backends (%s, %s)", b.ProxyName(), other, b.Name)
		}
		overlay[b.ProxyName()] = b.Name
	}
	for _, s := range ch.sparesCame {
		if other, dup := get(s); dup {
			return nil, fmt.Errorf("HAProxy backend %q carries two backends (%s, a free spare)", s, other)
		}
		overlay[s] = s
	}
	for proxy, name := range overlay {
		if name == "" {
			delete(proxies, proxy)
		} else {
			proxies[proxy] = name
		}
	}
	return proxies, nil
}

// shardTexts assembles the shards again whose text changed: those of the
// backends rendered anew, come or gone, and of the free spares that came
// and went. The backends' texts then become slices of their shard's, so
// that a shard's text is held once.
func (r *Renderer) shardTexts(backends []*dcm.Backend, files []renderedBackend, spares []BackendFile, ch changes) [Shards][]byte {
	shards := r.shards
	dirty := ch.shards
	all := r.proxies == nil // nothing rendered before
	for _, s := range append(slices.Clone(ch.sparesGone), ch.sparesCame...) {
		dirty[shardOf(s)] = true
	}
	var texts [Shards][][]byte // the backends of each dirty shard, in name order
	for k := range backends {
		if i := files[k].shard; all || dirty[i] {
			texts[i] = append(texts[i], files[k].text)
		}
	}
	for _, s := range spares {
		if i := shardOf(s.Name); all || dirty[i] {
			texts[i] = append(texts[i], s.Text) // after the shard's backends, as a fresh rendering puts them
		}
	}
	for i := range shards {
		if !all && !dirty[i] {
			continue
		}
		shards[i] = joinShard(texts[i])
	}
	var at [Shards]int // where the next backend's text starts in its shard
	for k := range backends {
		i := files[k].shard
		if !all && !dirty[i] {
			continue
		}
		if at[i] == 0 {
			at[i] = len(backendFileHeader)
		}
		n := len(files[k].text)
		files[k].text = shards[i][at[i] : at[i]+n : at[i]+n]
		at[i] += n
	}
	return shards
}

// joinShard is a shard's file: the header, then its backends.
func joinShard(texts [][]byte) []byte {
	if len(texts) == 0 {
		return nil
	}
	n := len(backendFileHeader)
	for _, t := range texts {
		n += len(t)
	}
	out := make([]byte, 0, n)
	out = append(out, backendFileHeader...)
	for _, t := range texts {
		out = append(out, t...)
	}
	return out
}

// shardFiles lists the shards that hold a backend.
func shardFiles(shards *[Shards][]byte) []BackendFile {
	out := make([]BackendFile, 0, Shards)
	for i, t := range shards {
		if len(t) > 0 {
			out = append(out, BackendFile{Name: shardName(i), Text: t})
		}
	}
	return out
}

// Share makes the Renderer hold st's backends in place of the ones it last
// rendered that render exactly as they do (see rendersSame). The engine
// replaces a backend whenever HAProxy reports a new figure of a server
// (health, sessions), and nothing is rendered for that: without Share the
// Renderer would keep the replaced backend alive until the backend next
// changes, which at 10,000 routes is a second copy of every backend after
// the first read-back. Nothing is rendered, and the files are as they were.
func (r *Renderer) Share(st dcm.State) {
	r.last = shareBackends(r.last, st.Backends)
}

// shareBackends returns held with each backend replaced by the one of
// the same name in st when both render the same; held itself when none
// is, a copy otherwise (held may be a state's, which no one modifies).
// Both are sorted by name; st unsorted shares nothing.
func shareBackends(held, st []*dcm.Backend) []*dcm.Backend {
	byName := func(a, b *dcm.Backend) int { return strings.Compare(a.Name, b.Name) }
	if !slices.IsSortedFunc(st, byName) {
		return held
	}
	out := held
	share := func(i int, b *dcm.Backend) {
		if held[i] != b && rendersSame(held[i], b) {
			if &out[0] == &held[0] {
				out = slices.Clone(held)
			}
			out[i] = b
		}
	}
	if len(st) < len(held)/16 {
		// A few backends (what a chunk of the periodic read-back
		// changed): looked up rather than found by a walk of all.
		for _, b := range st {
			if i, ok := slices.BinarySearchFunc(held, b, byName); ok {
				share(i, b)
			}
		}
		return out
	}
	for i, j := 0, 0; i < len(held) && j < len(st); {
		if held[i] == st[j] {
			i++
			j++
			continue
		}
		switch c := strings.Compare(held[i].Name, st[j].Name); {
		case c < 0:
			i++
		case c > 0:
			j++
		default:
			share(i, st[j])
			i++
			j++
		}
	}
	return out
}

// rendersSame reports whether two backends give the same files: the same
// backend section, map entries, crt-list lines and PEM files. They may
// differ only in what HAProxy reports (health, load) and dcm keeps beside
// it (origin, pod, service).
func rendersSame(a, b *dcm.Backend) bool {
	return a.Name == b.Name && a.Kind == b.Kind && a.Slot == b.Slot && a.Retiring == b.Retiring && a.Slots == b.Slots &&
		a.Route.Equal(b.Route) && slices.EqualFunc(a.Servers, b.Servers, sameRendering)
}
