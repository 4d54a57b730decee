package dcm

import "slices"

// Equal reports whether two routes are the same in every field. The
// planner keeps a backend whose route did not change as the very backend
// it had (State shares it), so a field left out here would leave a
// route's change unseen: TestRouteEqualSeesEveryField changes each field.
func (r Route) Equal(o Route) bool {
	return r.Namespace == o.Namespace && r.Name == o.Name && r.Source == o.Source && r.Object == o.Object &&
		r.Kind == o.Kind && r.Host == o.Host && r.Path == o.Path && r.PathType == o.PathType &&
		slices.Equal(r.Services, o.Services) && samePointee(r.Workload, o.Workload) && r.Balance == o.Balance &&
		r.Check == o.Check && r.MaxConn == o.MaxConn && r.CheckInterMillis == o.CheckInterMillis &&
		samePointee(r.TLS, o.TLS) && samePointee(r.Upstream, o.Upstream) && r.Sticky == o.Sticky &&
		r.Insecure == o.Insecure && r.RedirectCode == o.RedirectCode && slices.Equal(r.Allowlist, o.Allowlist) &&
		samePointee(r.RateLimit, o.RateLimit) && r.HTTP == o.HTTP && r.Headers.equal(o.Headers) && r.Gateway.equal(o.Gateway)
}

// samePointee reports whether two pointers to comparable values are both
// nil or point to equal values.
func samePointee[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func (h *HeaderActions) equal(o *HeaderActions) bool {
	if h == nil || o == nil {
		return h == o
	}
	return slices.Equal(h.Request, o.Request) && slices.Equal(h.Response, o.Response)
}
