package haproxy

import (
	"fmt"
	"sync"

	"github.com/dcm-router/dcm/dcm"
)

// pemCache holds the PEM of the certificate or CA versions HAProxy was
// handed, as the bytes of their files. The engine applies and writes a
// state after the source has moved on: a route rejected, or its Secret
// rotated twice, between the plan and the write drops the version from
// the source while HAProxy still serves it and the files must still name
// it. So what the driver read once it keeps until a rendered state no
// longer names it. The bytes are shared with the Files written, not
// copied.
type pemCache struct {
	mu    sync.Mutex
	byKey map[string][]byte // normalized PEM and a final newline
}

// get is the PEM of key, read by load the first time.
func (c *pemCache) get(key string, load func() ([]byte, error)) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.byKey[key]; ok {
		return p, nil
	}
	b, err := load()
	if err != nil {
		return nil, err
	}
	p, err := NormalizePEM(b)
	if err != nil {
		return nil, err
	}
	if c.byKey == nil {
		c.byKey = map[string][]byte{}
	}
	c.byKey[key] = []byte(p + "\n")
	return c.byKey[key], nil
}

// keepOnly forgets every version keep does not name.
func (c *pemCache) keepOnly(keep map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.byKey {
		if !keep[k] {
			delete(c.byKey, k)
		}
	}
}

func certKey(c dcm.Cert) string { return c.Secret + "\x00" + c.Version }

// certPEM is the PEM file of a certificate version.
func (d *Driver) certPEM(c dcm.Cert) ([]byte, error) {
	if c.IsDefault() && c.SelfSigned() {
		return d.certPEMs.get(certKey(c), func() ([]byte, error) { return d.defaultCert, nil })
	}
	return d.certPEMs.get(certKey(c), func() ([]byte, error) {
		if d.cfg.Certs == nil {
			return nil, fmt.Errorf("certificate of %s (%s): no certificate source", c.Host, c.Secret)
		}
		b, err := d.cfg.Certs.CertPEM(c.Secret, c.Version)
		if err != nil {
			return nil, fmt.Errorf("certificate of %s: %w", c.Host, err)
		}
		return b, nil
	})
}

// caPEM is the PEM file of a CA version.
func (d *Driver) caPEM(u dcm.UpstreamTLS) ([]byte, error) {
	p, err := d.caPEMs.get(u.Version, func() ([]byte, error) {
		if d.cfg.CAs == nil {
			return nil, fmt.Errorf("no CA source")
		}
		return d.cfg.CAs.CAPEM(u.CA, u.Version)
	})
	if err != nil {
		return nil, fmt.Errorf("CA %s: %w", u.CA, err)
	}
	return p, nil
}

// pemFiles adds to f the certificate and CA files st names, and forgets
// the versions it no longer does when st is the state last applied: the
// engine writes files behind its syncs, so an older state's write must
// not forget a version that a later Apply loaded for its own state.
func (d *Driver) pemFiles(f *Files, st dcm.State) error {
	latest := d.isLatest(st)
	cas := dcm.CAsOf(st.Backends)
	keepCAs := make(map[string]bool, len(cas))
	if len(cas) > 0 {
		f.CAs = make(map[string][]byte, len(cas))
	}
	for _, c := range cas {
		p, err := d.caPEM(c)
		if err != nil {
			return err
		}
		f.CAs[CAFile(c.Version)] = p
		keepCAs[c.Version] = true
	}
	if latest {
		d.caPEMs.keepOnly(keepCAs)
	}
	certs := dcm.CertsOf(st.Backends)
	keepCerts := make(map[string]bool, len(certs))
	if d.cfg.Settings.HTTPSBind != "" {
		f.Certs = make(map[string][]byte, len(certs)+1)
		def, err := d.certPEM(st.DefaultCert)
		if err != nil {
			return fmt.Errorf("default certificate: %w", err)
		}
		f.Certs[DefaultCertName] = def
		keepCerts[certKey(st.DefaultCert)] = true
		for _, c := range certs {
			if c.Bind != "" {
				continue // a Gateway listener's: gatewayPEMs
			}
			p, err := d.certPEM(c)
			if err != nil {
				return err
			}
			f.Certs[CertFile(c.Host)] = p
			keepCerts[certKey(c)] = true
		}
	}
	if err := d.gatewayPEMs(f, st, certs, keepCerts); err != nil {
		return err
	}
	if latest {
		d.certPEMs.keepOnly(keepCerts)
	}
	return nil
}
