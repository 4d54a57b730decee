package dcm

// GatewayAPI is what dcm serves of the Gateway API and the status it
// computed for it (the kube source writes the same conditions to the
// objects' status): what the portal and GET /api/v1/snapshot show.
type GatewayAPI struct {
	// Gateways are the Gateways of dcm's GatewayClasses, by namespace/name.
	Gateways []GatewayView `json:"gateways"`
	// HTTPRoutes are the HTTPRoutes naming one of them, by namespace/name.
	HTTPRoutes []HTTPRouteView `json:"httpRoutes"`
}

// Condition is one status condition as dcm computed it (metav1.Condition
// without its generation and transition time).
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"` // True, False or Unknown
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// GatewayView is one Gateway: its class, the address dcm gave it, its
// listeners and conditions.
type GatewayView struct {
	Namespace  string         `json:"namespace"`
	Name       string         `json:"name"`
	Class      string         `json:"class"`
	Address    string         `json:"address,omitempty"` // "" while dcm gives it none
	Listeners  []ListenerView `json:"listeners"`
	Conditions []Condition    `json:"conditions"`
}

// ListenerView is one listener of a Gateway.
type ListenerView struct {
	Name           string      `json:"name"`
	Protocol       string      `json:"protocol"`
	Port           int         `json:"port"`
	Hostname       string      `json:"hostname,omitempty"`
	AttachedRoutes int         `json:"attachedRoutes"`
	Conditions     []Condition `json:"conditions"`
}

// HTTPRouteView is one HTTPRoute (or GRPCRoute, or TLSRoute) and dcm's status for
// each parent it names.
type HTTPRouteView struct {
	// Kind is "GRPCRoute" for a GRPCRoute, "TLSRoute" for a TLSRoute, "" for
	// an HTTPRoute.
	Kind      string            `json:"kind,omitempty"`
	Namespace string            `json:"namespace"`
	Name      string            `json:"name"`
	Hostnames []string          `json:"hostnames,omitempty"`
	Parents   []RouteParentView `json:"parents"`
}

// RouteParentView is an HTTPRoute's status for one parentRef: the
// Gateway's namespace/name and the listener (sectionName, "" for all).
type RouteParentView struct {
	Gateway    string      `json:"gateway"`
	Listener   string      `json:"listener,omitempty"`
	Conditions []Condition `json:"conditions"`
}
