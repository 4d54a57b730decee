package haproxy

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/routing"
)

// Settings are the parts of haproxy.cfg that do not come from the State.
type Settings struct {
	// AdminSocket is the absolute path of the runtime API socket.
	AdminSocket string
	// HTTPBind is the address of the HTTP frontend, e.g. "127.0.0.1:8000".
	HTTPBind string
	// HTTPSBind is the address of the HTTPS frontend, e.g.
	// "127.0.0.1:8443"; "" renders none (edge routes are then served over
	// HTTP only, and their certificates are not written).
	HTTPSBind string
	// HTTPSRedirectPort is the port plain-HTTP requests of a Redirect route
	// are sent to: the port clients reach the HTTPS frontend on, which
	// differs from HTTPSBind's behind a Service (443 → 8443). 0 and 443
	// leave the port out of the location.
	HTTPSRedirectPort int
	// HardStopAfter bounds how long an old worker may linger after a reload; 0 = no bound.
	HardStopAfter time.Duration
	// CookieSecret is the cluster-wide secret sticky backends derive their
	// dynamic-cookie-key from (CookieKey); every dcm replica must share it
	// for a cookie set by one to be honoured by another.
	CookieSecret string
	// MaxConn is global maxconn; 0 leaves HAProxy's (from its fd limit).
	MaxConn int
	// Timeouts are the default timeouts (zero fields: OpenShift's).
	Timeouts Timeouts
	// Forwarded is the forwarded-headers policy of routes that name none
	// ("" is append).
	Forwarded dcm.ForwardedPolicy
	// ErrorPage503 and ErrorPage404 are HTML bodies HAProxy answers those
	// statuses with (nil: dcm's pages); validated by Render.
	ErrorPage503, ErrorPage404 []byte
	// HTTP2 is the HTTPS frontend's HTTP/2 policy.
	HTTP2 HTTP2
	// LogSocket is the absolute path of the datagram socket the frontends
	// send their access log to (LogSocketName in the work directory);
	// "": no access log.
	LogSocket string
	// Gateway is what HAProxy pre-binds for Gateway API listeners; empty:
	// no Gateway is served.
	Gateway dcm.GatewayBinds
	// gatewayExtra are the binds the rendered state has beyond Gateway
	// (dcm.State.GatewayBinds), set by the Renderer for each rendering.
	gatewayExtra []dcm.GatewayBind
}

// CookieKey derives a backend's dynamic-cookie-key from the cluster-wide
// secret and the backend's name (dcm's, not the spare's, which differs
// between replicas and reloads): HAProxy hashes it with a server's address
// and port into the server's cookie, so equal keys give every replica and
// every reload the same cookie for the same pod. Hex: no quoting needed.
func CookieKey(secret, backend string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(backend))
	return hex.EncodeToString(m.Sum(nil))[:32]
}

// Files is one rendering: the configuration and the map files it reads.
type Files struct {
	// Config is haproxy.cfg: the global and defaults sections, the
	// frontends and the default backend.
	Config []byte
	// Backends holds the HAProxy backends, free spares included, in shard
	// files sorted by Name (BackendFile): HAProxy loads BackendsDir after
	// haproxy.cfg (-f haproxy.cfg -f backends), so a change to one backend
	// rewrites its shard alone. A Renderer hands out the same Text for a
	// shard whose backends it did not render again, and WriteFiles skips
	// it by that alone.
	Backends []BackendFile
	// Maps holds the map files by path relative to the configuration's directory.
	Maps map[string][]byte
	// CrtList is the HTTPS frontend's crt-list (CrtListName): one line per
	// SNI host, naming its certificate file; nil without an HTTPS frontend.
	CrtList []byte
	// GatewayLists holds the crt-list of every Gateway HTTPS bind by path
	// relative to the cfg (GatewayCrtList).
	GatewayLists map[string][]byte
	// Certs holds the certificate files (certificate and key, PEM) by path
	// relative to the cfg: the default certificate and one per SNI host.
	// The renderer leaves it empty (the model never holds a key); the
	// driver fills it from its CertSource before writing.
	Certs map[string][]byte
	// CAs holds the destination CA files of reencrypt routes (PEM) by
	// path relative to the cfg (CAFile); filled by the driver from its
	// CASource, like Certs.
	CAs map[string][]byte
}

// File names relative to the work directory. Maps are referenced relatively
// and resolved against the cfg's own directory (default-path config), so the
// same bytes validate in a staging directory and run in the work directory.
const (
	ConfigName    = "haproxy.cfg"
	BackendsDir   = "backends"
	MapsDir       = "maps"
	MapHostExact  = "maps/host_exact.map"
	MapHostPrefix = "maps/host_prefix.map"
	MapAnyExact   = "maps/any_exact.map"
	MapAnyPrefix  = "maps/any_prefix.map"
)

// Certificates of the HTTPS frontend. A host's file is named after the host
// (an allow-listed DNS name), so the runtime API, the crt-list and the disk
// all name it by the same string. The default certificate sits outside
// CertsDir, so no host's file can be it.
const (
	CertsDir        = "certs"
	CrtListName     = "certs.list"
	DefaultCertName = "default.pem"
)

// CAsDir holds the destination CA files of reencrypt routes, one per CA
// version: HAProxy 2.6 reads a server's ca-file when the server is created
// and never again (commit ssl ca-file does not reach servers that use the
// file), so a new CA is a new file and new servers.
const CAsDir = "cas"

// CAFile is the file of a destination CA version, relative to the cfg; the
// runtime API names it by the same string.
func CAFile(version string) string { return CAsDir + "/" + version + ".pem" }

// CertFile is the certificate file of an SNI host, relative to the cfg.
// A wildcard host's file is named with "_" for its "*" (no host has one),
// so no file name holds a glob character.
func CertFile(host string) string {
	return CertsDir + "/" + strings.Replace(host, "*", "_", 1) + ".pem"
}

// MapFile is the file of a routing map, relative to the cfg; HAProxy's
// runtime API names the map by this same string.
func MapFile(t dcm.MapTable) string { return MapsDir + "/" + string(t) + ".map" }

const (
	// DefaultBackend answers requests no route matches.
	DefaultBackend = "be_default"
	// BackendPrefix starts the name of every backend dcm manages.
	BackendPrefix = "be_"
	// slotPlaceholder is where a free slot points: a literal address keeps the
	// address family set, so `set server addr` works on a fresh start (a
	// hostname with init-addr none leaves it unset and the runtime API refuses).
	slotPlaceholderAddr = "0.0.0.0"
	slotPlaceholderPort = 1
	// checkInter is the health check interval of servers with Check set.
	checkInter = "5s"
	// TerminateBackend carries the TLS connections of no passthrough route
	// from fe_tls to fe_https, which terminates them. Its name is outside
	// be_*: dcm never adds servers to it nor observes it.
	TerminateBackend = "tls_terminate"
	// EdgeSocketName is fe_https's socket, next to the admin socket.
	EdgeSocketName = "https.sock"
	// helloWait bounds how long fe_tls waits for a ClientHello.
	helloWait = "5s"
)

// edgeSocket is the absolute path of fe_https's socket: next to the admin
// socket, so it lives in dcm's work directory and stays short.
func (s Settings) edgeSocket() string {
	return filepath.Join(filepath.Dir(s.AdminSocket), EdgeSocketName)
}

// frontendRouting is the frontend's routing: the key is the lower-cased Host
// header without its port followed by the path. Exact maps first, then
// prefix maps, host-specific before any-host; the first map that matches
// wins. Exact maps are looked up with map_str, prefix maps with map_beg,
// which HAProxy 2.6 answers from a prefix tree with the longest key that
// begins the request's (dcm.MapTable.Prefix): a key ends with '/' (or is
// the exact one of a Prefix route), so /api matches /api and /api/x, never
// /apix, and /api/v1 wins over /api for /api/v1/x whatever the order its
// entries came in. One lookup per map, whatever the number of routes.
func frontendRouting() []struct{ keyVar, conv, file string } {
	out := make([]struct{ keyVar, conv, file string }, 0, len(dcm.HTTPMapTables))
	for _, t := range dcm.HTTPMapTables {
		keyVar, conv := "txn.path", "map_str"
		switch t {
		case dcm.MapHostExact, dcm.MapHostPrefix:
			keyVar = "txn.key"
		case dcm.MapWildExact, dcm.MapWildPrefix:
			keyVar = "txn.wkey"
		}
		if t.Prefix() {
			conv = "map_beg"
		}
		out = append(out, struct{ keyVar, conv, file string }{keyVar, conv, MapFile(t)})
	}
	return out
}

// Render produces haproxy.cfg and the map files for st. It validates every
// string it writes, so a State that slipped past the model's checks yields
// an error naming the backend or server instead of an unsafe file. Equal
// inputs give byte-identical output.
func Render(s Settings, st dcm.State) (Files, error) {
	return NewRenderer(s).Render(st)
}

// renderCrtList lists one certificate per SNI host (dcm.CertsOf): the file,
// then the host as its only SNI filter, so a host's line is added and
// deleted at runtime by its file name alone.
func renderCrtList(backends []*dcm.Backend, h2 HTTP2) ([]byte, error) {
	var b bytes.Buffer
	for _, c := range dcm.CertsOf(backends) {
		if c.Bind != "" {
			continue // a Gateway listener's: renderGatewayCrtLists
		}
		if err := dcm.ValidateRouteHost("certificate host", c.Host); err != nil || c.Host == "" {
			return nil, fmt.Errorf("certificate of %q: not a host name", c.Host)
		}
		b.WriteString(h2.crtListLine(c) + "\n")
	}
	return b.Bytes(), nil
}

func renderGlobal(w *bytes.Buffer, s Settings) {
	w.WriteString("# Written by dcm; every change is rewritten, edits are lost.\n")
	w.WriteString("global\n")
	w.WriteString("    default-path config\n")
	fmt.Fprintf(w, "    stats socket %s mode 600 level admin expose-fd listeners\n", s.AdminSocket)
	w.WriteString("    stats timeout 2m\n")
	// A second HAProxy on the same address fails to start instead of
	// silently sharing the port and half the traffic (SO_REUSEPORT). Reloads
	// do not need it: the master hands the listeners to the new worker.
	w.WriteString("    noreuseport\n")
	renderLuaGlobal(w)
	if s.HardStopAfter > 0 {
		fmt.Fprintf(w, "    hard-stop-after %dms\n", max(s.HardStopAfter.Milliseconds(), 1))
	}
	renderTuning(w, s)
	renderDefaults(w, s)
	w.WriteString("\nfrontend fe_http\n")
	fmt.Fprintf(w, "    bind %s\n", s.HTTPBind)
	renderLogFrontend(w, s, false)
	renderHygiene(w)
	if s.HTTPSBind == "" {
		// Nowhere to send plain HTTP to: every route is served as HTTP,
		// whatever its insecure policy.
		renderRouting(w, s, false)
	} else {
		renderInsecureRouting(w, s)
	}
	if s.HTTPSBind != "" {
		// One TCP frontend owns the HTTPS address: it waits for the
		// ClientHello and sends a passthrough route's connection, picked
		// by its server name in the SNI map, to the route's TCP backend
		// untouched. Every other connection goes on, with its client's
		// address in a PROXY v2 header, to fe_https over a local socket.
		sni := "req_ssl_sni,lower,map_str(" + MapFile(dcm.MapSNI) + ")"
		wild := "req_ssl_sni,lower," + wildcardDomain + ",map_str(" + MapFile(dcm.MapSNIWild) + ")"
		w.WriteString("\nfrontend fe_tls\n")
		w.WriteString("    mode tcp\n")
		fmt.Fprintf(w, "    bind %s\n", s.HTTPSBind)
		renderLogFrontend(w, s, true)
		fmt.Fprintf(w, "    tcp-request inspect-delay %s\n", helloWait)
		w.WriteString("    tcp-request content accept if { req_ssl_hello_type 1 }\n")
		fmt.Fprintf(w, "    use_backend %%[%s] if { %s -m found }\n", sni, sni)
		fmt.Fprintf(w, "    use_backend %%[%s] if { %s -m found }\n", wild, wild)
		fmt.Fprintf(w, "    default_backend %s\n", TerminateBackend)
		fmt.Fprintf(w, "\nbackend %s\n", TerminateBackend)
		w.WriteString("    mode tcp\n")
		renderLogSilence(w, s)
		fmt.Fprintf(w, "    server fe_https unix@%s send-proxy-v2\n", s.edgeSocket())
		// Edge routes: TLS ends here, with the certificate the SNI host
		// picks from the crt-list (the default one when none matches),
		// and the request is routed by the same maps as plain HTTP.
		w.WriteString("\nfrontend fe_https\n")
		fmt.Fprintf(w, "    bind unix@%s accept-proxy ssl crt %s crt-list %s alpn %s\n", s.edgeSocket(), DefaultCertName, CrtListName, s.HTTP2.bindALPN())
		renderLogFrontend(w, s, false)
		renderHygiene(w)
		renderRouting(w, s, true)
		renderHSTS(w)
	}
	renderGatewayFrontends(w, s)
	renderRateLimitTable(w)
	// A request no route matches: the 503 page of http-error, as
	// OpenShift's router answers it. It reads no map: the HTTP frontends
	// read every map a route's rules use, which is what keeps those maps
	// known to the runtime API when no route has an entry yet.
	fmt.Fprintf(w, "\nbackend %s\n", DefaultBackend)
	w.WriteString("    http-request return status 503 default-errorfiles\n")
}

// renderRouting is the routing of a frontend that serves every route it
// finds: fe_https, and fe_http without HTTPS.
func renderRouting(w *bytes.Buffer, s Settings, https bool) {
	renderLookup(w)
	renderForwarded(w, s.Forwarded, https)
	renderRouteRules(w)
	w.WriteString("    use_backend %[var(txn.be)] if { var(txn.be) -m found }\n")
	fmt.Fprintf(w, "    default_backend %s\n", DefaultBackend)
}

// renderRouteRules are the rules of the route a request found, in the
// HTTP frontends, keyed by txn.be (the HAProxy backend the lookup found,
// which the maps are keyed by, a spare's name when the route rides one):
// after the forwarded headers and before the request goes to its
// backend, in the order they ran in the backend before: the allowlist,
// the rate limits (a refused client is not counted), the cookie's name,
// the timeouts, the rewrite, the header actions. A request without a
// route (txn.be unset) meets none of them. Written once here rather than
// in every backend: HAProxy keeps each rule in every proxy that has it,
// and an empty HTTP backend took 31 KB of its memory with these rules,
// 12 KB without (BenchmarkMemoryCosts); a backend keeps only what needs
// a backend (renderRouteTimeouts).
func renderRouteRules(w *bytes.Buffer) {
	renderFrontendAllowlistRule(w)
	renderFrontendRateLimitRules(w)
	renderCookieRules(w)
	renderRouteTimeoutVars(w)
	renderRewriteRule(w)
	renderHeaderRules(w)
}

// renderInsecureRouting is fe_http's routing when HTTPS is served: the
// route is found by the same maps, in the same order, as fe_https finds
// it, into a variable; then the insecure maps say what its plain HTTP
// request gets (routing.InsecureAction): a redirect to https with the route's
// code, or, for None, the answer of a request no route matches. A
// passthrough host with Redirect is redirected before routing, as HAProxy
// serves none of its paths. The maps change at runtime, so a route's
// policy changes without a reload.
func renderInsecureRouting(w *bytes.Buffer, s Settings) {
	redirectPort := s.HTTPSRedirectPort
	renderLookup(w)
	fmt.Fprintf(w, "    http-request set-var(txn.insecure) var(txn.host),map_str(%s)\n", MapFile(dcm.MapInsecureHost))
	fmt.Fprintf(w, "    http-request set-var(txn.insecure) var(txn.host),%s,map_str(%s) if !{ var(txn.insecure) -m found }\n", wildcardDomain, MapFile(dcm.MapInsecureHost))
	fmt.Fprintf(w, "    http-request set-var(txn.insecure) var(txn.be),map_str(%s) if !{ var(txn.insecure) -m found }\n", MapFile(dcm.MapInsecure))
	// The host without the port the client used (that is the HTTP one):
	// the redirect goes to the port clients reach HTTPS on, left out when
	// it is https's default, as OpenShift's router does.
	port := ""
	if redirectPort != 0 && redirectPort != 443 {
		port = ":" + strconv.Itoa(redirectPort)
	}
	for _, code := range dcm.RedirectCodes {
		fmt.Fprintf(w, "    http-request redirect location https://%%[var(txn.host)]%s%%[pathq] code %d if { var(txn.insecure) -m str redirect-%d }\n", port, code, code)
	}
	// None answers as a request no route matches: the request loses its
	// route here, so that none of the route's rules below (its allowlist
	// first) applies to it, and it goes to the default backend. The
	// redirects above come before the allowlist, as OpenShift's router
	// redirects in its frontend and checks the allowlist in the backend.
	fmt.Fprintf(w, "    http-request unset-var(txn.be) if { var(txn.insecure) -m str %s }\n", routing.ActionNone)
	renderForwarded(w, s.Forwarded, false)
	renderRouteRules(w)
	// After every http-request rule, which HAProxy runs first anyway: it
	// warns at each start about a use_backend written before one.
	w.WriteString("    use_backend %[var(txn.be)] if { var(txn.be) -m found }\n")
	fmt.Fprintf(w, "    default_backend %s\n", DefaultBackend)
}

// renderBackend renders b under the name HAProxy knows it by (its spare's,
// when it has one).
func renderBackend(w *bytes.Buffer, b dcm.Backend, cookieSecret string, h2 HTTP2) error {
	if err := validateBackendName(b.ProxyName()); err != nil {
		return err
	}
	balance := backendBalance(b)
	if err := dcm.ValidateBalance("balance", balance); err != nil {
		return fmt.Errorf("backend %q: %w", b.Name, err)
	}
	fmt.Fprintf(w, "\nbackend %s\n", b.ProxyName())
	if routing.TCPBackend(&b) {
		w.WriteString("    mode tcp\n")
		renderTCPTimeouts(w, b.Route)
	}
	renderBalance(w, balance)
	if b.Route.Sticky {
		renderSticky(w, b, cookieSecret)
	}
	servers := slices.Clone(b.Servers)
	dcm.SortServers(servers)
	for i, srv := range servers {
		if i > 0 && servers[i-1].Name == srv.Name {
			return fmt.Errorf("backend %q: server %q appears twice", b.Name, srv.Name)
		}
		args, err := ServerArgs(srv, h2)
		if err != nil {
			return fmt.Errorf("backend %q: %w", b.Name, err)
		}
		fmt.Fprintf(w, "    server %s %s\n", srv.Name, args)
	}
	if routing.TCPBackend(&b) {
		// A passthrough backend keeps its route's rules, keyed by its own
		// name: its frontend, fe_tls, is a TCP one whose tcp-request
		// content accept of the ClientHello ends its rules, and which
		// finds the route by SNI only in use_backend. Moving the rules
		// there would mean looking the SNI up before that accept, in the
		// frontend every TLS connection passes; here SNI routing stays
		// as it was, for about 11 KB more per passthrough backend.
		renderAllowlistRule(w)
		renderRateLimitRules(w)
	} else {
		// An HTTP backend, a spare's too, holds only what needs a
		// backend: every other rule of its route runs in the HTTP
		// frontends (renderRouteRules), once for all routes, so that a
		// backend, and above all a spare that serves nothing yet, costs
		// HAProxy little memory.
		renderRouteTimeouts(w)
	}
	return nil
}

// ServerArgs renders what follows a server's name, for both the cfg
// `server` line and the runtime `add server` command: one function for
// both, so runtime and file cannot drift. HAProxy 2.6 cannot express drain
// in a cfg, so a drained server is rendered disabled (dcm restores drain
// after a reload). A free slot points at a placeholder address, disabled.
func ServerArgs(s dcm.Server, h2 HTTP2) (string, error) {
	if err := dcm.ValidateServerName("server name", s.Name); err != nil {
		return "", fmt.Errorf("server %q: %w", s.Name, err)
	}
	if s.Weight < 0 || s.Weight > 256 {
		return "", fmt.Errorf("server %q: weight %d out of range 0-256", s.Name, s.Weight)
	}
	var addr string
	state := s.State
	if s.Endpoint == "" && s.Addr == "" {
		addr = netip.AddrPortFrom(netip.MustParseAddr(slotPlaceholderAddr), slotPlaceholderPort).String()
		state = dcm.StateMaint
	} else {
		var err error
		if addr, err = serverAddr(s.Addr, s.Port); err != nil {
			return "", fmt.Errorf("server %q: %w", s.Name, err)
		}
	}
	var b strings.Builder
	b.WriteString(addr)
	b.WriteString(" weight ")
	b.WriteString(strconv.Itoa(s.Weight))
	if err := writeKnobs(&b, s); err != nil {
		return "", err
	}
	transport, err := transportArgs(s, h2)
	if err != nil {
		return "", fmt.Errorf("server %q: %w", s.Name, err)
	}
	b.WriteString(transport)
	switch state {
	case dcm.StateReady:
	case dcm.StateDrain, dcm.StateMaint:
		b.WriteString(" disabled")
	default:
		return "", fmt.Errorf("server %q: unknown state %q", s.Name, s.State)
	}
	return b.String(), nil
}

// upstreamArgs are the TLS arguments of a reencrypt route's server:
// verify the pod's certificate against the route's CA file and the server
// name (verifyhost), which is also sent as SNI. Health checks, when on,
// use the same TLS settings and send the same SNI (check-sni), or a pod
// that picks its certificate by SNI would fail them.
func upstreamArgs(u *dcm.UpstreamTLS, check bool, alpn string) (string, error) {
	if u.Version == "" {
		return "", fmt.Errorf("upstream TLS without a CA version")
	}
	if err := dcm.ValidateUpstream(u); err != nil {
		return "", err
	}
	// alpn (HTTP2.serverALPN): a pod that speaks h2 (gRPC) gets it; one
	// that does not picks http/1.1, as OpenShift's reencrypt servers offer
	// both.
	args := " ssl verify required ca-file " + CAFile(u.Version)
	if alpn != "" {
		args += " alpn " + alpn
	}
	if u.ServerName == "" {
		// The chain only: without sni HAProxy 2.6 checks no name.
		return args, nil
	}
	args += " sni str(" + u.ServerName + ") verifyhost " + u.ServerName
	if check {
		args += " check-sni " + u.ServerName
	}
	return args, nil
}

// serverAddr renders addr:port the way HAProxy 2.6 reads it in a server line
// and in add server: IPv6 literals in brackets ([::1]:8080).
func serverAddr(addr string, port int) (string, error) {
	if err := dcm.ValidateAddr("address", addr); err != nil {
		return "", err
	}
	if err := dcm.ValidatePort("port", port); err != nil {
		return "", err
	}
	return netip.AddrPortFrom(netip.MustParseAddr(addr), uint16(port)).String(), nil
}

// validateBackendName accepts the names dcm gives backends: be_ followed by
// characters HAProxy takes in a proxy name and that need no quoting in a
// command, a cfg line or a map value.
func validateBackendName(name string) error {
	// A bare "be_" names nothing dcm manages (FuzzCommandFor found it accepted).
	if !strings.HasPrefix(name, BackendPrefix) || name == BackendPrefix || name == DefaultBackend {
		return fmt.Errorf("backend %q: name must start with %q, go on after it and not be %q", name, BackendPrefix, DefaultBackend)
	}
	if err := dcm.ValidateServerName("backend name", name); err != nil {
		return fmt.Errorf("backend %q: %w", name, err)
	}
	return nil
}

func (s Settings) validate() error {
	if !filepath.IsAbs(s.AdminSocket) || !safePath(s.AdminSocket) {
		return fmt.Errorf("admin socket %q: want an absolute path of letters, digits and /._-+", s.AdminSocket)
	}
	if err := validateBind("http bind", s.HTTPBind); err != nil {
		return err
	}
	if s.HTTPSBind != "" {
		if err := validateBind("https bind", s.HTTPSBind); err != nil {
			return err
		}
		if !safePath(s.edgeSocket()) {
			return fmt.Errorf("https socket %q: want an absolute path of at most 107 letters, digits and /._-+", s.edgeSocket())
		}
	}
	if s.LogSocket != "" && (!filepath.IsAbs(s.LogSocket) || !safePath(s.LogSocket)) {
		return fmt.Errorf("log socket %q: want an absolute path of at most 107 letters, digits and /._-+", s.LogSocket)
	}
	if s.HTTPSRedirectPort < 0 || s.HTTPSRedirectPort > 65535 {
		return fmt.Errorf("https redirect port %d: want 0 to 65535", s.HTTPSRedirectPort)
	}
	if s.HardStopAfter < 0 {
		return fmt.Errorf("hard-stop-after %s: negative", s.HardStopAfter)
	}
	if err := validateGatewayBinds(s); err != nil {
		return err
	}
	return s.validateHTTP()
}

func validateBind(what, bind string) error {
	host, port, err := net.SplitHostPort(bind)
	if err != nil {
		return fmt.Errorf("%s %q: %w", what, bind, err)
	}
	if host != "" {
		if a, err := netip.ParseAddr(host); err != nil || a.Zone() != "" {
			return fmt.Errorf("%s %q: want an IP address literal", what, bind)
		}
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 || strconv.Itoa(p) != port {
		return fmt.Errorf("%s %q: bad port", what, bind)
	}
	return nil
}

// safePath is the allow-list for file paths written into the cfg.
func safePath(p string) bool {
	if p == "" || len(p) > 107 { // sun_path holds 108 bytes with the NUL
		return false
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("/._-+", c) >= 0 {
			continue
		}
		return false
	}
	return true
}
