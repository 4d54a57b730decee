package kube

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/dcm-router/dcm/dcm"
)

// SecretCert checks a kubernetes.io/tls Secret the way HAProxy will load it
// (the certificate chain and the key parse and belong together) and returns
// the PEM HAProxy gets — certificate, then key — and its version: a hash of
// both, which is all the rest of dcm ever sees of the Secret. Errors carry
// field names and reasons, never the Secret's data.
func SecretCert(secret *corev1.Secret) (pem []byte, version string, err error) {
	if secret.Type != corev1.SecretTypeTLS {
		return nil, "", &dcm.InvalidError{Reason: dcm.RejectInvalidValue, Field: "type", Value: string(secret.Type)}
	}
	crt, key := secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey]
	if len(crt) == 0 {
		return nil, "", &dcm.InvalidError{Reason: dcm.RejectInvalidValue, Field: "data[" + corev1.TLSCertKey + "]", Value: "empty"}
	}
	if len(key) == 0 {
		return nil, "", &dcm.InvalidError{Reason: dcm.RejectInvalidValue, Field: "data[" + corev1.TLSPrivateKeyKey + "]", Value: "empty"}
	}
	if err := checkKeyPair(crt, key); err != nil {
		return nil, "", &dcm.InvalidError{Reason: dcm.RejectInvalidValue, Field: "data", Value: err.Error()}
	}
	pem = make([]byte, 0, len(crt)+len(key)+1)
	pem = append(pem, crt...)
	if crt[len(crt)-1] != '\n' {
		pem = append(pem, '\n')
	}
	pem = append(pem, key...)
	sum := sha256.Sum256(pem)
	return pem, hex.EncodeToString(sum[:16]), nil
}

// checkKeyPair checks a certificate chain and key as HAProxy loads them:
// X509KeyPair parses the key and the leaf and checks that they belong
// together, but leaves the rest of the chain unparsed, and HAProxy refuses
// a file with a broken intermediate. The errors name the problem, never
// the data.
func checkKeyPair(crt, key []byte) error {
	pair, err := tls.X509KeyPair(crt, key)
	if err != nil {
		return err
	}
	for i, der := range pair.Certificate[1:] {
		if _, err := x509.ParseCertificate(der); err != nil {
			return fmt.Errorf("certificate %d of the chain: %w", i+2, err)
		}
	}
	return nil
}

// CAKey is the key of a Secret that holds a destination CA, as
// cert-manager writes it into the kubernetes.io/tls Secrets it issues.
const CAKey = "ca.crt"

// SecretCA reads the destination CA of a reencrypt route from a Secret's
// ca.crt (ParseCA says what is accepted).
func SecretCA(secret *corev1.Secret) (pem []byte, version string, err error) {
	b := secret.Data[CAKey]
	if len(b) == 0 {
		return nil, "", &dcm.InvalidError{Reason: dcm.RejectInvalidValue, Field: "data[" + CAKey + "]", Value: "empty"}
	}
	v, err := ParseCA(b)
	if err != nil {
		var ie *dcm.InvalidError
		if errors.As(err, &ie) {
			ie.Field = "data[" + CAKey + "]"
		}
		return nil, "", err
	}
	return b, v, nil
}

// ParseCA checks a destination CA the way HAProxy will use it: PEM
// certificates only, at least one, every one a CA certificate (a leaf
// would verify nothing but itself, a key does not belong in a CA file).
// It returns the CA's version: a hash of the bytes. Errors name the
// problem, never the data.
func ParseCA(b []byte) (version string, err error) {
	rest, n := b, 0
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return "", &dcm.InvalidError{Reason: dcm.RejectInvalidValue, Field: "ca", Value: "a " + block.Type + " block, want CERTIFICATE only"}
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return "", &dcm.InvalidError{Reason: dcm.RejectInvalidValue, Field: "ca", Value: "certificate " + strconv.Itoa(n) + ": " + err.Error()}
		}
		if !c.BasicConstraintsValid || !c.IsCA {
			return "", &dcm.InvalidError{Reason: dcm.RejectInvalidValue, Field: "ca", Value: "certificate " + strconv.Itoa(n) + " is not a CA"}
		}
		n++
	}
	if n == 0 {
		return "", &dcm.InvalidError{Reason: dcm.RejectInvalidValue, Field: "ca", Value: "no PEM certificate"}
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16]), nil
}
