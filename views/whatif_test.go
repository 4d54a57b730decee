package views

import (
	"reflect"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

func TestCertRoutes(t *testing.T) {
	edge := func(ns, name, host, secret string) dcm.Backend {
		r := dcm.Route{Namespace: ns, Name: name, Kind: dcm.KindEdge, Host: host, Path: "/", TLS: &dcm.TLSRef{Secret: secret, Version: "0a"}}
		return dcm.Backend{Name: r.BackendName(), Route: r}
	}
	plain := dcm.Backend{Name: "be_http:demo:api", Route: dcm.Route{Namespace: "demo", Name: "api", Kind: dcm.KindHTTP, Host: "api.example", Path: "/"}}
	retiring := edge("demo", "old", "old.example", "demo/old-tls")
	retiring.Retiring = true
	// Any kind whose route carries a certificate of its own is offered,
	// not only edge.
	other := edge("demo", "re", "re.example", "demo/re-tls")
	other.Route.Kind = dcm.KindReencrypt
	other.Name = other.Route.BackendName()
	tests := []struct {
		name     string
		backends []*dcm.Backend
		want     []CertRoute
	}{
		{"none", dcm.BackendList(plain), nil},
		{"an edge route", dcm.BackendList(plain, edge("demo", "web", "web.example", "demo/web-tls")),
			[]CertRoute{{Backend: "be_edge:demo:web", HostPath: "web.example/", Secret: "demo/web-tls", Sharing: 1}}},
		{"one Secret for two hosts, a retiring backend left out, sorted by backend",
			dcm.BackendList(edge("shop", "b", "b.example", "shop/tls"), retiring, other, edge("shop", "a", "a.example", "shop/tls")),
			[]CertRoute{
				{Backend: "be_edge:shop:a", HostPath: "a.example/", Secret: "shop/tls", Sharing: 2},
				{Backend: "be_edge:shop:b", HostPath: "b.example/", Secret: "shop/tls", Sharing: 2},
				{Backend: "be_reencrypt:demo:re", HostPath: "re.example/", Secret: "demo/re-tls", Sharing: 1},
			}},
	}
	for _, tt := range tests {
		if got := CertRoutes(tt.backends); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
	shared := CertRoute{Backend: "be_edge:shop:a", HostPath: "a.example/", Secret: "shop/tls", Sharing: 2}
	if got, want := shared.Note(), "The certificate of a.example/ (and of 1 other route) comes from Secret shop/tls. "+
		"This preview is not applied from here: to rotate it, update that Secret; dcm then does what the preview shows."; got != want {
		t.Errorf("the note reads %q, want %q", got, want)
	}
}
