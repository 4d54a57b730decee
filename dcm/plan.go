package dcm

import (
	"errors"
	"strconv"
)

// Mode is the strategy dcm uses to bring HAProxy in step (DESIGN §6).
type Mode string

const (
	// ModeDynamic adds and deletes servers at runtime and never reloads for endpoints.
	ModeDynamic Mode = "dynamic"
	// ModeSlots uses only pre-allocated server slots and reloads when they run out.
	ModeSlots Mode = "slots"
	// ModeReload rewrites the configuration and reloads on every change.
	ModeReload Mode = "reload"
)

// ParseMode checks a mode name.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeDynamic, ModeSlots, ModeReload:
		return m, nil
	}
	return "", errors.New("unknown mode " + strconv.Quote(s) + ": want dynamic, slots or reload")
}

// Caps says what the running HAProxy and the chosen mode allow the planner to do.
type Caps struct {
	Mode Mode `json:"mode"`
	// Slots is the number of free slots a backend gets on top of its endpoints
	// whenever the configuration is rendered (slots mode).
	Slots int `json:"slots,omitempty"`
	// AddServer is true when HAProxy supports add server / del server.
	AddServer bool `json:"addServer"`
	// Pool is the number of spare backends per route kind whenever the
	// configuration is rendered (dynamic mode with AddServer only): new
	// routes take one instead of reloading.
	Pool int `json:"pool,omitempty"`
	// StickyPool is the number of sticky spares (be_sticky:_pool:<n>,
	// rendered with a dynamic cookie and no key) on top of Pool: a new
	// sticky route takes one and gets its key at runtime; without them it
	// reloads.
	StickyPool int `json:"stickyPool,omitempty"`
	// GatewayPool is the number of HTTP spares on top of Pool when
	// Gateways are served: an HTTPRoute takes a backend per rule and
	// listener, so one apply of a few routes takes dozens of spares at
	// once, more than the floor an Ingress cluster needs.
	GatewayPool int `json:"gatewayPool,omitempty"`
	// Gateway is what HAProxy binds for Gateway listeners whatever the
	// state (the flags'): a route on another bind reloads once
	// (ReasonGatewayListenerPort, State.GatewayBinds).
	Gateway GatewayBinds `json:"gateway,omitzero"`
	// RuntimeCerts is true when edge certificates are added, rotated and
	// removed over the admin socket (dynamic mode); otherwise a changed
	// certificate reloads.
	RuntimeCerts bool `json:"runtimeCerts,omitempty"`
}

// Pooled reports whether routes come and go at runtime through spare backends.
func (c Caps) Pooled() bool { return c.Mode == ModeDynamic && c.AddServer && c.Pool > 0 }

// ReloadReason is why a plan needs HAProxy to reload.
type ReloadReason string

const (
	ReasonRouteAdded      ReloadReason = "route-added"
	ReasonRouteRemoved    ReloadReason = "route-removed"
	ReasonRouteChanged    ReloadReason = "route-changed"
	ReasonEndpointsChange ReloadReason = "endpoints-changed" // reload mode: every endpoint change
	ReasonSlotsExhausted  ReloadReason = "slots-exhausted"
	ReasonPoolExhausted   ReloadReason = "pool-exhausted"
	ReasonNoDynamic       ReloadReason = "dynamic-unsupported" // HAProxy lacks add server
	ReasonRuntimeError    ReloadReason = "runtime-error"
	ReasonDrift           ReloadReason = "drift" // HAProxy lacks a backend dcm manages
	ReasonHAProxyRestart  ReloadReason = "haproxy-restarted"
	ReasonManual          ReloadReason = "manual"
	// ReasonMaxConnRaised: an admin raised the global maxconn above the one
	// the worker started with, which `set maxconn global` cannot exceed.
	ReasonMaxConnRaised ReloadReason = "maxconn-raised"
	ReasonCertChanged   ReloadReason = "cert-changed"  // without runtime certs: a certificate came, changed or went
	ReasonProtoChanged  ReloadReason = "proto-changed" // a server (or slot) must speak another protocol to its pod
)

// OpKind is one kind of runtime change.
type OpKind string

const (
	OpAddServer    OpKind = "add-server"
	OpDelServer    OpKind = "del-server"
	OpSetAddr      OpKind = "set-addr"
	OpSetState     OpKind = "set-state"
	OpSetWeight    OpKind = "set-weight"
	OpEnableHealth OpKind = "enable-health"
	// OpDynamicCookie gives a server added at runtime to a sticky backend
	// its dynamic cookie: HAProxy 2.6's add server leaves it without one,
	// and enable dynamic-cookie backend recomputes every server's.
	OpDynamicCookie OpKind = "dynamic-cookie"
	// OpCookieKey gives a sticky spare, as a sticky route takes it, the
	// route's dynamic-cookie-key (the driver derives it: the secret is not
	// the planner's) and turns its dynamic cookies on.
	OpCookieKey OpKind = "cookie-key"
	// OpMapReplace changes the entries of one routing map that differ
	// between two states, one command per entry: `add map` for a key the
	// map gains, `set map` for one it repoints, `del map` for one it
	// loses. The name is from when it replaced the whole map in one
	// versioned transaction; it stays what the feed (protocol 1) calls it.
	OpMapReplace OpKind = "map-replace"
	// OpCertAdd loads a host's certificate (new ssl cert, set ssl cert,
	// commit ssl cert) and lists it for its SNI host (add ssl crt-list).
	OpCertAdd OpKind = "cert-add"
	// OpCertUpdate replaces a host's certificate in one SSL transaction
	// (set ssl cert, commit ssl cert).
	OpCertUpdate OpKind = "cert-update"
	// OpCertDel unlists a host's certificate (del ssl crt-list) and drops it
	// (del ssl cert).
	OpCertDel OpKind = "cert-del"
	// OpCAAdd loads a destination CA of reencrypt routes into its own file
	// (new ssl ca-file, set ssl ca-file, commit ssl ca-file), before the
	// servers that verify with it are added. A file per CA version: HAProxy
	// 2.6 does not update servers when a CA file they use changes.
	OpCAAdd OpKind = "ca-add"
	// OpCADel drops a CA file (del ssl ca-file) once no server uses it.
	OpCADel OpKind = "ca-del"
)

// Op is one runtime change to one server, or the changed entries of a
// routing map. The haproxy package turns a server op into exactly one
// admin-socket command, and a map replace into one command per entry.
type Op struct {
	Kind OpKind `json:"op"`
	// Backend is the route's backend (empty for map-replace); Slot, when
	// set, the spare backend that carries it in HAProxy, which the command
	// names.
	Backend string `json:"backend"`
	Slot    string `json:"slot,omitempty"`
	Server  string `json:"server"`
	// Addr and Port for add-server and set-addr.
	Addr string `json:"addr,omitempty"`
	Port int    `json:"port,omitempty"`
	// Weight for add-server and set-weight.
	Weight int `json:"weight,omitempty"`
	// State for set-state.
	State AdminState `json:"state,omitempty"`
	// Check for add-server: the server is created with health checks.
	Check bool `json:"check,omitempty"`
	// MaxConn for add-server and set-maxconn: the server's connection
	// limit, 0 for none.
	MaxConn int `json:"maxConn,omitempty"`
	// CheckInterMillis for add-server: the server's check interval, 0
	// for the default.
	CheckInterMillis int64 `json:"checkInterMs,omitempty"`
	// Endpoint and Pod say whom the op is for; they are not sent to HAProxy.
	Endpoint string `json:"endpoint,omitempty"`
	Pod      string `json:"pod,omitempty"`
	// Map, Set and Del describe a map-replace: the map, the entries it gains
	// (MapEntry.New) or repoints, and the entries it loses, each one command.
	Map MapTable   `json:"map,omitempty"`
	Set []MapEntry `json:"set,omitempty"`
	Del []MapEntry `json:"del,omitempty"`
	// Cert is the certificate of a cert op: host, Secret and version, never
	// the key (the driver fetches the PEM by version). Backend is then the
	// route's backend the certificate is served for.
	Cert *Cert `json:"cert,omitempty"`
	// Upstream is, for add-server, the TLS the server connects with
	// (reencrypt routes) and, for ca-add and ca-del, the CA (source and
	// version, never the PEM).
	Upstream *UpstreamTLS `json:"upstream,omitempty"`
	// Proto is, for add-server, the protocol the server speaks to its pod.
	Proto Proto `json:"proto,omitempty"`
}

// ProxyName is the HAProxy backend a server op's command names.
func (o Op) ProxyName() string {
	if o.Slot != "" {
		return o.Slot
	}
	return o.Backend
}

func (o Op) String() string {
	target := o.Backend + "/" + o.Server
	kind := string(o.Kind)
	addr := o.Addr + ":" + strconv.Itoa(o.Port)
	switch o.Kind {
	case OpMapReplace:
		return kind + " " + string(o.Map) + " +" + strconv.Itoa(len(o.Set)) + " -" + strconv.Itoa(len(o.Del))
	case OpCertAdd, OpCertUpdate, OpCertDel:
		if o.Cert == nil {
			return kind
		}
		return kind + " " + o.Cert.Host + " " + o.Cert.Secret + "@" + Short(o.Cert.Version, 12)
	case OpCAAdd, OpCADel:
		if o.Upstream == nil {
			return kind
		}
		return kind + " " + o.Upstream.CA + "@" + Short(o.Upstream.Version, 12)
	case OpAddServer:
		s := kind + " " + target + " " + addr + " weight " + strconv.Itoa(o.Weight)
		if o.Upstream != nil {
			s += " ssl ca " + Short(o.Upstream.Version, 12) + " sni " + o.Upstream.ServerName
		}
		return s
	case OpSetAddr:
		return kind + " " + target + " " + addr
	case OpSetState:
		return kind + " " + target + " " + string(o.State)
	case OpSetWeight:
		return kind + " " + target + " " + strconv.Itoa(o.Weight)
	case OpSetMaxConn:
		return kind + " " + target + " " + strconv.Itoa(o.MaxConn)
	}
	return string(o.Kind) + " " + target
}

// Plan is what the planner decided for one sync. When Reload is set, the
// configuration rendered from Next is loaded by a reload first and Ops are
// applied to the fresh process after it (they restore runtime-only state such
// as drain); otherwise Ops are applied to the running process.
type Plan struct {
	Ops     []Op           `json:"ops"`
	Reload  bool           `json:"reload"`
	Reasons []ReloadReason `json:"reasons,omitempty"`
	// Waiting counts servers in maint that are kept until HAProxy reports them idle.
	Waiting int   `json:"waiting"`
	Next    State `json:"next"`
}

// Empty reports whether the plan changes nothing.
func (p Plan) Empty() bool { return len(p.Ops) == 0 && !p.Reload }
