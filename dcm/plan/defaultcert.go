package plan

import "github.com/dcm-router/dcm/dcm"

// defaultCertOps rotates the default certificate: one SSL transaction on
// the file every HTTPS bind loads first, so hosts without a certificate of
// their own change with it and no bind is touched. It goes before the
// hosts' certificate ops, which never depend on it.
func defaultCertOps(actual, next dcm.State) []dcm.Op {
	if actual.DefaultCert == next.DefaultCert {
		return nil
	}
	c := next.DefaultCert
	c.Host = "" // the default is the Cert without a host
	return []dcm.Op{{Kind: dcm.OpCertUpdate, Cert: &c}}
}

// followDefaultCert is the default certificate after an applied event:
// the one its cert-update on the default installed, if any.
func followDefaultCert(cur dcm.Cert, ev dcm.Event) dcm.Cert {
	for _, o := range ev.Ops {
		if o.Kind == dcm.OpCertUpdate && o.Cert != nil && o.Cert.IsDefault() {
			cur = *o.Cert
		}
	}
	return cur
}
