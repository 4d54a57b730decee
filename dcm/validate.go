package dcm

import (
	"net/netip"
	"strconv"
)

// Reasons an object is rejected (the label of dcm_rejected_objects_total).
const (
	RejectInvalidName    = "invalid-name"
	RejectInvalidHost    = "invalid-host"
	RejectInvalidPath    = "invalid-path"
	RejectInvalidAddress = "invalid-address"
	RejectInvalidPort    = "invalid-port"
	RejectInvalidValue   = "invalid-value"
	RejectUnsupported    = "unsupported"
	RejectConflict       = "conflict"
	RejectHostClaimed    = "HostAlreadyClaimed" // OpenShift's reason: another namespace owns the host
)

// InvalidError says which field of an object cannot reach HAProxy and why.
type InvalidError struct {
	Reason string // one of the Reject* constants
	Field  string
	Value  string
}

func (e *InvalidError) Error() string {
	return e.Reason + ": " + e.Field + " " + strconv.Quote(e.Value)
}

func invalid(reason, field, value string) error {
	return &InvalidError{Reason: reason, Field: field, Value: value}
}

// Every string dcm hands to HAProxy (in a command, the cfg or a map file)
// passes one of these allow-lists; nothing is escaped, so nothing can be
// escaped wrongly. The lists are narrower than what Kubernetes accepts only
// where HAProxy's syntax would break (a ';' ends a runtime command, '#' starts
// a comment, white space splits arguments and map keys).

func isLowerAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

// ValidateDNSLabel checks a namespace name (RFC 1123 label).
func ValidateDNSLabel(field, s string) error {
	if len(s) == 0 || len(s) > 63 {
		return invalid(RejectInvalidName, field, s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isLowerAlnum(c) || c == '-' && i > 0 && i < len(s)-1 {
			continue
		}
		return invalid(RejectInvalidName, field, s)
	}
	return nil
}

// ValidateDNSSubdomain checks an object name (RFC 1123 subdomain): Ingress,
// Service, Pod and EndpointSlice names.
func ValidateDNSSubdomain(field, s string) error {
	if len(s) == 0 || len(s) > 253 {
		return invalid(RejectInvalidName, field, s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isLowerAlnum(c) {
			continue
		}
		if (c == '-' || c == '.') && i > 0 && i < len(s)-1 {
			continue
		}
		return invalid(RejectInvalidName, field, s)
	}
	return nil
}

// ValidatePortName checks a Service/EndpointSlice port name (IANA service name
// as Kubernetes allows it).
func ValidatePortName(field, s string) error {
	if len(s) == 0 || len(s) > 63 {
		return invalid(RejectInvalidPort, field, s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isLowerAlnum(c) || (c == '-' && i > 0 && i < len(s)-1) {
			continue
		}
		return invalid(RejectInvalidPort, field, s)
	}
	return nil
}

// ValidatePort checks a port number.
func ValidatePort(field string, p int) error {
	if p < 1 || p > 65535 {
		return invalid(RejectInvalidPort, field, strconv.Itoa(p))
	}
	return nil
}

// ValidateHost checks a route host: a lower-case DNS name, or empty for any host.
// Wildcard hosts are rejected as unsupported: only a route's host may be
// one (ValidateRouteHost).
func ValidateHost(field, s string) error {
	if s == "" {
		return nil
	}
	if s[0] == '*' {
		return invalid(RejectUnsupported, field, s)
	}
	if len(s) > 253 {
		return invalid(RejectInvalidHost, field, s)
	}
	label := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case isLowerAlnum(c):
			label++
		case c == '-' && label > 0 && i+1 < len(s) && s[i+1] != '.':
			label++
		case c == '.' && label > 0 && i+1 < len(s):
			label = 0
		default:
			return invalid(RejectInvalidHost, field, s)
		}
		if label > 63 {
			return invalid(RejectInvalidHost, field, s)
		}
	}
	return nil
}

// pathByte is the allow-list for route paths: RFC 3986 path characters minus
// ';' (ends a runtime command) and the quote characters.
func pathByte(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	switch c {
	case '/', '-', '.', '_', '~', '%', '!', '$', '&', '(', ')', '*', '+', ',', '=', ':', '@':
		return true
	}
	return false
}

// ValidatePath checks a route path.
func ValidatePath(field, s string) error {
	if len(s) == 0 || s[0] != '/' || len(s) > 2048 {
		return invalid(RejectInvalidPath, field, s)
	}
	for i := 0; i < len(s); i++ {
		if !pathByte(s[i]) {
			return invalid(RejectInvalidPath, field, s)
		}
	}
	return nil
}

// ValidateAddr checks an endpoint address: a literal IPv4 or IPv6 address.
func ValidateAddr(field, s string) error {
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" || a.IsUnspecified() || a.IsMulticast() {
		return invalid(RejectInvalidAddress, field, s)
	}
	return nil
}

// ValidateBalance checks a balance algorithm.
func ValidateBalance(field, s string) error {
	switch s {
	case BalanceRoundRobin, BalanceLeastConn, BalanceRandom, BalanceFirst, BalanceSource:
		return nil
	}
	return invalid(RejectInvalidValue, field, s)
}

// ServerNameChar is the allow-list for HAProxy server names.
func serverNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':'
}

// ValidateServerName checks a derived server name.
func ValidateServerName(field, s string) error {
	if !validServerName(s) {
		return invalid(RejectInvalidName, field, s)
	}
	return nil
}

// ValidServerName is ValidateServerName's verdict on a name built in a
// buffer (AppendServerName), which a source checking every endpoint of a
// slice need not turn into a string first.
func ValidServerName(b []byte) bool { return validServerName(b) }

func validServerName[T string | []byte](s T) bool {
	if len(s) == 0 || len(s) > 300 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !serverNameByte(s[i]) {
			return false
		}
	}
	return true
}

// ServerName derives a server's name from its endpoint: pod name and port name
// when the endpoint belongs to a pod, else address and port. Two dcm replicas
// derive the same name, so dynamic cookies agree.
func ServerName(pod, portName, addr string, port int) string {
	var buf [64]byte
	return string(AppendServerName(buf[:0], pod, portName, addr, port))
}

// AppendServerName appends ServerName's name to dst, so a source naming
// many servers can build their names in one buffer: one allocation per
// backend instead of one per server in a full resync.
func AppendServerName(dst []byte, pod, portName, addr string, port int) []byte {
	if pod != "" {
		dst = append(dst, pod...)
	} else {
		dst = append(dst, "ip-"...)
		for i := 0; i < len(addr); i++ {
			c := addr[i]
			if c == ':' {
				c = '-' // IPv6: keep ':' as the separator of the port only
			}
			dst = append(dst, c)
		}
	}
	dst = append(dst, ':')
	if portName != "" {
		return append(dst, portName...)
	}
	return strconv.AppendInt(dst, int64(port), 10)
}

// ValidateRoute checks every field of a route that reaches HAProxy.
func ValidateRoute(r Route) error {
	if r.Gateway != nil {
		return validateGatewayRoute(r)
	}
	if err := ValidateDNSLabel("namespace", r.Namespace); err != nil {
		return err
	}
	if err := ValidateRouteName("route name", r.Name); err != nil {
		return err
	}
	if err := ValidateRouteHost("host", r.Host); err != nil {
		return err
	}
	if err := ValidateHTTPOptions(r); err != nil {
		return err
	}
	if err := ValidateMaxConn("maxconn", r.MaxConn); err != nil {
		return err
	}
	if err := ValidateCheckInter("check interval", r.CheckInterMillis); err != nil {
		return err
	}
	switch r.Kind {
	case KindHTTP:
		if r.TLS != nil {
			return invalid(RejectInvalidValue, "tls", r.TLS.Secret)
		}
	case KindEdge:
		// SNI picks the certificate by host: an edge route needs one.
		if r.Host == "" {
			return invalid(RejectUnsupported, "edge route without host", r.Host)
		}
		if r.TLS == nil {
			return invalid(RejectInvalidValue, "tls", "")
		}
		if err := ValidateSecretRef("tls.secret", r.TLS.Secret); err != nil {
			return err
		}
		if err := ValidateCertVersion("tls.version", r.TLS.Version); err != nil {
			return err
		}
	case KindPassthrough:
		// HAProxy routes the connection by the ClientHello's server name
		// and never sees a path: a passthrough route is a whole host.
		if r.Host == "" {
			return invalid(RejectUnsupported, "passthrough route without host", r.Host)
		}
		if r.TLS != nil {
			return invalid(RejectInvalidValue, "tls", r.TLS.Secret)
		}
		if r.Path != "/" || r.PathType != PathPrefix {
			return invalid(RejectUnsupported, "passthrough route with a path", r.Path)
		}
		if r.Sticky {
			// A cookie needs HTTP, and HAProxy never reads the requests of
			// a passed-through connection.
			return invalid(RejectUnsupported, "sticky passthrough route", r.Host)
		}
	case KindReencrypt:
		// TLS ends in HAProxy as for edge (SNI picks the certificate by
		// host), and HAProxy connects to the pods over TLS again.
		if r.Host == "" {
			return invalid(RejectUnsupported, "reencrypt route without host", r.Host)
		}
		if r.TLS == nil {
			return invalid(RejectInvalidValue, "tls", "")
		}
		if err := ValidateSecretRef("tls.secret", r.TLS.Secret); err != nil {
			return err
		}
		if err := ValidateCertVersion("tls.version", r.TLS.Version); err != nil {
			return err
		}
		if err := ValidateUpstream(r.Upstream); err != nil {
			return err
		}
	default:
		return invalid(RejectUnsupported, "kind (only http, edge, passthrough and reencrypt are served)", string(r.Kind))
	}
	if r.Kind != KindReencrypt && r.Upstream != nil {
		return invalid(RejectInvalidValue, "upstream", r.Upstream.CA)
	}
	if err := ValidatePath("path", r.Path); err != nil {
		return err
	}
	if r.PathType != PathPrefix && r.PathType != PathExact {
		return invalid(RejectInvalidPath, "pathType", string(r.PathType))
	}
	if err := ValidateServices(r.Services); err != nil {
		return err
	}
	if err := ValidateInsecure(r); err != nil {
		return err
	}
	if err := validateRouteHeaders(r); err != nil {
		return err
	}
	return ValidateBalance("balance", r.Balance)
}

// ValidateRouteName checks a route's name: an RFC 1123 subdomain (an
// Ingress's name, or one derived from it), or RouteNamePrefix and one (an
// OpenShift Route's), or GatewayRouteNamePrefix and one (an HTTPRoute
// rule's).
func ValidateRouteName(field, s string) error {
	name := s
	for _, p := range []string{RouteNamePrefix, GatewayRouteNamePrefix} {
		if len(s) > len(p) && s[:len(p)] == p {
			name = s[len(p):]
		}
	}
	if ValidateDNSSubdomain(field, name) != nil {
		return invalid(RejectInvalidName, field, s)
	}
	return nil
}

// ValidateEndpoint checks every field of an endpoint that reaches HAProxy.
func ValidateEndpoint(e Endpoint) error {
	if err := ValidateServerName("server name", e.Name); err != nil {
		return err
	}
	if err := ValidateAddr("address", e.Addr); err != nil {
		return err
	}
	if err := ValidatePort("port", e.Port); err != nil {
		return err
	}
	if e.Weight < 0 || e.Weight > 256 {
		return invalid(RejectInvalidValue, "weight", strconv.Itoa(e.Weight))
	}
	switch e.State {
	case StateReady, StateDrain, StateMaint:
		return nil
	}
	return invalid(RejectInvalidValue, "state", string(e.State))
}

// MaxServices bounds the services of one route: a primary and three
// alternates, as OpenShift routes allow.
const MaxServices = 4

// ValidateServices checks a route's services: names, namespaces, ports,
// weights in 0..256, no service twice (a Service is the same only in the
// same namespace: ServiceRef.Namespace), at most MaxServices.
func ValidateServices(svcs []ServiceRef) error {
	if len(svcs) > MaxServices {
		return invalid(RejectUnsupported, "services (at most "+strconv.Itoa(MaxServices)+")", strconv.Itoa(len(svcs)))
	}
	seen := make(map[string]bool, len(svcs))
	for _, s := range svcs {
		if err := ValidateDNSLabel("service name", s.Name); err != nil {
			return err
		}
		if s.Namespace != "" {
			if err := ValidateDNSLabel("service namespace", s.Namespace); err != nil {
				return err
			}
		}
		if seen[s.Namespace+"/"+s.Name] {
			return invalid(RejectConflict, "service listed twice", s.Name)
		}
		seen[s.Namespace+"/"+s.Name] = true
		if s.Port == "" {
			// Only for routes built by hand (tests, what-if): kube always names one.
		} else if n, err := strconv.Atoi(s.Port); err == nil {
			if err := ValidatePort("service port", n); err != nil {
				return err
			}
		} else if err := ValidatePortName("service port", s.Port); err != nil {
			return err
		}
		if s.Weight < 0 || s.Weight > MaxWeight {
			return invalid(RejectInvalidValue, "service weight", strconv.Itoa(s.Weight))
		}
	}
	return nil
}
