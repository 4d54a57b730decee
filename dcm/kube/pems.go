package kube

import (
	"fmt"
	"sync"
)

// PEMStore is the way PEM leaves dcm's Kubernetes cache for HAProxy: the
// certificate and key of each Secret (or Route) with an edge certificate,
// and each destination CA of reencrypt routes, by the version the model
// names. The Source keeps them here as it converts; the HAProxy driver
// reads them (haproxy.CertSource, haproxy.CASource) when it applies a
// state naming a version. It is the only place dcm keeps a key.
//
// It is its own object, made before the driver and the Source, so that
// the driver (built before the engine it serves) and the Source (built
// after the engine it reports to) share it without either being handed
// to the other late.
type PEMStore struct {
	// mu is a leaf lock: the Source takes it under its syncMu and the
	// driver under whatever it holds, so nothing is called while holding it.
	mu    sync.Mutex
	certs pemVersions // by Secret "ns/name", or "route:ns/name"
	cas   pemVersions // by CA source, dcm.UpstreamTLS.CA
}

// NewPEMStore returns an empty store.
func NewPEMStore() *PEMStore {
	return &PEMStore{certs: pemVersions{}, cas: pemVersions{}}
}

// CertPEM hands the HAProxy driver the certificate and key of a Secret's
// version (the newest or the one before).
func (p *PEMStore) CertPEM(secret, version string) ([]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pem, ok := p.certs.find(secret, version); ok {
		return pem, nil
	}
	return nil, fmt.Errorf("kube: no certificate of Secret %s at version %.12s", secret, version)
}

// CAPEM hands the HAProxy driver the PEM of a destination CA's version.
func (p *PEMStore) CAPEM(ca, version string) ([]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pem, ok := p.cas.find(ca, version); ok {
		return pem, nil
	}
	return nil, fmt.Errorf("kube: no CA %s at version %.12s", ca, version)
}

func (p *PEMStore) keepCert(secret, version string, pem []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.certs.keep(secret, version, pem)
}

func (p *PEMStore) keepCA(ca, version string, pem []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cas.keep(ca, version, pem)
}

// newestCert is the version of a Secret's newest valid certificate ("" if
// none): what its hosts keep serving when the Secret turns invalid.
func (p *PEMStore) newestCert(secret string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.certs.newest(secret)
}

// newestCA is newestCert for a destination CA.
func (p *PEMStore) newestCA(ca string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cas.newest(ca)
}

// forget drops a certificate and a CA no route uses any more.
func (p *PEMStore) forget(cert, ca string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.certs, cert)
	delete(p.cas, ca)
}

// pemVersions holds, by key, the PEM of its newest versions, newest first
// and at most two: the driver may still apply a plan made with the one
// before.
type pemVersions map[string][]versionedPEM

type versionedPEM struct {
	version string
	pem     []byte
}

func (v pemVersions) keep(key, version string, pem []byte) {
	old := v[key]
	if len(old) > 0 && old[0].version == version {
		return
	}
	v[key] = append([]versionedPEM{{version: version, pem: pem}}, old[:min(len(old), 1)]...)
}

func (v pemVersions) find(key, version string) ([]byte, bool) {
	for _, p := range v[key] {
		if p.version == version {
			return p.pem, true
		}
	}
	return nil, false
}

func (v pemVersions) newest(key string) string {
	if vs := v[key]; len(vs) > 0 {
		return vs[0].version
	}
	return ""
}
