package haproxy

import (
	"strings"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

// TestRenderSticky: a sticky backend gets the dynamic cookie and a key
// derived from the secret and dcm's backend name, so the same route has the
// same key whether HAProxy knows it by its own name or a spare's; other
// backends get no cookie; toggling stickiness re-renders a cached backend.
func TestRenderSticky(t *testing.T) {
	srv := dcm.Server{Name: "s1", Endpoint: "s1", Addr: "10.0.0.1", Port: 80, Weight: 1, State: dcm.StateReady}
	sticky := route("ns", "web", "web.example", "/", dcm.PathPrefix)
	sticky.Sticky = true
	plain := route("ns", "shop", "shop.example", "/", dcm.PathPrefix)
	settings := testSettings
	settings.CookieSecret = "s3cret"
	key := CookieKey("s3cret", sticky.BackendName())
	if len(key) != 32 || strings.Trim(key, "0123456789abcdef") != "" {
		t.Fatalf("key %q: want 32 hex digits", key)
	}
	if key == CookieKey("other", sticky.BackendName()) || key == CookieKey("s3cret", plain.BackendName()) {
		t.Fatal("the key does not depend on both the secret and the backend")
	}

	r := NewRenderer(settings)
	f, err := r.Render(state(backendFor(sticky, srv), backendFor(plain, srv)))
	mustf(t, err, "render")
	cfg := string(f.Text())
	want := "backend " + sticky.BackendName() + "\n    balance roundrobin\n    cookie DCMSRV insert indirect nocache httponly dynamic\n    dynamic-cookie-key " + key + "\n"
	if !strings.Contains(cfg, want) {
		t.Errorf("no sticky section %q in\n%s", want, cfg)
	}
	if strings.Count(cfg, "cookie DCMSRV") != 1 {
		t.Errorf("cookie rendered for the plain backend too:\n%s", cfg)
	}
	wantMap := sticky.BackendName() + " " + dcm.DefaultCookieName(sticky) + "\n"
	if got := string(f.Maps[MapFile(dcm.MapCookieName)]); got != wantMap {
		t.Errorf("cookie_name map %q, want %q", got, wantMap)
	}

	slotted := backendFor(sticky, srv)
	slotted.Slot = "be_http:_pool:3"
	f, err = Render(settings, state(slotted))
	mustf(t, err, "render in a spare")
	if !strings.Contains(string(f.Text()), "backend be_http:_pool:3\n    balance roundrobin\n    cookie DCMSRV insert indirect nocache httponly dynamic\n    dynamic-cookie-key "+key+"\n") {
		t.Errorf("in a spare, the key differs or is missing:\n%s", f.Text())
	}

	sticky.Sticky = false
	f, err = r.Render(state(backendFor(sticky, srv), backendFor(plain, srv)))
	mustf(t, err, "render unsticky")
	if strings.Contains(string(f.Text()), "cookie "+CookieName) {
		t.Errorf("the cached sticky backend was not re-rendered:\n%s", f.Text())
	}
	if got := string(f.Maps[MapFile(dcm.MapCookieName)]); got != "" {
		t.Errorf("the cached maps were not re-rendered: cookie_name %q", got)
	}
}

func TestCommandForDynamicCookie(t *testing.T) {
	c, err := CommandFor(dcm.Op{Kind: dcm.OpDynamicCookie, Backend: "be_http:ns:web", Slot: "be_http:_pool:2", Server: "web-1:http"}, HTTP2{})
	mustf(t, err, "command")
	if got, want := c.String(), "enable dynamic-cookie backend be_http:_pool:2"; got != want {
		t.Errorf("command %q, want %q", got, want)
	}
	if _, err := CommandFor(dcm.Op{Kind: dcm.OpDynamicCookie, Backend: "be_http:ns:web x", Server: "web-1:http"}, HTTP2{}); err == nil {
		t.Error("a backend name with a space was accepted")
	}
}

// TestStickySpare: a free sticky spare is rendered with the cookie and no
// key; when a route takes it, the key set at runtime is the one a reload
// renders for the route.
func TestStickySpare(t *testing.T) {
	settings := testSettings
	settings.CookieSecret = "s3cret"
	f, err := Render(settings, dcm.State{Pool: []string{"be_http:_pool:1", "be_sticky:_pool:1"}})
	mustf(t, err, "render")
	cfg := string(f.Text())
	if !strings.Contains(cfg, "backend be_sticky:_pool:1\n    balance roundrobin\n    cookie DCMSRV insert indirect nocache httponly dynamic\n") ||
		strings.Contains(cfg, "dynamic-cookie-key") || strings.Count(cfg, "cookie DCMSRV") != 1 {
		t.Errorf("spares rendered as\n%s", cfg)
	}
	cmds, err := CookieKeyCommands(dcm.Op{Kind: dcm.OpCookieKey, Backend: "be_http:ns:web", Slot: "be_sticky:_pool:1"}, "s3cret")
	mustf(t, err, "commands")
	want := []string{
		"set dynamic-cookie-key backend be_sticky:_pool:1 " + CookieKey("s3cret", "be_http:ns:web"),
		"enable dynamic-cookie backend be_sticky:_pool:1",
	}
	if len(cmds) != 2 || cmds[0].String() != want[0] || cmds[1].String() != want[1] {
		t.Errorf("commands %v, want %v", cmds, want)
	}
	if _, err := CommandFor(dcm.Op{Kind: dcm.OpCookieKey, Backend: "be_http:ns:web", Slot: "be_sticky:_pool:1"}, HTTP2{}); err == nil {
		t.Error("CommandFor made a cookie-key command without the secret")
	}
}
