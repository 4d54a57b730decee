package haproxy

import "github.com/dcm-router/dcm/dcm"

// sameRendering reports whether two servers render the same server line.
func sameRendering(a, b dcm.Server) bool {
	return a.Name == b.Name && a.Addr == b.Addr && a.Port == b.Port && a.Weight == b.Weight &&
		a.State == b.State && a.Check == b.Check && a.Endpoint == b.Endpoint && sameUpstream(a.Upstream, b.Upstream) && a.Proto == b.Proto &&
		a.MaxConn == b.MaxConn && a.CheckInterMillis == b.CheckInterMillis
}

func sameUpstream(a, b *dcm.UpstreamTLS) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
