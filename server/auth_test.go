package server

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

const (
	adminToken  = "admin-0123456789abcdef"
	viewerToken = "viewer-0123456789abcdef"
)

// portalServer is the server with an admin and a read-only token.
func portalServer(t *testing.T) (*httptest.Server, *fakeEngine) {
	t.Helper()
	tokens, err := ParseTokens(strings.NewReader("# tokens\n" + adminToken + " admin alice\n" + viewerToken + " viewer victor\n"))
	if err != nil {
		t.Fatal(err)
	}
	eng := newFakeEngine(1, true)
	h := New(Deps{Engine: eng, Scaler: &fakeScaler{}, Gatherer: prometheus.NewRegistry(),
		Authenticator: tokens, Authorizer: RoleAuthorizer{}, Log: slog.New(slog.DiscardHandler)})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, eng
}

// browser is an HTTP client with cookies that does not follow redirects, so
// tests see where the server sends it.
func browser(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

var hiddenLogin = regexp.MustCompile(`name="login" value="([^"]+)"`)

// signIn goes through the login page as a browser does and returns the
// session's CSRF token.
func signIn(t *testing.T, c *http.Client, base, token string) string {
	t.Helper()
	resp, err := c.Get(base + "/login?next=/api/v1/whoami")
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp)
	m := hiddenLogin.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("login page has no form token:\n%s", body)
	}
	resp, err = c.PostForm(base+"/login", url.Values{"token": {token}, "login": {m[1]}, "next": {"/api/v1/whoami"}})
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/api/v1/whoami" {
		t.Fatalf("login: HTTP %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	var session *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == sessionCookie {
			session = ck
		}
	}
	if session == nil || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode {
		t.Fatalf("session cookie %+v: want HttpOnly and SameSite=Strict", session)
	}
	resp, err = c.Get(base + "/api/v1/whoami")
	if err != nil {
		t.Fatal(err)
	}
	who := readAll(t, resp)
	csrf := regexp.MustCompile(`"csrf":"([^"]+)"`).FindStringSubmatch(who)
	if csrf == nil {
		t.Fatalf("whoami after login: %s", who)
	}
	return csrf[1]
}

// call sends a JSON body with a bearer token ("" for none) and returns the
// response with its body read.
func call(t *testing.T, c *http.Client, method, url, token, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp, readAll(t, resp)
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAuthorization: reading and the refusals an admin gets from the
// handlers; who may act at all is TestEveryActionIsAuthorized's, for every
// route that changes something.
func TestAuthorization(t *testing.T) {
	srv, eng := portalServer(t)
	drain := "/api/v1/backends/be_http:demo:web/servers/web-1:http/state"
	tests := []struct {
		name   string
		method string
		path   string
		token  string
		body   string
		want   int
	}{
		{"no token: API", "GET", "/api/v1/snapshot", "", "", 401},
		{"no token: feed", "GET", "/api/v1/feed", "", "", 401},
		{"unknown token", "GET", "/api/v1/snapshot", "nope-0123456789abcdef", "", 401},
		{"viewer reads", "GET", "/api/v1/snapshot", viewerToken, "", 200},
		{"viewer reads events", "GET", "/api/v1/events?since=0", viewerToken, "", 200},
		{"admin: unknown backend", "POST", "/api/v1/backends/be_http:x:y/servers/s/state", adminToken, `{"state":"drain"}`, 404},
		{"admin: bad state", "POST", drain, adminToken, `{"state":"up"}`, 400},
		{"admin: bad weight", "POST", "/api/v1/backends/be_http:demo:web/servers/web-1:http/weight", adminToken, `{"weight":300}`, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(eng.actions)
			resp, body := call(t, http.DefaultClient, tt.method, srv.URL+tt.path, tt.token, tt.body)
			if resp.StatusCode != tt.want {
				t.Errorf("HTTP %d, want %d: %s", resp.StatusCode, tt.want, body)
			}
			if resp.StatusCode >= 400 && len(eng.actions) != before {
				t.Errorf("a refused request changed something: %v", eng.actions[before:])
			}
		})
	}
}

func TestSessionCSRFAndOrigin(t *testing.T) {
	srv, eng := portalServer(t)
	c := browser(t)
	csrf := signIn(t, c, srv.URL, adminToken)
	drain := srv.URL + "/api/v1/backends/be_http:demo:web/servers/web-1:http/state"

	post := func(form url.Values, header map[string]string) int {
		req, _ := http.NewRequest("POST", drain, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		return resp.StatusCode
	}
	tests := []struct {
		name   string
		form   url.Values
		header map[string]string
		want   int
	}{
		{"form post without CSRF token", url.Values{"state": {"drain"}}, nil, 403},
		{"form post with a wrong CSRF token", url.Values{"state": {"drain"}, "csrf": {"forged"}}, nil, 403},
		{"form post from a foreign origin", url.Values{"state": {"drain"}, "csrf": {csrf}}, map[string]string{"Origin": "http://evil.example"}, 403},
		{"form post with the CSRF token", url.Values{"state": {"drain"}, "csrf": {csrf}}, map[string]string{"Origin": srv.URL}, 303},
		{"script post with the header", url.Values{"state": {"maint"}}, map[string]string{"X-CSRF-Token": csrf}, 303},
	}
	for _, tt := range tests {
		before := len(eng.actions)
		if got := post(tt.form, tt.header); got != tt.want {
			t.Errorf("%s: HTTP %d, want %d", tt.name, got, tt.want)
		}
		if tt.want >= 400 && len(eng.actions) != before {
			t.Errorf("%s: a refused request changed something", tt.name)
		}
	}

	// Logging out ends the session on the server, not just in the browser.
	req, _ := http.NewRequest("POST", srv.URL+"/logout", strings.NewReader(url.Values{"csrf": {csrf}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout: HTTP %d", resp.StatusCode)
	}
	resp, err = c.Get(srv.URL + "/api/v1/whoami")
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("after logout: HTTP %d, want 401", resp.StatusCode)
	}
}

func TestLoginRefusals(t *testing.T) {
	srv, _ := portalServer(t)
	c := browser(t)
	// Without the login page's cookie (a form posted from another site).
	resp, err := c.PostForm(srv.URL+"/login", url.Values{"token": {adminToken}, "login": {"guess"}})
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("login without the form's cookie: HTTP %d, want 403", resp.StatusCode)
	}
	// A wrong token shows the form again, with an error and no session.
	resp, err = c.Get(srv.URL + "/login")
	if err != nil {
		t.Fatal(err)
	}
	m := hiddenLogin.FindStringSubmatch(readAll(t, resp))
	resp, err = c.PostForm(srv.URL+"/login", url.Values{"token": {"wrong-0123456789abcdef"}, "login": {m[1]}})
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "not valid") {
		t.Errorf("wrong token: HTTP %d\n%s", resp.StatusCode, body)
	}
	for _, ck := range resp.Cookies() {
		if ck.Name == sessionCookie && ck.Value != "" {
			t.Error("a wrong token got a session")
		}
	}
	// An open redirect through next is refused.
	for _, next := range []string{"//evil.example/", "https://evil.example/", "/\\evil.example"} {
		if got := localPath(next); got != "/" {
			t.Errorf("localPath(%q) = %q", next, got)
		}
	}
}

func TestParseTokens(t *testing.T) {
	tests := []struct {
		in      string
		wantErr string
	}{
		{in: "0123456789abcdef\n"},
		{in: "# comment\n\n0123456789abcdef viewer bob\n"},
		{in: "short\n", wantErr: "at least 16"},
		{in: "0123456789abcdef root\n", wantErr: "role"},
		{in: "# nothing\n", wantErr: "no token"},
	}
	for _, tt := range tests {
		_, err := ParseTokens(strings.NewReader(tt.in))
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("ParseTokens(%q) = %v, want %q", tt.in, err, tt.wantErr)
		}
	}
}

// TestTokenGuessingIsLimited: after ten wrong tokens a minute from one
// address, even the right token is refused until the minute is over; the
// login form counts the same way.
func TestTokenGuessingIsLimited(t *testing.T) {
	srv, _ := portalServer(t)
	get := func(token string) int {
		req, _ := http.NewRequest("GET", srv.URL+"/api/v1/snapshot", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		return resp.StatusCode
	}
	for i := range maxTokenFailures {
		if code := get(fmt.Sprintf("guess-%02d-0123456789abcdef", i)); code != http.StatusUnauthorized {
			t.Fatalf("guess %d: HTTP %d, want 401", i, code)
		}
	}
	if code := get(adminToken); code != http.StatusTooManyRequests {
		t.Errorf("after %d wrong tokens the right one got HTTP %d, want 429", maxTokenFailures, code)
	}
	c := browser(t)
	resp, err := c.Get(srv.URL + "/login")
	if err != nil {
		t.Fatal(err)
	}
	m := hiddenLogin.FindStringSubmatch(readAll(t, resp))
	resp, err = c.PostForm(srv.URL+"/login", url.Values{"token": {adminToken}, "login": {m[1]}})
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("login after the guesses: HTTP %d, want 429", resp.StatusCode)
	}
}

func TestFailureLimitWindow(t *testing.T) {
	now := time.Unix(0, 0)
	l := newFailureLimit(2, time.Minute)
	l.now = func() time.Time { return now }
	l.fail("a")
	l.fail("a")
	if !l.blocked("a") || l.blocked("b") {
		t.Fatal("two failures block a, and only a")
	}
	now = now.Add(61 * time.Second)
	if l.blocked("a") {
		t.Error("still blocked after the window")
	}
}
