package views

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
)

func TestDisplayState(t *testing.T) {
	tests := []struct {
		state  dcm.AdminState
		health string
		want   string
	}{
		{dcm.StateReady, "UP", StateReady},
		{dcm.StateReady, "", StateReady},
		{dcm.StateReady, "DOWN", StateDown},
		{dcm.StateDrain, "DOWN", StateDrain},
		{dcm.StateDrain, "DRAIN", StateDrain},
		{dcm.StateMaint, "MAINT", StateMaint},
	}
	for _, tt := range tests {
		if got := DisplayState(dcm.Server{State: tt.state, Health: tt.health}); got != tt.want {
			t.Errorf("%s with health %q shows as %s, want %s", tt.state, tt.health, got, tt.want)
		}
	}
}

func TestFormats(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct{ got, want string }{
		{Uptime(time.Time{}, now), "–"},
		{Uptime(now.Add(-42*time.Second), now), "42s"},
		{Uptime(now.Add(-(3*time.Minute + 7*time.Second)), now), "3m 7s"},
		{Uptime(now.Add(-(5*time.Hour + 3*time.Minute)), now), "5h 3m"},
		{Uptime(now.Add(-(50 * time.Hour)), now), "2d 2h"},
		{Uptime(now.Add(time.Minute), now), "0s"},
		{Ratio(0, 0), "–"},
		{Ratio(3, 1), "75.0%"},
		{Ratio(2, 1), "66.7%"},
		{Seconds(0.0456), "46 ms"},
		{Seconds(12.34), "12.3 s"},
		{Address(dcm.Server{Addr: "10.0.0.1", Port: 8080}), "10.0.0.1:8080"},
		{Address(dcm.Server{Addr: "fd00::1", Port: 80}), "[fd00::1]:80"},
		{HealthText(dcm.Server{Health: "UP", Check: true}), "UP"},
		{HealthText(dcm.Server{Health: "UP"}), "UP (no check)"},
		{ObjectText(nil), ""},
		{ObjectText(&dcm.ObjectRef{Kind: "HAProxy"}), "HAProxy"},
		{ObjectText(&dcm.ObjectRef{Kind: "Ingress", Namespace: "demo", Name: "web"}), "Ingress demo/web"},
		{Lines(""), "0 lines"},
		{Lines("a\n"), "1 line"},
		{Lines("a\nb"), "2 lines"},
		{Workers(dcm.ReloadInfo{}), "–"},
		{Workers(dcm.ReloadInfo{OldPID: 10, NewPID: 12}), "10 → 12"},
		{BackendURL("be_http:demo:web"), "/backends/be_http:demo:web"},
		{ActionURL("be_http:demo:web", "web-1:http", "state"), "/api/v1/backends/be_http:demo:web/servers/web-1:http/state"},
		{InsecureText(dcm.Route{Kind: dcm.KindHTTP}), "–"},
		{InsecureText(dcm.Route{Kind: dcm.KindEdge}), "Allow"},
		{InsecureText(dcm.Route{Kind: dcm.KindEdge, Insecure: dcm.InsecureRedirect}), "Redirect 302"},
		{InsecureText(dcm.Route{Kind: dcm.KindReencrypt, Insecure: dcm.InsecureRedirect, RedirectCode: 308}), "Redirect 308"},
		{InsecureText(dcm.Route{Kind: dcm.KindEdge, Insecure: dcm.InsecureNone}), "None"},
		{InsecureText(dcm.Route{Kind: dcm.KindPassthrough}), "None"},
		{CertText(dcm.Route{Kind: dcm.KindHTTP}), "–"},
		{CertText(dcm.Route{Kind: dcm.KindEdge, TLS: &dcm.TLSRef{Secret: "demo/web-tls", Version: "0123456789abcdef0123"}}), "Secret demo/web-tls @0123456789ab"},
		{CertText(dcm.Route{Kind: dcm.KindEdge, TLS: &dcm.TLSRef{Secret: "demo/web-tls"}}), "Secret demo/web-tls (none valid: the default certificate is served)"},
		{CertText(dcm.Route{Kind: dcm.KindReencrypt, TLS: &dcm.TLSRef{Secret: dcm.RouteCertRef("shop", "api"), Version: "abc"}}), "inline in Route shop/api @abc"},
		{UpstreamText(dcm.Route{Kind: dcm.KindEdge}), "–"},
		{UpstreamText(dcm.Route{Kind: dcm.KindReencrypt, Upstream: &dcm.UpstreamTLS{CA: "secret:shop/ca", Version: "ffeeddccbbaa99887766", ServerName: "api.shop.svc"}}),
			"verify api.shop.svc against ca.crt of Secret shop/ca @ffeeddccbbaa"},
		{UpstreamText(dcm.Route{Kind: dcm.KindReencrypt, Upstream: &dcm.UpstreamTLS{CA: "route:shop/api", Version: "01", ServerName: "api.shop.svc"}}),
			"verify api.shop.svc against destinationCACertificate of Route shop/api @01"},
		{UpstreamText(dcm.Route{Kind: dcm.KindReencrypt, Upstream: &dcm.UpstreamTLS{CA: "file:default", ServerName: "api.shop.svc"}}),
			"verify api.shop.svc against --default-backend-ca-file (none valid: no server)"},
	}
	for i, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%d: %q, want %q", i, tt.got, tt.want)
		}
	}
}

func TestBackendFilter(t *testing.T) {
	web := dcm.Backend{Name: "be_http:demo:web", Route: dcm.Route{Namespace: "demo", Host: "web.example.com", Path: "/"},
		Servers: []dcm.Server{{State: dcm.StateReady, Health: "UP"}, {State: dcm.StateDrain}}}
	api := dcm.Backend{Name: "be_http:shop:api", Route: dcm.Route{Namespace: "shop", Host: "", Path: "/api"},
		Servers: []dcm.Server{{State: dcm.StateReady, Health: "DOWN"}}}
	tests := []struct {
		f    BackendFilter
		want string
	}{
		{BackendFilter{}, "web api"},
		{BackendFilter{Q: "EXAMPLE"}, "web"},
		{BackendFilter{Q: "*/api"}, "api"},
		{BackendFilter{Q: "  shop "}, "api"},
		{BackendFilter{Namespace: "demo"}, "web"},
		{BackendFilter{State: StateDrain}, "web"},
		{BackendFilter{State: StateDown}, "api"},
		{BackendFilter{State: StateMaint}, ""},
		{BackendFilter{Namespace: "demo", Q: "api"}, ""},
	}
	for _, tt := range tests {
		var got []string
		for _, b := range dcm.BackendList(web, api) {
			if tt.f.Match(b) {
				got = append(got, b.Name)
			}
		}
		var want []string
		for _, n := range strings.Fields(tt.want) {
			want = append(want, map[string]string{"web": web.Name, "api": api.Name}[n])
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%+v matches %v, want %v", tt.f, got, want)
		}
	}
}
