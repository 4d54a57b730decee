package testkit

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// CA is a test certificate authority: leaves it signs are trusted by a
// client that uses Pool.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

// NewCA makes a fresh CA.
func NewCA(tb testing.TB) *CA {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(tb), Subject: pkix.Name{CommonName: "dcm test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &CA{cert: cert, key: key, pool: pool}
}

// Pool trusts the CA.
func (ca *CA) Pool() *x509.CertPool { return ca.pool }

// CertPEM is the CA's certificate, as a destination CA (ca.crt) holds it.
func (ca *CA) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw})
}

// Leaf is a certificate the CA signed for host: the leaf and its chain and
// key as PEM, and the key alone, as a kubernetes.io/tls Secret holds them.
type Leaf struct {
	Cert    *x509.Certificate
	CertPEM []byte
	KeyPEM  []byte
}

// PEM is the certificate followed by the key, as HAProxy loads it.
func (l Leaf) PEM() []byte { return append(append([]byte{}, l.CertPEM...), l.KeyPEM...) }

// Leaf signs a fresh certificate (new key, new serial) for host.
func (ca *CA) Leaf(tb testing.TB, host string) Leaf {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(tb), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		tb.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	return Leaf{Cert: cert,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})}
}

func serial(tb testing.TB) *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 100))
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// CertStore is a CertSource the test fills: PEMs by Secret and version.
type CertStore struct {
	mu sync.Mutex
	m  map[string][]byte
}

// Put stores a Secret's PEM and returns its version (a hash of it).
func (s *CertStore) Put(secret string, pemBytes []byte) string {
	sum := sha256.Sum256(pemBytes)
	v := hex.EncodeToString(sum[:16])
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string][]byte{}
	}
	s.m[secret+"@"+v] = bytes.Clone(pemBytes)
	return v
}

// Forget drops every version of a Secret, as dcm's source does when no
// route uses it any more.
func (s *CertStore) Forget(secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.m {
		if strings.HasPrefix(k, secret+"@") {
			delete(s.m, k)
		}
	}
}

// CertPEM implements the driver's CertSource.
func (s *CertStore) CertPEM(secret, version string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.m[secret+"@"+version]
	if !ok {
		return nil, fmt.Errorf("no certificate %s@%s", secret, version)
	}
	return b, nil
}

// CAPEM implements the driver's CASource: Put the CA under its source
// (UpstreamTLS.CA).
func (s *CertStore) CAPEM(ca, version string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.m[ca+"@"+version]
	if !ok {
		return nil, fmt.Errorf("no CA %s@%s", ca, version)
	}
	return b, nil
}

// ServedLeaf connects to addr with TLS for serverName, verifying against
// pool (nil: no verification, to see a default certificate), and returns
// the leaf the server presented.
func ServedLeaf(addr, serverName string, pool *x509.CertPool) (*x509.Certificate, error) {
	d := &tls.Dialer{Config: &tls.Config{ServerName: serverName, RootCAs: pool, MinVersion: tls.VersionTLS12, InsecureSkipVerify: pool == nil}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	cs := conn.(*tls.Conn).ConnectionState()
	return cs.PeerCertificates[0], nil
}

// HTTPSGet asks addr for https://host/path, verifying the certificate
// against pool with host as the server name, on a fresh connection, and
// returns the status, the body and the leaf served.
func HTTPSGet(addr, host, path string, pool *x509.CertPool) (int, string, *x509.Certificate, error) {
	return httpsGet(addr, host, path, &tls.Config{ServerName: host, RootCAs: pool, MinVersion: tls.VersionTLS12})
}

func httpsGet(addr, host, path string, cfg *tls.Config) (int, string, *x509.Certificate, error) {
	tr := &http.Transport{
		TLSClientConfig:   cfg,
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	resp, err := c.Get("https://" + host + path)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", nil, err
	}
	var leaf *x509.Certificate
	if resp.TLS != nil && len(resp.TLS.PeerCertificates) > 0 {
		leaf = resp.TLS.PeerCertificates[0]
	}
	return resp.StatusCode, string(b), leaf, nil
}

// StartTLSBackend is StartBackend speaking HTTPS with leaf: a pod that
// terminates TLS itself, for passthrough and reencrypt routes. It answers
// its name, as StartBackend does, after ?ms= milliseconds when asked.
func StartTLSBackend(tb testing.TB, ip, name string, leaf Leaf) Backend {
	tb.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		tb.Fatalf("listen on %s: %v", ip, err)
	}
	return ServeTLSBackend(tb, l, name, leaf)
}

// ServeTLSBackend is StartTLSBackend on a listener the caller opened (plain
// TCP; TLS is added here), as ServeBackend is StartBackend's.
func ServeTLSBackend(tb testing.TB, l net.Listener, name string, leaf Leaf) Backend {
	tb.Helper()
	cert, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
	if err != nil {
		l.Close()
		tb.Fatalf("TLS backend %s: %v", name, err)
	}
	return ServeBackend(tb, tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}), name)
}

// InsecureHTTPSGet is HTTPSGet without verifying the certificate, to see
// what a host gets when no route serves it (the default certificate).
func InsecureHTTPSGet(addr, host, path string) (int, string, *x509.Certificate, error) {
	return httpsGet(addr, host, path, &tls.Config{ServerName: host, InsecureSkipVerify: true, MinVersion: tls.VersionTLS12})
}
