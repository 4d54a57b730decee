package server

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/server/fleet"
)

// fakeFleet records the tokens the server hands the collector.
type fakeFleet struct {
	mu     sync.Mutex
	tokens []string
	undone []fleet.Expected
}

func (f *fakeFleet) saw(token string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tokens = append(f.tokens, token)
}

func (f *fakeFleet) Fleet(_ context.Context, token string) dcm.Fleet {
	f.saw(token)
	return dcm.Fleet{Replicas: []dcm.Replica{{Name: "a", Self: true}, {Name: "b", Error: "unreachable"}}}
}

func (f *fakeFleet) Expect(_ context.Context, token string, _ any) []fleet.Expected {
	f.saw(token)
	return []fleet.Expected{{Name: "b", Seq: 4}}
}

func (f *fakeFleet) Unexpect(_ context.Context, token string, e []fleet.Expected) {
	f.saw(token)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.undone = append(f.undone, e...)
}

func (f *fakeFleet) Find(name string) (fleet.Peer, bool) {
	return fleet.Peer{Name: name, URL: "http://b"}, name == "b"
}

func (f *fakeFleet) Events(_ context.Context, token string, _ fleet.Peer, since uint64) (dcm.EventsPage, error) {
	f.saw(token)
	return dcm.EventsPage{Seq: since + 1, Complete: true, Events: []dcm.Event{{Seq: since + 1, Type: dcm.EventPrediction}}}, nil
}

// TestFleetUsesTheCallersToken: the fleet is read with the bearer token of
// the request, or the token the session signed in with (never in its
// cookie); a scale has the peers expect it first and takes that back when
// it fails.
func TestFleetUsesTheCallersToken(t *testing.T) {
	tokens, err := ParseTokens(strings.NewReader(adminToken + " admin alice\n" + viewerToken + " viewer victor\n"))
	if err != nil {
		t.Fatal(err)
	}
	fl, sc := &fakeFleet{}, &fakeScaler{}
	srv := httptest.NewServer(New(Deps{Engine: newFakeEngine(3, true), Scaler: sc, Fleet: fl, Gatherer: prometheus.NewRegistry(),
		Authenticator: tokens, Authorizer: RoleAuthorizer{}, Log: slog.New(slog.DiscardHandler)}))
	t.Cleanup(srv.Close)

	resp, body := call(t, http.DefaultClient, "GET", srv.URL+"/api/v1/fleet", viewerToken, "")
	var f dcm.Fleet
	if err := json.Unmarshal([]byte(body), &f); resp.StatusCode != 200 || err != nil || len(f.Replicas) != 2 {
		t.Fatalf("GET /api/v1/fleet: HTTP %d %s", resp.StatusCode, body)
	}
	b := browser(t)
	signIn(t, b, srv.URL, viewerToken)
	for _, ck := range b.Jar.Cookies(mustURL(t, srv.URL)) {
		if strings.Contains(ck.Value, viewerToken) {
			t.Errorf("cookie %s carries the token", ck.Name)
		}
	}
	if resp, body := call(t, b, "GET", srv.URL+"/api/v1/fleet/events?replica=b&since=9", "", ""); resp.StatusCode != 200 || !strings.Contains(body, `"seq":10`) {
		t.Errorf("GET /api/v1/fleet/events of b: HTTP %d %s", resp.StatusCode, body)
	}
	if resp, _ := call(t, b, "GET", srv.URL+"/api/v1/fleet/events?replica=nobody", "", ""); resp.StatusCode != 404 {
		t.Errorf("events of an unknown replica: HTTP %d, want 404", resp.StatusCode)
	}
	resp, body = call(t, http.DefaultClient, "POST", srv.URL+"/api/v1/scale", adminToken, `{"namespace":"demo","kind":"Deployment","name":"web","replicas":3}`)
	if resp.StatusCode != 202 || !strings.Contains(body, `"name":"b","url":"","self":false,"seq":4`) || !strings.Contains(body, `"self":true,"seq":3`) {
		t.Errorf("scale: HTTP %d %s, want this replica at seq 3 and b at 4", resp.StatusCode, body)
	}
	sc.err = errors.New("the API server said no")
	if resp, _ := call(t, http.DefaultClient, "POST", srv.URL+"/api/v1/scale", adminToken, `{"namespace":"demo","kind":"Deployment","name":"web","replicas":4}`); resp.StatusCode != 502 {
		t.Errorf("failed scale: HTTP %d", resp.StatusCode)
	}
	fl.mu.Lock()
	defer fl.mu.Unlock()
	want := []string{viewerToken, viewerToken, adminToken, adminToken, adminToken}
	if strings.Join(fl.tokens, ",") != strings.Join(want, ",") {
		t.Errorf("the collector got tokens %q, want %q", fl.tokens, want)
	}
	if len(fl.undone) != 1 || fl.undone[0].Name != "b" {
		t.Errorf("after the failed scale the peers' expectations taken back: %+v, want b's", fl.undone)
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
