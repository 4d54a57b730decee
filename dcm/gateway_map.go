package dcm

// The Gateway maps: the frontends of the Gateway binds find a request's
// route in them, with a Lua action (dcm/haproxy), never in the host and
// path maps; the binds of Ingresses and Routes never read them.
const (
	// MapGateway maps a listener bind and a hostname of its routes
	// ("127.0.20.1:18080/foo.example.com", "…/*.example.com", "…/" for
	// any host) to the candidates a request there tries, in the Gateway
	// API's precedence (built by dcm/routing.Tables).
	MapGateway MapTable = "gateway"
	// MapGatewayRule maps the HAProxy backend of a Gateway route to its
	// matches and filters (dcm/routing.GatewayRuleValue).
	MapGatewayRule MapTable = "gateway_rule"
)

// Gateway reports whether a map is read by the Gateway frontends only:
// HAProxy knows it only when it binds Gateway listeners.
func (t MapTable) Gateway() bool { return t == MapGateway || t == MapGatewayRule }
