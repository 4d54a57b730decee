package server

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/static"
)

// TestPages: each page answers, behind a session or token, as HTML nobody
// caches; filters work on the server; what Kubernetes wrote is escaped.
// The browser tests (e2e/browser) prove the pages with the real parts.
func TestPages(t *testing.T) {
	assets := static.New()
	tests := []struct {
		name, path string
		auth       bool
		code       int
		want       []string
		not        []string
		header     map[string]string
	}{
		{name: "a page without a session goes to the login", path: "/backends?q=web", code: 303,
			header: map[string]string{"Location": "/login?next=%2Fbackends%3Fq%3Dweb"}},
		{name: "overview", path: "/", auth: true, code: 200,
			want:   []string{`data-page="overview"`, `data-backend="be_http:demo:web"`, `data-backend="be_http:other:app"`, assets.URL("app.js"), assets.URL("dcm.css")},
			header: map[string]string{"Cache-Control": "no-store", "Content-Type": "text/html; charset=UTF-8"}},
		{name: "backends filtered by namespace", path: "/backends?namespace=other", auth: true, code: 200,
			want: []string{`<option value="other" selected>`, `data-backend="be_http:other:app"`},
			not:  []string{`data-backend="be_http:demo:web"`}},
		{name: "backends filtered by text", path: "/backends?q=DEMO", auth: true, code: 200,
			want: []string{`data-backend="be_http:demo:web"`}, not: []string{`data-backend="be_http:other:app"`}},
		{name: "an unknown state filter is ignored", path: "/backends?state=bogus", auth: true, code: 200,
			want: []string{`data-backend="be_http:demo:web"`, `data-backend="be_http:other:app"`}},
		{name: "one backend", path: "/backends/be_http:demo:web", auth: true, code: 200,
			want: []string{`<h1 class="mono">be_http:demo:web</h1>`, `id="confirm-dialog"`}},
		{name: "one backend, escaped path", path: "/backends/be_http%3Ademo%3Aweb", auth: true, code: 200,
			want: []string{`<h1 class="mono">be_http:demo:web</h1>`}},
		{name: "no such backend", path: "/backends/be_http:demo:nope", auth: true, code: 404,
			want: []string{"manages no backend be_http:demo:nope"}},
		{name: "events escape what Kubernetes wrote", path: "/events", auth: true, code: 200,
			want: []string{`data-type="rejected" data-seq="1"`, `path &#34;/a&lt;script&gt;alert(1)&lt;/script&gt;&#34;`},
			not:  []string{"<script>alert"}},
		{name: "events filtered by type", path: "/events?type=action", auth: true, code: 200,
			want: []string{`0</span> of the latest`}, not: []string{`data-type="rejected"`}},
		{name: "the what-if form offers a rotation", path: "/whatif", auth: true, code: 200,
			want: []string{`<select id="wi-cert" name="cert"><option value="">None</option> </select>`, `id="wi-cert-none"`}},
		{name: "a rotation of a route without a certificate", path: "/whatif?cert=be_http:demo:web", auth: true, code: 400},
		{name: "config", path: "/config", auth: true, code: 200,
			want: []string{"haproxy.cfg", "global", "Files equal runtime"}},
		{name: "a script", path: assets.URL("app.js"), code: 200, want: []string{"import"},
			header: map[string]string{"Content-Type": "text/javascript; charset=utf-8", "Cache-Control": "public, max-age=31536000, immutable"}},
	}
	eng := newFakeEngine(0, true)
	eng.hub.Publish(dcm.Event{Type: dcm.EventRejected, Object: &dcm.ObjectRef{Kind: "Ingress", Namespace: "demo", Name: "evil"},
		Reason: "invalid-path", Message: `invalid-path: path "/a<script>alert(1)</script>"`})
	h := New(Deps{Engine: eng, Gatherer: prometheus.NewRegistry(), Authenticator: SingleToken(token, "admin"),
		Authorizer: RoleAuthorizer{}, Log: slog.New(slog.DiscardHandler)})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, tt.path, nil)
			if tt.auth {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.code {
				t.Fatalf("HTTP %d, want %d: %s", rec.Code, tt.code, rec.Body.String())
			}
			body := rec.Body.String()
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("the page lacks %q", w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(body, n) {
					t.Errorf("the page has %q", n)
				}
			}
			for k, v := range tt.header {
				if got := rec.Header().Get(k); got != v {
					t.Errorf("%s: %q, want %q", k, got, v)
				}
			}
		})
	}
}
