package plan

import "github.com/dcm-router/dcm/dcm"

// Certificates of edge routes, one per SNI host, and of Gateway HTTPS
// listeners, one per bind and hostname (dcm.CertsOf). With runtime
// certificates a host's certificate is added before the maps route the host
// (so its first request already gets it) and removed after the maps stop
// routing it; a rotation is one SSL transaction. Without them any change
// reloads, so that the files and the process never disagree.

// certOps diffs the certificates of two states: adds and updates, and
// deletions, each sorted by host.
func certOps(actual, next dcm.State) (first, last []dcm.Op) {
	first = defaultCertOps(actual, next)
	before, after := dcm.CertsOf(actual.Backends), dcm.CertsOf(next.Backends)
	if len(before)+len(after) == 0 {
		return first, nil
	}
	was, is := dcm.CertBackends(actual.Backends), dcm.CertBackends(next.Backends)
	i, j := 0, 0
	for i < len(before) || j < len(after) {
		switch {
		case j >= len(after) || (i < len(before) && dcm.CertLess(before[i], after[j])):
			c := before[i]
			last = append(last, dcm.Op{Kind: dcm.OpCertDel, Backend: was[c.Key()], Cert: &c})
			i++
		case i >= len(before) || dcm.CertLess(after[j], before[i]):
			c := after[j]
			first = append(first, dcm.Op{Kind: dcm.OpCertAdd, Backend: is[c.Key()], Cert: &c})
			j++
		default:
			switch old, c := before[i], after[j]; {
			case old.H2 != c.H2:
				// A crt-list line's options are fixed when it is added:
				// the host's line is listed again with its new ALPN.
				first = append(first, dcm.Op{Kind: dcm.OpCertDel, Backend: was[c.Key()], Cert: &old},
					dcm.Op{Kind: dcm.OpCertAdd, Backend: is[c.Key()], Cert: &c})
			case old != c:
				first = append(first, dcm.Op{Kind: dcm.OpCertUpdate, Backend: is[c.Key()], Cert: &c})
			}
			i++
			j++
		}
	}
	return first, last
}

// caOps diffs the destination CA files of two states: the files new
// servers need, and those no server uses any more, each sorted by version.
// A file's content never changes (it is named by its version), so there is
// no update.
func caOps(actual, next dcm.State) (first, last []dcm.Op) {
	before, after := dcm.CAsOf(actual.Backends), dcm.CAsOf(next.Backends)
	if len(before)+len(after) == 0 {
		return nil, nil
	}
	was, is := caBackends(actual.Backends), caBackends(next.Backends)
	i, j := 0, 0
	for i < len(before) || j < len(after) {
		switch {
		case j >= len(after) || (i < len(before) && before[i].Version < after[j].Version):
			c := before[i]
			last = append(last, dcm.Op{Kind: dcm.OpCADel, Backend: was[c.Version], Upstream: &c})
			i++
		case i >= len(before) || after[j].Version < before[i].Version:
			c := after[j]
			first = append(first, dcm.Op{Kind: dcm.OpCAAdd, Backend: is[c.Version], Upstream: &c})
			j++
		default:
			i++
			j++
		}
	}
	return first, last
}

// caBackends names, by CA version, the first backend (by name) whose
// servers use it: CA ops name it, so filtered feeds and the event log show
// them with a route they are for.
func caBackends(backends []*dcm.Backend) map[string]string {
	out := map[string]string{}
	for _, b := range backends {
		for _, s := range b.Servers {
			if u := s.Upstream; u != nil && u.Version != "" {
				if _, ok := out[u.Version]; !ok {
					out[u.Version] = b.Name
				}
			}
		}
	}
	return out
}

// IsCertOp reports whether an op changes a certificate rather than a server
// or a map.
func IsCertOp(o dcm.Op) bool {
	return o.Kind == dcm.OpCertAdd || o.Kind == dcm.OpCertUpdate || o.Kind == dcm.OpCertDel ||
		o.Kind == dcm.OpCAAdd || o.Kind == dcm.OpCADel
}
