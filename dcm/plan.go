package dcm

import "fmt"

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
	return "", fmt.Errorf("unknown mode %q: want dynamic, slots or reload", s)
}

// Caps says what the running HAProxy and the chosen mode allow the planner to do.
type Caps struct {
	Mode Mode `json:"mode"`
	// Slots is the number of free slots a backend gets on top of its endpoints
	// whenever the configuration is rendered (slots mode).
	Slots int `json:"slots,omitempty"`
	// AddServer is true when HAProxy supports add server / del server.
	AddServer bool `json:"addServer"`
}

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
)

// Op is one runtime change to one server. The haproxy package turns each op
// into exactly one admin-socket command.
type Op struct {
	Kind    OpKind `json:"op"`
	Backend string `json:"backend"`
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
	// Endpoint and Pod say whom the op is for; they are not sent to HAProxy.
	Endpoint string `json:"endpoint,omitempty"`
	Pod      string `json:"pod,omitempty"`
}

func (o Op) String() string {
	target := o.Backend + "/" + o.Server
	switch o.Kind {
	case OpAddServer:
		return fmt.Sprintf("%s %s %s:%d weight %d", o.Kind, target, o.Addr, o.Port, o.Weight)
	case OpSetAddr:
		return fmt.Sprintf("%s %s %s:%d", o.Kind, target, o.Addr, o.Port)
	case OpSetState:
		return fmt.Sprintf("%s %s %s", o.Kind, target, o.State)
	case OpSetWeight:
		return fmt.Sprintf("%s %s %d", o.Kind, target, o.Weight)
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
