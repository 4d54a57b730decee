package dcm

import "time"

// HAProxyInfo describes the running HAProxy.
type HAProxyInfo struct {
	Version string    `json:"version"`
	PID     int       `json:"pid"` // current worker
	Started time.Time `json:"started"`
	Reloads int       `json:"reloads"`
	Running bool      `json:"running"`
}

// Updates counts syncs by what they needed.
type Updates struct {
	Noop    uint64 `json:"noop"`
	Dynamic uint64 `json:"dynamic"`
	Reload  uint64 `json:"reload"`
}

// Snapshot is the whole picture at one seq: what the API returns, what the
// feed sends first and what the what-if planner starts from.
type Snapshot struct {
	Seq        uint64      `json:"seq"`
	Mode       Mode        `json:"mode"`
	Caps       Caps        `json:"caps"`
	HAProxy    HAProxyInfo `json:"haproxy"`
	Updates    Updates     `json:"updates"`
	LastReload *ReloadInfo `json:"lastReload,omitempty"`
	Routes     []Route     `json:"routes"`
	Backends   []*Backend  `json:"backends"`
	// Pool lists the free spare backends (dynamic mode with a pool).
	Pool     []string    `json:"pool,omitempty"`
	Rejected []Rejection `json:"rejected"`
	// DefaultCert is the default certificate served (State.DefaultCert).
	DefaultCert Cert `json:"defaultCert,omitzero"`
	// GatewayBinds are the binds HAProxy has beyond Caps.Gateway
	// (State.GatewayBinds).
	GatewayBinds []GatewayBind `json:"gatewayBinds,omitempty"`
	// Gateways is the Gateway API dcm serves and its status (nil: dcm
	// watches no Gateway API).
	Gateways *GatewayAPI `json:"gateways,omitempty"`
}
