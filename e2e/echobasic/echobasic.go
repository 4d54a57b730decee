// Package echobasic answers as the Gateway API conformance suite's backend
// image, echo-basic (sigs.k8s.io/gateway-api/conformance/echo-basic), does:
// the suite reads what its requests looked like on arrival from the JSON
// these servers answer with, so field names, shapes and the special paths
// must be the image's own. The test kubelet (e2e/kapitest) runs a pod whose
// image is echo-basic with this package instead of the container.
//
// Written from a reading of echo-basic's source at v1.6.3: an HTTP/1.1
// server (HTTP_PORT, default 3000), an h2c one (H2C_PORT, 3001) and, when
// TLS_SERVER_CERT and TLS_SERVER_PRIVKEY name files, an HTTPS one
// (HTTPS_PORT, 8443), the process's environment giving the pod's identity.
// Its gRPC echo mode (GRPC_ECHO_SERVER) is ServeGRPC, its TCP echo
// (TCP_ECHO_SERVER: TCP_PORT, TLS_PORT, TLS_SERVER_PRIV_KEY) ServeTCP; its
// UDP echo is not here: Config.Mode names it so that the kubelet can say
// so.
package echobasic

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"strings"
)

// Mode is which of echo-basic's servers a container runs, chosen by its
// environment.
type Mode string

// The modes; ModeHTTP is served by Serve, ModeGRPC by ServeGRPC.
const (
	ModeHTTP Mode = "http"
	ModeGRPC Mode = "GRPC_ECHO_SERVER"
	ModeTCP  Mode = "TCP_ECHO_SERVER"
	ModeUDP  Mode = "UDP_ECHO_SERVER"
)

// Identity is where the server runs, echoed inline in every answer.
type Identity struct {
	Namespace string `json:"namespace"`
	Ingress   string `json:"ingress"`
	Service   string `json:"service"`
	Pod       string `json:"pod"`
}

// Config is one echo-basic container, read from its environment.
type Config struct {
	Mode     Mode
	Identity Identity
	// HTTPPort, H2CPort and HTTPSPort are the ports to listen on; HTTPPort
	// is also echoed as httpPort.
	HTTPPort, H2CPort, HTTPSPort string
	// CertFile, KeyFile and ClientCAFile are paths inside the container;
	// HTTPS is served only when the first two are set.
	CertFile, KeyFile, ClientCAFile string
}

// FromEnv reads a container's environment as echo-basic's main does.
func FromEnv(env map[string]string) Config {
	or := func(k, def string) string {
		if v := env[k]; v != "" {
			return v
		}
		return def
	}
	c := Config{
		Mode: ModeHTTP,
		Identity: Identity{
			Namespace: env["NAMESPACE"],
			Ingress:   env["INGRESS_NAME"],
			Service:   env["SERVICE_NAME"],
			Pod:       env["POD_NAME"],
		},
		HTTPPort:     or("HTTP_PORT", "3000"),
		H2CPort:      or("H2C_PORT", "3001"),
		HTTPSPort:    or("HTTPS_PORT", "8443"),
		CertFile:     env["TLS_SERVER_CERT"],
		KeyFile:      env["TLS_SERVER_PRIVKEY"],
		ClientCAFile: env["TLS_CLIENT_CACERTS"],
	}
	// echo-basic checks these in this order, and any non-empty value counts.
	for _, m := range []Mode{ModeGRPC, ModeTCP, ModeUDP} {
		if env[string(m)] != "" {
			c.Mode = m
			break
		}
	}
	if c.Mode == ModeTCP {
		// The TCP echo's own variables (echo-basic's tcpserver): its
		// plain port in HTTPPort, its TLS port in HTTPSPort.
		c.HTTPPort, c.HTTPSPort, c.KeyFile = or("TCP_PORT", "3000"), or("TLS_PORT", "8443"), env["TLS_SERVER_PRIV_KEY"]
	}
	return c
}

// HTTPS reports whether the container serves HTTPS.
func (c Config) HTTPS() bool { return c.CertFile != "" && c.KeyFile != "" }

// ReadFile reads a file of the container's filesystem (its volumes).
type ReadFile func(path string) ([]byte, error)

// TLSConfig is the HTTPS server's configuration: the certificate and key
// of CertFile and KeyFile and, when ClientCAFile is set, client
// certificates verified against it if the client sends one.
func (c Config) TLSConfig(read ReadFile) (*tls.Config, error) {
	certPEM, err := read(c.CertFile)
	if err != nil {
		return nil, fmt.Errorf("echo-basic certificate: %w", err)
	}
	keyPEM, err := read(c.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("echo-basic key: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("echo-basic certificate %s, key %s: %w", c.CertFile, c.KeyFile, err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}}
	if c.ClientCAFile != "" {
		ca, err := read(c.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("echo-basic client CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("echo-basic client CA %s: no PEM certificate", c.ClientCAFile)
		}
		cfg.ClientAuth, cfg.ClientCAs = tls.VerifyClientCertIfGiven, pool
	}
	return cfg, nil
}

// String describes the container for logs.
func (c Config) String() string {
	if c.Mode == ModeTCP {
		s := []string{string(c.Mode), "tcp:" + c.HTTPPort}
		if c.HTTPS() {
			s = append(s, "tls:"+c.HTTPSPort)
		}
		return strings.Join(s, " ")
	}
	s := []string{string(c.Mode), "http:" + c.HTTPPort, "h2c:" + c.H2CPort}
	if c.HTTPS() {
		s = append(s, "https:"+c.HTTPSPort)
	}
	return strings.Join(s, " ")
}
