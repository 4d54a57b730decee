package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/engine"
)

// fakeEngine and fakeScaler stand in for the engine and Kubernetes in this
// package's unit tests (the event hub is the engine's real one); e2e proves
// the whole path with the real parts.
type fakeEngine struct {
	hub     *engine.Hub
	ready   bool
	mu      sync.Mutex
	actions []string
	expects int
}

// newFakeEngine starts at seq: the hub has published that many events, so
// the snapshot and the feed agree on where the engine is (a snapshot ahead
// of its hub is one the feed cannot follow with events).
func newFakeEngine(seq uint64, ready bool) *fakeEngine {
	f := &fakeEngine{hub: engine.NewHub(100), ready: ready}
	for range seq {
		f.hub.Publish(dcm.Event{Type: dcm.EventApplied, Message: "before the test", Backends: []string{"be_http:demo:web"}})
	}
	return f
}

func (f *fakeEngine) Snapshot() dcm.Snapshot {
	return dcm.Snapshot{Seq: f.hub.Seq(), Mode: dcm.ModeDynamic, Backends: []*dcm.Backend{
		{Name: "be_http:demo:web", Route: dcm.Route{Namespace: "demo", Name: "web"}},
		{Name: "be_http:other:app", Route: dcm.Route{Namespace: "other", Name: "app"}},
	}}
}
func (f *fakeEngine) Ready() bool { return f.ready }
func (f *fakeEngine) Status() dcm.ReplicaStatus {
	return dcm.ReplicaStatus{Seq: f.hub.Seq(), Ready: f.ready, Applied: "1"}
}
func (f *fakeEngine) Action(actor, message string, _ dcm.ObjectRef) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.actions = append(f.actions, actor+": "+message)
}
func (f *fakeEngine) Subscribe(since uint64, queue int) ([]dcm.Event, bool, Subscription) {
	b, ok, sub := f.hub.Subscribe(since, queue)
	return b, ok, sub
}
func (f *fakeEngine) Events(since uint64) ([]dcm.Event, bool) { return f.hub.Since(since) }
func (f *fakeEngine) SetServerState(actor, backend, server string, state dcm.AdminState) error {
	if backend != "be_http:demo:web" {
		return fmt.Errorf("%s: %w", backend, dcm.ErrNotFound)
	}
	f.Action(actor, backend+"/"+server+" "+string(state), dcm.ObjectRef{})
	return nil
}
func (f *fakeEngine) SetServerWeight(actor, backend, server string, weight int) error {
	f.Action(actor, fmt.Sprintf("%s/%s weight %d", backend, server, weight), dcm.ObjectRef{})
	return nil
}
func (f *fakeEngine) TrafficRates() dcm.TrafficRates {
	return dcm.TrafficRates{Every: 1, Backends: map[string]dcm.TrafficSeries{
		"be_http:a:web": {Requests: []float64{1, 2}, Errors: []float64{0, 1}},
		"be_http:b:api": {Requests: []float64{3}, Errors: []float64{0}},
	}}
}
func (f *fakeEngine) Reload(actor string) { f.Action(actor, "reload", dcm.ObjectRef{}) }
func (f *fakeEngine) SetMaxConn(_ context.Context, actor string, n int) error {
	f.Action(actor, fmt.Sprintf("maxconn %d", n), dcm.ObjectRef{})
	return nil
}

// Simulate says each scaled workload has the backend of its name in demo.
func (f *fakeEngine) Simulate(whatifs []dcm.WhatIf) dcm.Simulation {
	sim := dcm.Simulation{Seq: f.hub.Seq(), Mode: dcm.ModeDynamic, Errors: []string{fmt.Sprintf("%d what-ifs", len(whatifs))}}
	for _, w := range whatifs {
		if w.Workload != nil {
			sim.Backends = append(sim.Backends, dcm.BackendName(dcm.KindHTTP, w.Namespace, w.Workload.Name))
		}
	}
	return sim
}
func (f *fakeEngine) Expect([]dcm.WhatIf) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expects++
	return func() { // a cancelled expectation counts as a change too
		f.mu.Lock()
		defer f.mu.Unlock()
		f.expects++
	}
}

// changes counts the actions and expectations recorded.
func (f *fakeEngine) changes() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.actions) + f.expects
}
func (f *fakeEngine) Config(context.Context) (dcm.ConfigView, error) {
	return dcm.ConfigView{Files: []dcm.ConfigFile{{Name: "haproxy.cfg", Content: "global\n"}}, Drift: []string{}}, nil
}

type fakeScaler struct {
	calls []string
	err   error
}

func (f *fakeScaler) SetScale(_ context.Context, ns, kind, name string, replicas int32) error {
	f.calls = append(f.calls, ns+"/"+kind+"/"+name)
	return f.err
}

const token = "0123456789abcdef0123456789abcdef"

func TestAPI(t *testing.T) {
	tests := []struct {
		name       string
		method     string
		path       string
		auth       string
		body       string
		scaleErr   error
		ready      bool
		wantCode   int
		wantBody   string
		wantScaled bool
	}{
		{name: "healthz is open", method: "GET", path: "/healthz", wantCode: 200},
		{name: "readyz before the first sync", method: "GET", path: "/readyz", wantCode: 503},
		{name: "readyz after", method: "GET", path: "/readyz", ready: true, wantCode: 200},
		{name: "metrics are open", method: "GET", path: "/metrics", wantCode: 200, wantBody: "go_goroutines"},
		{name: "snapshot needs a token", method: "GET", path: "/api/v1/snapshot", wantCode: 401},
		{name: "a wrong token", method: "GET", path: "/api/v1/snapshot", auth: "Bearer nope", wantCode: 401},
		{name: "snapshot", method: "GET", path: "/api/v1/snapshot", auth: "Bearer " + token, wantCode: 200, wantBody: `"seq":7`},
		{name: "scale needs a token", method: "POST", path: "/api/v1/scale", body: `{"namespace":"demo","kind":"Deployment","name":"web","replicas":3}`, wantCode: 401},
		{name: "scale", method: "POST", path: "/api/v1/scale", auth: "Bearer " + token,
			body: `{"namespace":"demo","kind":"Deployment","name":"web","replicas":3}`, wantCode: 202, wantScaled: true},
		{name: "scale at the seq of the preview", method: "POST", path: "/api/v1/scale", auth: "Bearer " + token,
			body: `{"namespace":"demo","kind":"Deployment","name":"web","replicas":3,"expectSeq":7}`, wantCode: 202, wantScaled: true},
		{name: "stale preview", method: "POST", path: "/api/v1/scale", auth: "Bearer " + token,
			body: `{"namespace":"demo","kind":"Deployment","name":"web","replicas":3,"expectSeq":6}`, wantCode: 409, wantBody: `"seq":7`},
		{name: "bad kind", method: "POST", path: "/api/v1/scale", auth: "Bearer " + token,
			body: `{"namespace":"demo","kind":"Pod","name":"web","replicas":3}`, wantCode: 400},
		{name: "hostile name", method: "POST", path: "/api/v1/scale", auth: "Bearer " + token,
			body: `{"namespace":"demo","kind":"Deployment","name":"web;rm","replicas":3}`, wantCode: 400},
		{name: "replicas missing", method: "POST", path: "/api/v1/scale", auth: "Bearer " + token,
			body: `{"namespace":"demo","kind":"Deployment","name":"web"}`, wantCode: 400},
		{name: "too many replicas", method: "POST", path: "/api/v1/scale", auth: "Bearer " + token,
			body: `{"namespace":"demo","kind":"Deployment","name":"web","replicas":100000}`, wantCode: 400},
		{name: "not JSON", method: "POST", path: "/api/v1/scale", auth: "Bearer " + token, body: `{`, wantCode: 400},
		{name: "oversized body", method: "POST", path: "/api/v1/scale", auth: "Bearer " + token,
			body: `{"namespace":"` + strings.Repeat("a", 70000) + `"}`, wantCode: 413},
		{name: "Kubernetes refuses", method: "POST", path: "/api/v1/scale", auth: "Bearer " + token, scaleErr: errors.New("forbidden"),
			body: `{"namespace":"demo","kind":"Deployment","name":"web","replicas":3}`, wantCode: 502, wantBody: "forbidden", wantScaled: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng := newFakeEngine(7, tt.ready)
			sc := &fakeScaler{err: tt.scaleErr}
			reg := prometheus.NewRegistry()
			reg.MustRegister(collectors.NewGoCollector())
			h := New(Deps{Engine: eng, Scaler: sc, Gatherer: reg, Authenticator: SingleToken(token, "admin"), Authorizer: RoleAuthorizer{},
				Log: slog.New(slog.DiscardHandler)})
			req := httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body))
			req.Header.Set("Content-Type", "application/json")
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			body, _ := io.ReadAll(rec.Body)
			if rec.Code != tt.wantCode {
				t.Errorf("HTTP %d, want %d: %s", rec.Code, tt.wantCode, body)
			}
			if !strings.Contains(string(body), tt.wantBody) {
				t.Errorf("body %q lacks %q", body, tt.wantBody)
			}
			if scaled := len(sc.calls) > 0; scaled != tt.wantScaled {
				t.Errorf("scaled = %v, want %v", scaled, tt.wantScaled)
			}
			if tt.wantCode == 202 && len(eng.actions) != 1 {
				t.Errorf("the scale was not recorded in the audit log: %v", eng.actions)
			}
			if rec.Header().Get("X-Content-Type-Options") != "nosniff" {
				t.Error("security headers missing")
			}
			if tt.wantCode == http.StatusUnauthorized && rec.Header().Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
}
