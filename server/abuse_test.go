package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
)

// actionBodies are valid bodies of the routes that change something, so that
// an admin gets past validation and a refusal can only come from auth.
var actionBodies = map[string]string{
	"/api/v1/scale": `{"namespace":"demo","kind":"Deployment","name":"web","replicas":2}`,
	"/api/v1/backends/:backend/servers/:server/state":  `{"state":"drain"}`,
	"/api/v1/backends/:backend/servers/:server/weight": `{"weight":3}`,
	"/api/v1/reload":  `{"reason":"test"}`,
	"/api/v1/maxconn": `{"maxconn":20000}`,
	"/api/v1/expect":  `{"namespace":"demo","kind":"Deployment","name":"web","replicas":2}`,
	// The id is of an expectation an admin made just before (expectID).
	"/api/v1/expect/:id": ``,
}

// expectID makes an expectation as an admin and returns its id.
func expectID(t *testing.T, srvURL string) string {
	t.Helper()
	resp, body := call(t, http.DefaultClient, http.MethodPost, srvURL+"/api/v1/expect", adminToken, actionBodies["/api/v1/expect"])
	var e expected
	if err := json.Unmarshal([]byte(body), &e); err != nil || resp.StatusCode != http.StatusOK || e.ID == "" {
		t.Fatalf("POST /api/v1/expect: HTTP %d %s (%v)", resp.StatusCode, body, err)
	}
	return e.ID
}

// readOnlyPosts are the POST routes that change nothing in HAProxy or
// Kubernetes, and who may use them.
var readOnlyPosts = map[string]string{
	"/login":       "anyone: it is how a token becomes a session",
	"/logout":      "whoever has a session: it ends only their own",
	"/api/v1/plan": "readers: a what-if preview, computed and thrown away",
}

// TestEveryActionIsAuthorized walks the server's own route table, so that a
// route added later cannot escape: every route that changes something
// refuses anonymous callers (401) and viewers (403) without changing
// anything, and lets an admin through to the handler.
func TestEveryActionIsAuthorized(t *testing.T) {
	eng := newFakeEngine(1, true)
	tokens, err := ParseTokens(strings.NewReader(adminToken + " admin alice\n" + viewerToken + " viewer victor\n"))
	if err != nil {
		t.Fatal(err)
	}
	h := New(Deps{Engine: eng, Scaler: &fakeScaler{}, Gatherer: prometheus.NewRegistry(),
		Authenticator: tokens, Authorizer: RoleAuthorizer{}, Log: slog.New(slog.DiscardHandler)})
	e, ok := h.(*echo.Echo)
	if !ok {
		t.Fatalf("New returned %T, want *echo.Echo to read its routes", h)
	}
	srvURL := serve(t, h)
	actions := 0
	for _, r := range e.Routes() {
		if !changes(&http.Request{Method: r.Method}) || r.Method == echo.RouteNotFound {
			continue
		}
		if _, ok := readOnlyPosts[r.Path]; ok {
			continue
		}
		body, ok := actionBodies[r.Path]
		if !ok {
			t.Errorf("%s %s changes something but has no case here: add it to actionBodies or readOnlyPosts", r.Method, r.Path)
			continue
		}
		actions++
		path := strings.NewReplacer(":backend", "be_http:demo:web", ":server", "web-1:http").Replace(r.Path)
		for _, tt := range []struct {
			who, token string
			want       func(int) bool
		}{
			{"anonymous", "", func(c int) bool { return c == http.StatusUnauthorized }},
			{"viewer", viewerToken, func(c int) bool { return c == http.StatusForbidden }},
			{"admin", adminToken, func(c int) bool { return c >= 200 && c < 300 }},
		} {
			t.Run(r.Method+" "+r.Path+"/"+tt.who, func(t *testing.T) {
				path := path
				if r.Path == "/api/v1/expect/:id" {
					path = "/api/v1/expect/" + expectID(t, srvURL)
				}
				before := eng.changes()
				resp, got := call(t, http.DefaultClient, r.Method, srvURL+path, tt.token, body)
				if !tt.want(resp.StatusCode) {
					t.Errorf("HTTP %d: %s", resp.StatusCode, got)
				}
				if changed := eng.changes() != before; changed != (tt.who == "admin") {
					t.Errorf("changed something: %v (want %v)", changed, tt.who == "admin")
				}
			})
		}
	}
	if actions < len(actionBodies) {
		t.Errorf("only %d of the %d known actions are routed", actions, len(actionBodies))
	}
}

// TestOversizedBodies: every route that takes a body refuses one over the
// limit with 413 before reading it, whoever sends it.
func TestOversizedBodies(t *testing.T) {
	srv, eng := portalServer(t)
	big := `{"reason":"` + strings.Repeat("a", 65<<10) + `"}`
	for _, path := range []string{"/api/v1/scale", "/api/v1/plan", "/api/v1/reload", "/login",
		"/api/v1/backends/be_http:demo:web/servers/web-1:http/state", "/api/v1/backends/be_http:demo:web/servers/web-1:http/weight"} {
		for _, token := range []string{"", adminToken} {
			resp, _ := call(t, http.DefaultClient, http.MethodPost, srv.URL+path, token, big)
			if resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Errorf("POST %s (token %v): HTTP %d, want 413", path, token != "", resp.StatusCode)
			}
		}
	}
	if len(eng.actions) != 0 {
		t.Errorf("an oversized request changed something: %v", eng.actions)
	}
}

// TestFeedRefusesOversizedMessages: the feed takes no requests; a client
// message up to the read limit is ignored and the feed goes on, one byte
// more closes the connection with 1009 (message too big).
func TestFeedRefusesOversizedMessages(t *testing.T) {
	s := startFeedServer(t, feedConfig{ping: 10 * time.Millisecond})
	for _, tt := range []struct {
		size   int
		closed bool
	}{{feedReadLimit, false}, {feedReadLimit + 1, true}, {1 << 20, true}} {
		c := s.dial(t, "", dialOpts{})
		c.expect(dcm.FeedTypeHello)
		c.expect(dcm.FeedTypeSnapshot)
		// A megabyte is refused from its frame header: the server closes
		// while the client still writes, which may reset the connection
		// before the close frame is read. Either way the connection ends.
		err := c.ws.WriteMessage(websocket.TextMessage, bytes.Repeat([]byte("x"), tt.size))
		if err == nil {
			err = feedGoesOn(c)
		}
		switch {
		case tt.size == feedReadLimit+1 && !websocket.IsCloseError(err, websocket.CloseMessageTooBig):
			t.Errorf("%d bytes: %v, want close 1009", tt.size, err)
		case tt.closed && err == nil:
			t.Errorf("%d bytes: the feed goes on", tt.size)
		case !tt.closed && err != nil:
			t.Errorf("%d bytes: %v, want the feed to go on", tt.size, err)
		}
	}
	testkit.Eventually(t, "closed clients to be counted out", 10*time.Second, func() error {
		if g := gaugeValue(s.clients); g != 1 {
			return fmt.Errorf("dcm_feed_clients = %v, want 1", g)
		}
		return nil
	})
}

// feedGoesOn pings the server after what was sent and reads the feed until
// the pong: the server reads a connection's frames in order, so the pong
// proves it read the message before and kept the connection. It returns nil,
// or the error that ended the connection.
func feedGoesOn(c *feedClient) error {
	pong := make(chan struct{}, 1)
	c.ws.SetPongHandler(func(string) error {
		select {
		case pong <- struct{}{}:
		default:
		}
		return nil
	})
	if err := c.ws.WriteControl(websocket.PingMessage, []byte("after"), time.Now().Add(5*time.Second)); err != nil {
		return err
	}
	for {
		if _, err := c.read(); err != nil {
			return err
		}
		select {
		case <-pong:
			return nil
		default:
		}
	}
}

// FuzzFeedInbound: whatever a client asks in the query and then sends, the
// feed either refuses the upgrade with 400 exactly when the query is
// invalid, or says hello with the filters it got; a message within the read
// limit is ignored and the feed goes on, a bigger one closes it with 1009.
func FuzzFeedInbound(f *testing.F) {
	f.Add("", "", "", []byte("hello"), false, false)
	f.Add("demo", "be_http:demo:web", "3", []byte{0, 1, 2, 0xff}, true, false)
	f.Add("Not_A_Label", "web", "-1", []byte("{\"type\":\"resume\"}"), false, true)
	f.Add("a\nb", "be_\r\n;#", "18446744073709551616", []byte("%[x]"), true, true)
	f.Add("other", "be_\r\n;#", "0", []byte("x"), false, true)
	s := startFeedServer(f, feedConfig{ping: 5 * time.Millisecond, pipes: true})
	f.Fuzz(func(t *testing.T, namespace, backend, since string, payload []byte, binary, big bool) {
		q := url.Values{}
		for k, v := range map[string]string{"namespace": namespace, "backend": backend, "since": since} {
			if v != "" {
				q.Set(k, v)
			}
		}
		valid := (namespace == "" || dcm.ValidateDNSLabel("namespace", namespace) == nil) &&
			(backend == "" || strings.HasPrefix(backend, "be_") && dcm.ValidateServerName("backend", backend) == nil) && (since == "" || isSeq(since))
		ws, resp, err := s.dialRaw("?"+q.Encode(), dialOpts{})
		if !valid {
			if err == nil || resp == nil || resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("query %s: %v, want HTTP 400", q.Encode(), err)
			}
			return
		}
		if err != nil {
			t.Fatalf("query %s: %v", q.Encode(), err)
		}
		defer ws.Close()
		c := &feedClient{t: t, ws: ws}
		hello := c.expect(dcm.FeedTypeHello)
		if hello.Hello.Namespace != namespace || hello.Hello.Backend != backend {
			t.Fatalf("hello %+v for namespace %q backend %q", hello.Hello, namespace, backend)
		}
		if big {
			payload = bytes.Repeat(append(payload, 'x'), feedReadLimit/(len(payload)+1)+1)
		}
		typ := websocket.TextMessage
		if binary {
			typ = websocket.BinaryMessage
		}
		err = ws.WriteMessage(typ, payload)
		if err == nil {
			err = feedGoesOn(c)
		}
		// Beyond the limit the server closes with 1009, or resets the
		// connection while the client is still writing.
		if closed := err != nil; closed != (len(payload) > feedReadLimit) {
			t.Fatalf("%d bytes: %v", len(payload), err)
		}
	})
}

func isSeq(s string) bool {
	_, err := strconv.ParseUint(s, 10, 64)
	return err == nil
}

// serve runs h on a loopback port until the test ends.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// lockedBuffer collects the server's log lines from its goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestTokensNeverLeak plays a session of both users — logins, a mistyped
// token, every page, every API answer, the feed, every action — and looks
// for the tokens (and the mistyped one, which gives most of the real one
// away) and the session ids in everything the server said, logged or
// published. Only the Set-Cookie that hands a browser its own session may
// carry a session id.
func TestTokensNeverLeak(t *testing.T) {
	var logs lockedBuffer
	eng := newFakeEngine(1, true)
	tokens, err := ParseTokens(strings.NewReader(adminToken + " admin alice\n" + viewerToken + " viewer victor\n"))
	if err != nil {
		t.Fatal(err)
	}
	h := New(Deps{Engine: eng, Scaler: &fakeScaler{}, Gatherer: prometheus.NewRegistry(), PingEvery: 10 * time.Millisecond,
		Authenticator: tokens, Authorizer: RoleAuthorizer{}, Log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	base := serve(t, h)
	mistyped := adminToken[:len(adminToken)-1] + "X"
	var said []string // every response: status line, headers but Set-Cookie, body
	var sessions []string
	do := func(c *http.Client, method, path, token, body string) {
		t.Helper()
		resp, text := call(t, c, method, base+path, token, body)
		for _, ck := range resp.Cookies() {
			if ck.Name == sessionCookie && ck.Value != "" {
				sessions = append(sessions, ck.Value)
			}
		}
		hdr := resp.Header.Clone()
		hdr.Del("Set-Cookie")
		var b strings.Builder
		_ = hdr.Write(&b)
		said = append(said, method+" "+path+" "+resp.Status+"\n"+b.String()+text)
	}
	plain := &http.Client{}
	do(plain, "GET", "/api/v1/snapshot", mistyped, "")
	for _, tok := range []string{adminToken, viewerToken} {
		c := browser(t)
		csrf := signIn(t, c, base, tok)
		u, _ := url.Parse(base)
		for _, ck := range c.Jar.Cookies(u) {
			if ck.Name == sessionCookie {
				sessions = append(sessions, ck.Value)
			}
		}
		for _, page := range []string{"/", "/backends", "/backends/be_http:demo:web", "/events", "/config", "/login", "/api/v1/whoami"} {
			do(c, "GET", page, "", "")
		}
		for _, api := range []string{"/api/v1/snapshot", "/api/v1/backends", "/api/v1/backends/be_http:demo:web", "/api/v1/events?since=0", "/api/v1/config", "/api/v1/whoami"} {
			do(plain, "GET", api, tok, "")
		}
		do(plain, "POST", "/api/v1/plan", tok, `{"whatifs":[{"kind":"scale","namespace":"demo","workload":{"kind":"Deployment","name":"web"},"replicas":3}]}`)
		for path, body := range actionBodies {
			path = strings.NewReplacer(":backend", "be_http:demo:web", ":server", "web-1:http").Replace(path)
			do(plain, "POST", path, tok, body)
		}
		req, _ := http.NewRequest("POST", base+"/logout", strings.NewReader(url.Values{"csrf": {csrf}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if resp, err := c.Do(req); err == nil {
			said = append(said, readAll(t, resp))
		}
	}
	// The feed: hello, snapshot, the events the actions made, pings.
	ws, _, err := websocket.DefaultDialer.Dial(strings.Replace(base, "http", "ws", 1)+"/api/v1/feed?since=0",
		http.Header{"Authorization": {"Bearer " + adminToken}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	for pings := 0; pings < 2; {
		_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, raw, err := ws.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		said = append(said, string(raw))
		if strings.Contains(string(raw), `"type":"ping"`) {
			pings++
		}
	}
	evs, _ := eng.Events(0)
	for _, ev := range evs {
		said = append(said, ev.Message+" "+ev.Actor)
	}
	said = append(said, logs.String(), strings.Join(eng.actions, "\n"))
	if len(sessions) < 2 || len(eng.actions) < 4 || !strings.Contains(logs.String(), "wrong bearer token") {
		t.Fatalf("the session did not happen as planned: %d sessions, actions %q, logs:\n%s", len(sessions), eng.actions, logs.String())
	}
	secrets := append([]string{adminToken, viewerToken, mistyped}, sessions...)
	for _, text := range said {
		for _, secret := range secrets {
			if strings.Contains(text, secret) {
				t.Errorf("a secret (%.8s…) appears in:\n%.2000s", secret, text)
			}
		}
	}
}
