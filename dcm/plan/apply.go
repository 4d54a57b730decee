package plan

import (
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/routing"
)

// DataPlane is what HAProxy holds: the servers of every backend by the name
// HAProxy knows it by (free spares with none), and the routing maps, sets
// of keys kept sorted by key (no lookup depends on their order). Which route a spare carries is dcm's knowledge, not HAProxy's.
type DataPlane struct {
	Servers map[string][]dcm.Server
	Maps    map[dcm.MapTable][]dcm.MapEntry
	// Certs are the edge certificates by SNI host; "" is the default one,
	// always there (default.pem), only ever updated.
	Certs map[string]dcm.Cert
	// CAs are the destination CA files of reencrypt routes, by version.
	CAs map[string]bool
}

// DataPlaneOf is the data plane a state describes.
func DataPlaneOf(st dcm.State) DataPlane {
	dp := DataPlane{Servers: make(map[string][]dcm.Server, len(st.Backends)+len(st.Pool)), Maps: routing.Tables(st.Backends)}
	for _, b := range st.Backends {
		dp.Servers[b.ProxyName()] = b.Servers
	}
	for _, name := range st.Pool {
		dp.Servers[name] = nil
	}
	dp.Certs = map[string]dcm.Cert{"": st.DefaultCert}
	for _, c := range dcm.CertsOf(st.Backends) {
		dp.Certs[c.Key()] = c
	}
	dp.CAs = map[string]bool{}
	for _, c := range dcm.CAsOf(st.Backends) {
		dp.CAs[c.Version] = true
	}
	return dp
}

// Apply predicts what HAProxy's data plane becomes when ops are applied to
// it, refusing what HAProxy refuses (adding a server twice, deleting one that
// is not in maint, touching one or a backend that does not exist). The
// planner's properties are stated with it.
func Apply(dp DataPlane, ops []dcm.Op) (DataPlane, error) {
	out := DataPlane{Servers: maps.Clone(dp.Servers), Maps: maps.Clone(dp.Maps), Certs: maps.Clone(dp.Certs), CAs: maps.Clone(dp.CAs)}
	if out.Certs == nil {
		out.Certs = map[string]dcm.Cert{}
	}
	if out.CAs == nil {
		out.CAs = map[string]bool{}
	}
	copied := make(map[string]bool)
	for n, op := range ops {
		if op.Kind == dcm.OpCAAdd || op.Kind == dcm.OpCADel {
			if err := applyCAOp(out.CAs, op); err != nil {
				return DataPlane{}, dcm.Wrap("op "+strconv.Itoa(n)+" ("+op.String()+")", err)
			}
			continue
		}
		if op.Kind == dcm.OpAddServer && op.Upstream != nil && !out.CAs[op.Upstream.Version] {
			// HAProxy looks for the file on disk, which is written only
			// after the batch: the CA must have been added first.
			return DataPlane{}, errors.New("op " + strconv.Itoa(n) + " (" + op.String() + "): no CA file " + dcm.Short(op.Upstream.Version, 12))
		}
		if IsCertOp(op) {
			if err := applyCertOp(out.Certs, op); err != nil {
				return DataPlane{}, dcm.Wrap("op "+strconv.Itoa(n)+" ("+op.String()+")", err)
			}
			continue
		}
		if op.Kind == dcm.OpMapReplace {
			entries, err := replaceMap(out.Maps[op.Map], op)
			if err != nil {
				return DataPlane{}, dcm.Wrap("op "+strconv.Itoa(n)+" ("+op.String()+")", err)
			}
			out.Maps[op.Map] = entries
			continue
		}
		name := op.ProxyName()
		servers, ok := out.Servers[name]
		if !ok {
			return DataPlane{}, errors.New("op " + strconv.Itoa(n) + " (" + op.String() + "): no such backend " + name)
		}
		if op.Kind == dcm.OpCookieKey {
			// A backend's key: nothing dcm models changes.
			continue
		}
		if !copied[name] {
			servers = slices.Clone(servers)
			copied[name] = true
		}
		servers, err := applyServerOp(servers, op)
		if err != nil {
			return DataPlane{}, dcm.Wrap("op "+strconv.Itoa(n)+" ("+op.String()+")", err)
		}
		out.Servers[name] = servers
	}
	return out, nil
}

// replaceMap applies a map-replace's changes to a map, refusing what
// HAProxy would refuse or get wrong: deleting an entry it lacks, setting
// a key it lacks (set map fails), adding one it holds (add map would hold
// it twice). The map is a set of keys, kept sorted as the renderer
// writes it.
func replaceMap(entries []dcm.MapEntry, op dcm.Op) ([]dcm.MapEntry, error) {
	if !slices.Contains(dcm.MapTables, op.Map) {
		return nil, errors.New("unknown map " + strconv.Quote(string(op.Map)))
	}
	byKey := make(map[string]dcm.MapEntry, len(entries))
	for _, e := range entries {
		byKey[e.Key] = e
	}
	for _, e := range op.Del {
		if byKey[e.Key] != e {
			return nil, errors.New("map " + string(op.Map) + " has no entry " + e.Key + " to delete")
		}
		delete(byKey, e.Key)
	}
	for _, e := range op.Set {
		if _, held := byKey[e.Key]; held == e.New {
			if e.New {
				return nil, errors.New("map " + string(op.Map) + " already holds " + e.Key + " to add")
			}
			return nil, errors.New("map " + string(op.Map) + " has no entry " + e.Key + " to set")
		}
		e.New = false
		byKey[e.Key] = e
	}
	out := slices.AppendSeq(make([]dcm.MapEntry, 0, len(byKey)), maps.Values(byKey))
	routing.SortEntries(out)
	return out, nil
}

func applyServerOp(servers []dcm.Server, op dcm.Op) ([]dcm.Server, error) {
	si, exists := slices.BinarySearchFunc(servers, op.Server, func(s dcm.Server, name string) int { return strings.Compare(s.Name, name) })
	if op.Kind == dcm.OpAddServer {
		if exists {
			return nil, errors.New("server already exists")
		}
		s := dcm.Server{
			Name: op.Server, Addr: op.Addr, Port: op.Port, Weight: op.Weight, State: dcm.StateMaint,
			Origin: dcm.OriginRuntime, Endpoint: op.Endpoint, Pod: op.Pod, Check: op.Check, MaxConn: op.MaxConn, CheckInterMillis: op.CheckInterMillis, Upstream: op.Upstream, Proto: op.Proto, Unobserved: true,
		}
		return slices.Insert(servers, si, s), nil
	}
	if !exists {
		return nil, errors.New("no such server")
	}
	s := &servers[si]
	switch op.Kind {
	case dcm.OpDelServer:
		if s.State != dcm.StateMaint {
			return nil, errors.New("only servers in maint can be deleted")
		}
		return slices.Delete(servers, si, si+1), nil
	case dcm.OpSetAddr:
		s.Addr, s.Port, s.Endpoint, s.Pod = op.Addr, op.Port, op.Endpoint, op.Pod
		s.Unobserved = true
	case dcm.OpSetState:
		s.State = op.State
		s.Unobserved = true
	case dcm.OpSetWeight:
		s.Weight = op.Weight
	case dcm.OpSetMaxConn:
		s.MaxConn = op.MaxConn
	case dcm.OpDynamicCookie:
		// HAProxy's cookie is a hash of the backend's key and the server's
		// address: nothing dcm models changes.
	case dcm.OpEnableHealth:
		if !s.Check {
			return nil, errors.New("server has no health check")
		}
	default:
		return nil, errors.New("unknown op " + strconv.Quote(string(op.Kind)))
	}
	return servers, nil
}

// applyCAOp refuses what HAProxy refuses: a CA file that exists, or
// deleting one that does not.
func applyCAOp(cas map[string]bool, op dcm.Op) error {
	if op.Upstream == nil || op.Upstream.Version == "" {
		return errors.New("no CA")
	}
	v := op.Upstream.Version
	switch op.Kind {
	case dcm.OpCAAdd:
		if cas[v] {
			return errors.New("CA file " + dcm.Short(v, 12) + " already exists")
		}
		cas[v] = true
	case dcm.OpCADel:
		if !cas[v] {
			return errors.New("no CA file " + dcm.Short(v, 12) + " to delete")
		}
		delete(cas, v)
	}
	return nil
}

// applyCertOp refuses what HAProxy refuses: a new cert that exists, an
// update or a deletion of one that does not.
func applyCertOp(certs map[string]dcm.Cert, op dcm.Op) error {
	if op.Cert == nil {
		return errors.New("no certificate")
	}
	key := op.Cert.Key()
	_, exists := certs[key]
	if op.Cert.IsDefault() && op.Kind != dcm.OpCertUpdate {
		return errors.New("the default certificate is only updated")
	}
	switch op.Kind {
	case dcm.OpCertAdd:
		if exists {
			return errors.New("certificate of " + key + " already exists")
		}
		certs[key] = *op.Cert
	case dcm.OpCertUpdate:
		if !exists {
			return errors.New("no certificate of " + key + " to update")
		}
		certs[key] = *op.Cert
	case dcm.OpCertDel:
		if !exists {
			return errors.New("no certificate of " + key + " to delete")
		}
		delete(certs, key)
	}
	return nil
}
