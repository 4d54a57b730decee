package demo

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"time"
)

// certLifetime is long enough for any demo session and short enough that
// nobody mistakes the demo's certificates for ones to keep.
const certLifetime = 30 * 24 * time.Hour

// keyPair is a certificate and its key, PEM-encoded as a kubernetes.io/tls
// Secret holds them.
type keyPair struct {
	cert, key []byte
	parsed    *x509.Certificate
	signer    *ecdsa.PrivateKey
}

// newCA makes the demo's own certificate authority: it signs the pods'
// serving certificates, so that a reencrypt route can verify them against
// it as HAProxy would against a cluster's service CA.
func newCA(name string) (keyPair, error) {
	return issue(&x509.Certificate{
		Subject:               pkix.Name{CommonName: name},
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}, nil)
}

// newServing makes a serving certificate for hosts, signed by ca, or
// self-signed when ca is nil (the edge route's, as a user's own certificate
// would be without a CA behind it).
func newServing(ca *keyPair, hosts ...string) (keyPair, error) {
	return issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: hosts[0]},
		DNSNames:    hosts,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ca)
}

func issue(tmpl *x509.Certificate, ca *keyPair) (keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, fmt.Errorf("generate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return keyPair{}, fmt.Errorf("serial number: %w", err)
	}
	// Backdated a little, so that a clock a minute behind still accepts it.
	now := time.Now()
	tmpl.SerialNumber, tmpl.NotBefore, tmpl.NotAfter = serial, now.Add(-time.Hour), now.Add(certLifetime)
	parent, signer := tmpl, key
	if ca != nil {
		parent, signer = ca.parsed, ca.signer
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		return keyPair{}, fmt.Errorf("create certificate %s: %w", tmpl.Subject.CommonName, err)
	}
	parsed, err := x509.ParseCertificate(der)
	if err != nil {
		return keyPair{}, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return keyPair{}, err
	}
	return keyPair{
		cert:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		key:    pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		parsed: parsed, signer: key,
	}, nil
}
