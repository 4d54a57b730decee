package haproxy

import (
	"slices"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

// TestGatewayListenerIsolation: of the listeners of one bind, the most
// specific whose hostname takes a request's host is the only one whose
// routes it sees (the Gateway API's GatewayHTTPListenerIsolation): a
// route of a listener without hostname, or of a less specific wildcard,
// is not served to a host a more specific listener takes, even when its
// own hostnames take the host; another bind is not isolated by them; and
// a listener's routes going away lifts the isolation, without a reload.
func TestGatewayListenerIsolation(t *testing.T) {
	t.Parallel()
	const addr = "127.0.20.4"
	bind, other := addr+":18080", addr+":18081"
	url, otherURL := "http://"+bind, "http://"+other
	g := startGateway(t, addr, dcm.Desired{}, func(c *DriverConfig) {
		c.Settings.Gateway.HTTPPorts = []int{18080, 18081}
	})
	ep := func(n string) []dcm.Endpoint { return []dcm.Endpoint{gwPod(t, "127.0.0.1", n)} }
	on := func(b dcm.DesiredBackend, listener string) dcm.DesiredBackend {
		b.Route.Gateway.ListenerHostname = listener
		return b
	}
	// The conformance suite's listeners (gateway-http-listener-isolation
	// and its hostname-intersection variant): each route's hostnames are
	// the intersection of its own and its listener's.
	every := []string{"bar.com", "*.example.com", "*.foo.example.com", "abc.foo.example.com"}
	routes := []dcm.DesiredBackend{
		on(gwBackend("empty", bind, "1", nil, nil, ep("empty"), prefix("/empty-hostname")), ""),
		on(gwBackend("empty-all", bind, "1", every, nil, ep("empty-all"), prefix("/empty-all")), ""),
		on(gwBackend("wild", bind, "2", []string{"*.example.com"}, nil, ep("wild"), prefix("/wildcard-example-com")), "*.example.com"),
		on(gwBackend("wild-all", bind, "2", every[1:], nil, ep("wild-all"), prefix("/wild-all")), "*.example.com"),
		on(gwBackend("wild-foo", bind, "3", []string{"*.foo.example.com"}, nil, ep("wild-foo"), prefix("/wildcard-foo-example-com")), "*.foo.example.com"),
		on(gwBackend("abc", bind, "4", []string{"abc.foo.example.com"}, nil, ep("abc"), prefix("/abc-foo-example-com")), "abc.foo.example.com"),
	}
	// Another bind's listener without hostname: not isolated by these.
	routes = append(routes[:4], on(gwBackend("other", other, "1", nil, nil, ep("other"), prefix("/")), ""), routes[4], routes[5])
	g.apply(desiredOf(slices.Clone(routes)...))
	want := func(host, path, body string) gwReq {
		code := 200
		if body == "" {
			code = 404
		}
		return gwReq{url: url + path, host: host, code: code, body: body}
	}
	gwCheck(t, []gwReq{
		want("bar.com", "/empty-hostname", "empty"),
		want("bar.com", "/empty-all", "empty-all"),
		want("bar.com", "/wildcard-example-com", ""),
		want("bar.com", "/wild-all", ""),
		want("bar.example.com", "/wildcard-example-com", "wild"),
		want("bar.example.com", "/wild-all", "wild-all"),
		want("bar.example.com", "/empty-hostname", ""),
		want("bar.example.com", "/empty-all", ""),
		want("bar.foo.example.com", "/wildcard-foo-example-com", "wild-foo"),
		want("bar.foo.example.com", "/wildcard-example-com", ""),
		want("bar.foo.example.com", "/wild-all", ""),
		want("bar.foo.example.com", "/empty-hostname", ""),
		want("abc.foo.example.com", "/abc-foo-example-com", "abc"),
		want("abc.foo.example.com", "/wildcard-foo-example-com", ""),
		want("abc.foo.example.com", "/wild-all", ""),
		want("abc.foo.example.com", "/empty-all", ""),
		want("abc.foo.example.com", "/empty-hostname", ""),
		{url: otherURL + "/x", host: "abc.foo.example.com", code: 200, body: "other"},
	})

	// The *.foo.example.com and abc.foo.example.com listeners' routes go:
	// their hosts fall to *.example.com's routes.
	g.apply(desiredOf(slices.Clone(routes[:4])...))
	gwCheck(t, []gwReq{
		want("abc.foo.example.com", "/wild-all", "wild-all"),
		want("bar.foo.example.com", "/wildcard-example-com", "wild"),
		want("abc.foo.example.com", "/empty-all", ""),
		want("bar.com", "/empty-all", "empty-all"),
	})
}
