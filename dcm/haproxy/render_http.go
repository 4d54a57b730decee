package haproxy

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/dcm-router/dcm/dcm"
)

// HTTP behaviour as OpenShift's router has it: its timeouts, buffers,
// answers and forwarded headers, rendered once; what a route overrides
// comes from the setting maps (dcm.SettingMapTables), keyed by the
// route's HAProxy backend, so it changes at runtime.

// Timeouts are the proxies' default timeouts; a zero field is OpenShift's
// router's default (DefaultTimeouts).
type Timeouts struct {
	Connect, Client, Server, ClientFin, ServerFin, HTTPRequest, HTTPKeepAlive, Tunnel time.Duration
}

// DefaultTimeouts are OpenShift's router's.
var DefaultTimeouts = Timeouts{
	Connect: 5 * time.Second, Client: 30 * time.Second, Server: 30 * time.Second,
	ClientFin: time.Second, ServerFin: time.Second, HTTPRequest: 10 * time.Second,
	HTTPKeepAlive: 300 * time.Second, Tunnel: time.Hour,
}

// lines are the timeouts as the defaults section writes them, zero
// fields filled from DefaultTimeouts.
func (t Timeouts) lines() []struct {
	name string
	d    time.Duration
} {
	pick := func(v, def time.Duration) time.Duration {
		if v == 0 {
			return def
		}
		return v
	}
	d := DefaultTimeouts
	return []struct {
		name string
		d    time.Duration
	}{
		{"connect", pick(t.Connect, d.Connect)}, {"client", pick(t.Client, d.Client)},
		{"server", pick(t.Server, d.Server)}, {"client-fin", pick(t.ClientFin, d.ClientFin)},
		{"server-fin", pick(t.ServerFin, d.ServerFin)}, {"http-request", pick(t.HTTPRequest, d.HTTPRequest)},
		{"http-keep-alive", pick(t.HTTPKeepAlive, d.HTTPKeepAlive)}, {"tunnel", pick(t.Tunnel, d.Tunnel)},
	}
}

func (t Timeouts) validate() error {
	for _, l := range t.lines() {
		if l.d < time.Millisecond || l.d.Milliseconds() > dcm.MaxTimeoutMillis {
			return fmt.Errorf("timeout %s %s: want 1ms to %dms", l.name, l.d, dcm.MaxTimeoutMillis)
		}
	}
	return nil
}

// Buffers as OpenShift's router sizes them: large cookies and tokens fit.
const (
	tuneBufsize    = 32768
	tuneMaxrewrite = 8192
	// MaxErrorPage bounds an error page: it must fit in a buffer with its
	// headers, beside the room kept for rewrites.
	MaxErrorPage = 16 << 10
)

// defaultPage503 is the answer of a request no route matches, and of a
// route with no pod to serve it, as OpenShift's router answers them.
const defaultPage503 = `<html>
<head><title>Application is not available</title></head>
<body>
<h1>Application is not available</h1>
<p>The application is currently not serving requests at this endpoint. It may not have been started or is still starting.</p>
</body>
</html>
`

const defaultPage404 = `<html>
<head><title>Not found</title></head>
<body>
<h1>Not found</h1>
<p>The requested page is not served here.</p>
</body>
</html>
`

// validateErrorPage checks an HTML body given as an error page: it is
// written into the cfg as one quoted string, so it must be text HAProxy's
// parser reads back as written (quoteCfg escapes the rest).
func validateErrorPage(what string, page []byte) error {
	if len(page) > MaxErrorPage {
		return fmt.Errorf("%s: %d bytes, at most %d", what, len(page), MaxErrorPage)
	}
	for _, c := range page {
		if c < 0x20 && c != '\n' && c != '\t' && c != '\r' || c == 0x7f {
			return fmt.Errorf("%s: control byte %#x; want an HTML body", what, c)
		}
	}
	return nil
}

// quoteCfg writes s as one double-quoted cfg word: HAProxy expands $ and
// backslash escapes in double quotes, and a line ends the word.
func quoteCfg(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `\$`, "\n", `\n`, "\r", `\r`, "\t", `\t`)
	return `"` + r.Replace(s) + `"`
}

// renderTuning is the global section's limits.
func renderTuning(w *bytes.Buffer, s Settings) {
	if s.MaxConn > 0 {
		fmt.Fprintf(w, "    maxconn %d\n", s.MaxConn)
	}
	fmt.Fprintf(w, "    tune.bufsize %d\n    tune.maxrewrite %d\n", tuneBufsize, tuneMaxrewrite)
}

// renderDefaults is the defaults section: timeouts, and the pages of 503
// and 404 as HTML with Cache-Control: no-store (http-error reaches every
// answer HAProxy itself makes with that status: no route, no server).
func renderDefaults(w *bytes.Buffer, s Settings) {
	w.WriteString("\ndefaults\n    mode http\n")
	for _, l := range s.Timeouts.lines() {
		fmt.Fprintf(w, "    timeout %s %dms\n", l.name, l.d.Milliseconds())
	}
	w.WriteString("    timeout queue 30s\n    retries 3\n")
	w.WriteString("    # A pod that just stopped refuses connections: retry on another server.\n")
	w.WriteString("    option redispatch 1\n")
	for _, p := range []struct {
		code int
		page []byte
		def  string
	}{{503, s.ErrorPage503, defaultPage503}, {404, s.ErrorPage404, defaultPage404}} {
		page := p.def
		if p.page != nil {
			page = string(p.page)
		}
		fmt.Fprintf(w, "    http-error status %d content-type \"text/html; charset=utf-8\" hdr Cache-Control no-store string %s\n", p.code, quoteCfg(page))
	}
}

// renderLookup finds a request's backend into txn.be: the maps in
// dcm.HTTPMapTables order, the first that matches wins (frontendRouting).
// The key is the lower-cased Host header without its port, then the path
// (without the query string).
func renderLookup(w *bytes.Buffer) {
	w.WriteString("    http-request set-var(txn.path) path\n")
	w.WriteString("    http-request set-var(txn.host) req.hdr(host),field(1,:),lower\n")
	w.WriteString("    http-request set-var(txn.key) var(txn.host),concat(,txn.path)\n")
	fmt.Fprintf(w, "    http-request set-var(txn.wkey) var(txn.host),%s,concat(,txn.path)\n", wildcardDomain)
	for i, r := range frontendRouting() {
		cond := ""
		if i > 0 {
			cond = " if !{ var(txn.be) -m found }"
		}
		fmt.Fprintf(w, "    http-request set-var(txn.be) var(%s),%s(%s)%s\n", r.keyVar, r.conv, r.file, cond)
	}
}

// renderHygiene is what every request gets first, as in OpenShift's
// router: the Proxy header goes (httpoxy). An empty Content-Length needs
// no rule: HAProxy's parser answers it 400.
func renderHygiene(w *bytes.Buffer) {
	w.WriteString("    http-request del-header Proxy\n")
}

// renderForwarded renders the forwarded headers of OpenShift's router,
// once per policy, each rule guarded by the route's policy in txn.fwd:
// the forwarded setting map's value for txn.be, else the default. The
// headers say what HAProxy saw: src and dst_port are the client's and
// the port it reached (fe_https reads them from fe_tls's PROXY header).
// X-Forwarded-Proto is set to the frontend's scheme whatever the policy
// on HTTPS, and on plain HTTP deleted under never, so a client's own
// "https" never reaches a pod over plain HTTP.
func renderForwarded(w *bytes.Buffer, def dcm.ForwardedPolicy, https bool) {
	if def == "" {
		def = dcm.ForwardAppend
	}
	fmt.Fprintf(w, "    http-request set-var(txn.fwd) var(txn.be),map_str(%s) if { var(txn.be) -m found }\n", MapFile(dcm.MapForwarded))
	fmt.Fprintf(w, "    http-request set-var(txn.fwd) str(%s) if !{ var(txn.fwd) -m found }\n", def)
	on := "!{ var(txn.fwd) -m str never }"
	if https {
		w.WriteString("    http-request set-header X-Forwarded-Proto https\n")
	} else {
		w.WriteString("    http-request del-header X-Forwarded-Proto if { var(txn.fwd) -m str never }\n")
		fmt.Fprintf(w, "    http-request set-header X-Forwarded-Proto http if %s\n", on)
	}
	w.WriteString("    http-request del-header X-Forwarded-For if { var(txn.fwd) -m str replace }\n")
	w.WriteString("    http-request del-header Forwarded if { var(txn.fwd) -m str replace }\n")
	w.WriteString("    http-request add-header X-Forwarded-For %[src] if { var(txn.fwd) -m str append replace }\n")
	w.WriteString("    http-request add-header X-Forwarded-For %[src] if { var(txn.fwd) -m str if-none } !{ req.hdr(x-forwarded-for) -m found }\n")
	fmt.Fprintf(w, "    http-request set-header X-Forwarded-Host %%[req.hdr(host)] if %s\n", on)
	fmt.Fprintf(w, "    http-request set-header X-Forwarded-Port %%[dst_port] if %s\n", on)
	if https {
		fmt.Fprintf(w, "    http-request set-header X-Forwarded-Proto-Version h2 if { ssl_fc_alpn -i h2 } %s\n", on)
	}
	fwd := `for=%[src];host=%[req.hdr(host)];proto=%[req.hdr(X-Forwarded-Proto)];proto-version=\"%[req.hdr(X-Forwarded-Proto-Version)]\"`
	fmt.Fprintf(w, "    http-request add-header Forwarded %s if { var(txn.fwd) -m str append replace }\n", fwd)
	fmt.Fprintf(w, "    http-request add-header Forwarded %s if { var(txn.fwd) -m str if-none } !{ req.hdr(forwarded) -m found }\n", fwd)
}

// renderHSTS sends a route's Strict-Transport-Security header on its HTTPS
// responses, from the hsts setting map (HTTPS only: fe_https renders it).
func renderHSTS(w *bytes.Buffer) {
	m := "var(txn.be),map_str(" + MapFile(dcm.MapHSTS) + ")"
	fmt.Fprintf(w, "    http-response set-header Strict-Transport-Security %%[%s] if { %s -m found }\n", m, m)
}

// routeTimeouts are the timeouts a route sets from its setting maps, and
// the variable the HTTP frontends read each into.
var routeTimeouts = []struct {
	name, variable string
	table          dcm.MapTable
}{{"server", "txn.timeout_server", dcm.MapTimeoutServer}, {"tunnel", "txn.timeout_tunnel", dcm.MapTimeoutTunnel}}

// renderRouteTimeoutVars reads a route's timeouts from the timeout setting
// maps, keyed by txn.be, into variables, in the HTTP frontends
// (renderRouteRules): set-var sets nothing for a route without an entry.
func renderRouteTimeoutVars(w *bytes.Buffer) {
	for _, t := range routeTimeouts {
		fmt.Fprintf(w, "    http-request set-var(%s) var(txn.be),map_str(%s)\n", t.variable, MapFile(t.table))
	}
}

// renderRouteTimeouts sets the timeouts from those variables, in every
// HTTP backend, spares included: HAProxy 2.6 takes set-timeout in
// backends only. Without a condition, as a guard ACL costs about 1 KB per
// backend: set-timeout with an expression that yields nothing, as an
// absent variable does, leaves the timeout as it was (TestRouteTimeouts).
func renderRouteTimeouts(w *bytes.Buffer) {
	for _, t := range routeTimeouts {
		fmt.Fprintf(w, "    http-request set-timeout %s var(%s)\n", t.name, t.variable)
	}
}

// ValidateTimeouts checks the default timeouts.
func (s Settings) ValidateTimeouts() error { return s.Timeouts.validate() }

// validateHTTP checks the HTTP settings.
func (s Settings) validateHTTP() error {
	if s.MaxConn < 0 {
		return fmt.Errorf("maxconn %d: negative", s.MaxConn)
	}
	if err := dcm.ValidateForwarded("forwarded headers", s.Forwarded); err != nil {
		return fmt.Errorf("default forwarded headers: %w", err)
	}
	if err := s.Timeouts.validate(); err != nil {
		return err
	}
	if err := validateErrorPage("error page 503", s.ErrorPage503); err != nil {
		return err
	}
	if err := validateErrorPage("error page 404", s.ErrorPage404); err != nil {
		return err
	}
	return nil
}

// renderTCPTimeouts writes a passthrough route's own timeouts into its
// backend: HAProxy 2.6 has no rule that sets a TCP stream's, so a change
// reloads (dcm.ReasonPassthroughTimeout).
func renderTCPTimeouts(w *bytes.Buffer, r dcm.Route) {
	server, tunnel := r.TCPTimeouts()
	if server > 0 && server <= dcm.MaxTimeoutMillis {
		fmt.Fprintf(w, "    timeout server %dms\n", server)
	}
	if tunnel > 0 && tunnel <= dcm.MaxTimeoutMillis {
		fmt.Fprintf(w, "    timeout tunnel %dms\n", tunnel)
	}
}
