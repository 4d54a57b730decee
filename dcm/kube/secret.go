package kube

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"

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
