package kube

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"

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
	// X509KeyPair parses every certificate block, the key, and checks that
	// the key is the leaf's. Its error text names the problem, not the data.
	if _, err := tls.X509KeyPair(crt, key); err != nil {
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
