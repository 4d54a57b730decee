package haproxy

import (
	"bytes"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

// TestRenderCacheFollowsServerFields: the renderer re-renders a backend
// whose server line changes in any field (a runtime change such as set
// maxconn server must reach the cfg), so its output always equals a fresh
// rendering.
func TestRenderCacheFollowsServerFields(t *testing.T) {
	r1 := route("ns", "one", "one.example", "/", dcm.PathPrefix)
	base := dcm.Server{Name: "a", Endpoint: "a", Addr: "10.0.0.1", Port: 80, Weight: 1, State: dcm.StateReady, Check: true}
	for _, tt := range []struct {
		name   string
		change func(*dcm.Server)
	}{
		{"maxconn", func(s *dcm.Server) { s.MaxConn = 3 }},
		{"check interval", func(s *dcm.Server) { s.CheckInterMillis = 2000 }},
		{"proto", func(s *dcm.Server) { s.Proto = dcm.ProtoH2 }},
		{"weight", func(s *dcm.Server) { s.Weight = 7 }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			changed := base
			tt.change(&changed)
			st := func(s dcm.Server) dcm.State {
				return dcm.State{Backends: []*dcm.Backend{{Name: r1.BackendName(), Route: r1, Servers: []dcm.Server{s}}}}
			}
			r := NewRenderer(testSettings)
			_, err := r.Render(st(base))
			mustf(t, err, "render before")
			cached, err := r.Render(st(changed))
			mustf(t, err, "render after")
			fresh, err := Render(testSettings, st(changed))
			mustf(t, err, "fresh render")
			if !bytes.Equal(cached.Text(), fresh.Text()) {
				t.Errorf("the cached rendering kept the old server line:\n%s\n--- fresh:\n%s", cached.Text(), fresh.Text())
			}
		})
	}
}
