package haproxy

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
)

// TLS listeners (TLSRoutes, passthrough) share the HTTPS ports with HTTPS
// listeners: the Gateway API lets both use 443, and HAProxy binds every
// Gateway address on every --gateway-https-ports port ahead of time, once
// (one bind per address and port). So one TCP frontend, fe_gw_tls, owns
// those binds, as fe_tls owns the Ingress HTTPS address (and OpenShift's
// router its public_ssl frontend): it waits for the ClientHello and the
// Lua action dcm_gateway_tls looks its server name up in the gateway map
// (the bind's lists, the passthrough routes' candidates). A passthrough
// route's connection goes to its TCP backend untouched; on a bind that
// serves passthrough routes an SNI none takes is refused; any other
// connection goes on, with its client's and its own address in a PROXY
// v2 header, to fe_gw_https over the bind's own local socket, where TLS
// ends with that bind's crt-list as before. The Lua of fe_gw_https reads
// the bind from the PROXY header's destination.

// gatewayTerminateBackend is the TCP backend that carries a bind's
// connections from fe_gw_tls to fe_gw_https. Its name is outside be_*:
// dcm never adds servers to it nor observes it.
func gatewayTerminateBackend(bind string) string { return "gw_https_" + bind }

// gatewaySocket is fe_gw_https's socket for one bind, next to the admin
// socket (like fe_https's).
func (s Settings) gatewaySocket(bind string) string {
	return filepath.Join(filepath.Dir(s.AdminSocket), "gw_"+strings.ReplaceAll(bind, ":", "_")+".sock")
}

// renderGatewayTLS writes fe_gw_tls and the backends to fe_gw_https.
func renderGatewayTLS(w *bytes.Buffer, s Settings) {
	binds := s.gatewayBinds(true)
	if len(binds) == 0 {
		return
	}
	w.WriteString("\nfrontend fe_gw_tls\n")
	w.WriteString("    mode tcp\n")
	for _, b := range binds {
		fmt.Fprintf(w, "    bind %s\n", b)
	}
	renderLogFrontend(w, s, true)
	fmt.Fprintf(w, "    tcp-request inspect-delay %s\n", helloWait)
	w.WriteString("    tcp-request content lua.dcm_gateway_tls if { req_ssl_hello_type 1 }\n")
	w.WriteString("    tcp-request content reject if { var(txn.gw_reject) -m found }\n")
	w.WriteString("    use_backend %[var(txn.be)] if { var(txn.be) -m found }\n")
	fmt.Fprintf(w, "    use_backend %s\n", gatewayTerminateBackend("%[dst]:%[dst_port]"))
	for _, b := range binds {
		fmt.Fprintf(w, "\nbackend %s\n", gatewayTerminateBackend(b))
		w.WriteString("    mode tcp\n")
		renderLogSilence(w, s)
		fmt.Fprintf(w, "    server fe_gw_https unix@%s send-proxy-v2\n", s.gatewaySocket(b))
	}
}
