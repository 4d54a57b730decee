package plan

import (
	"slices"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

func TestKeepBusy(t *testing.T) {
	srv := func(name string, st dcm.AdminState) dcm.Server {
		return dcm.Server{Name: name, Endpoint: name, Addr: "10.0.0.1", Port: 80, Weight: 1, State: st}
	}
	actual := dcm.State{Backends: []*dcm.Backend{
		{Name: "be_http:ns:a", Servers: []dcm.Server{srv("a-1", dcm.StateMaint), srv("a-2", dcm.StateReady), srv("a-3", dcm.StateMaint)}},
		{Name: "be_http:ns:b", Slot: "be_http:_pool:1", Servers: []dcm.Server{srv("b-1", dcm.StateMaint)}},
	}}
	del := func(be, name string) dcm.Op { return dcm.Op{Kind: dcm.OpDelServer, Backend: be, Server: name} }
	tests := []struct {
		name    string
		next    dcm.State
		busy    []string
		ok      bool
		servers map[string][]string // backend → server names in the result
		ops     int
	}{
		{
			name: "a refused delete is put back, the other stays deleted",
			next: dcm.State{Backends: []*dcm.Backend{
				{Name: "be_http:ns:a", Servers: []dcm.Server{srv("a-2", dcm.StateReady)}},
				{Name: "be_http:ns:b", Slot: "be_http:_pool:1", Servers: []dcm.Server{srv("b-1", dcm.StateMaint)}},
			}},
			busy: []string{"be_http:ns:a/a-3"}, ok: true, ops: 2,
			servers: map[string][]string{"be_http:ns:a": {"a-2", "a-3"}, "be_http:ns:b": {"b-1"}},
		},
		{
			name: "a spare backend is named by its slot",
			next: dcm.State{Backends: []*dcm.Backend{
				{Name: "be_http:ns:a", Servers: []dcm.Server{srv("a-2", dcm.StateReady)}},
				{Name: "be_http:ns:b", Slot: "be_http:_pool:1", Servers: []dcm.Server{}},
			}},
			busy: []string{"be_http:_pool:1/b-1"}, ok: true, ops: 2,
			servers: map[string][]string{"be_http:ns:a": {"a-2"}, "be_http:ns:b": {"b-1"}},
		},
		{
			name: "a backend gone from next cannot keep its server",
			next: dcm.State{Backends: []*dcm.Backend{{Name: "be_http:ns:a", Servers: []dcm.Server{srv("a-2", dcm.StateReady)}}}},
			busy: []string{"be_http:_pool:1/b-1"}, ok: false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ops := []dcm.Op{del("be_http:ns:a", "a-1"), del("be_http:ns:a", "a-3"), del("be_http:ns:b", "b-1")}
			before := tt.next.Backends[0].Servers
			gotOps, next, send, ok := KeepBusy(actual, ops, tt.next, tt.busy, nil)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			if len(before) != 1 || len(tt.next.Backends[0].Servers) != 1 {
				t.Error("KeepBusy wrote into the plan's state")
			}
			for _, b := range next.Backends {
				var names []string
				for _, s := range b.Servers {
					names = append(names, s.Name)
					if slices.Contains(tt.busy, b.ProxyName()+"/"+s.Name) && (s.State != dcm.StateMaint || !s.Unobserved) {
						t.Errorf("%s/%s kept as %s (unobserved %v), want maint and unobserved", b.Name, s.Name, s.State, s.Unobserved)
					}
				}
				if !slices.Equal(names, tt.servers[b.Name]) {
					t.Errorf("%s: servers %v, want %v", b.Name, names, tt.servers[b.Name])
				}
			}
			if len(send) != 0 {
				t.Errorf("ops to send %v without unsent ones", send)
			}
			if len(gotOps) != tt.ops {
				t.Errorf("%d ops left, want %d: %v", len(gotOps), tt.ops, gotOps)
			}
		})
	}
}

// TestKeepBusyCAFiles: a del server refused while a CA rotation retires
// the old servers keeps the old CA's file (its del op is dropped, to be
// planned again with the last server's deletion), while the file of a CA
// no kept server uses is still to be deleted.
func TestKeepBusyCAFiles(t *testing.T) {
	v1 := &dcm.UpstreamTLS{CA: "secret:ns/ca", Version: "v1", ServerName: "a.ns.svc"}
	v2 := &dcm.UpstreamTLS{CA: "secret:ns/ca", Version: "v2", ServerName: "a.ns.svc"}
	v3 := &dcm.UpstreamTLS{CA: "secret:ns/ca", Version: "v3", ServerName: "a.ns.svc"}
	srv := func(name string, st dcm.AdminState, u *dcm.UpstreamTLS) dcm.Server {
		return dcm.Server{Name: name, Endpoint: name, Addr: "10.0.0.1", Port: 443, Weight: 1, State: st, Upstream: u}
	}
	// a-1 has v1, b-1 v2; both retire for servers with v3.
	actual := dcm.State{Backends: []*dcm.Backend{
		{Name: "be_reencrypt:ns:a", Servers: []dcm.Server{srv("a-1.v1", dcm.StateMaint, v1), srv("a-1.v3", dcm.StateReady, v3)}},
		{Name: "be_reencrypt:ns:b", Servers: []dcm.Server{srv("b-1.v2", dcm.StateMaint, v2), srv("b-1.v3", dcm.StateReady, v3)}},
	}}
	next := dcm.State{Backends: []*dcm.Backend{
		{Name: "be_reencrypt:ns:a", Servers: []dcm.Server{srv("a-1.v3", dcm.StateReady, v3)}},
		{Name: "be_reencrypt:ns:b", Servers: []dcm.Server{srv("b-1.v3", dcm.StateReady, v3)}},
	}}
	caDel := func(u *dcm.UpstreamTLS) dcm.Op {
		return dcm.Op{Kind: dcm.OpCADel, Upstream: &dcm.UpstreamTLS{CA: u.CA, Version: u.Version}}
	}
	ops := []dcm.Op{
		{Kind: dcm.OpDelServer, Backend: "be_reencrypt:ns:a", Server: "a-1.v1"},
		{Kind: dcm.OpDelServer, Backend: "be_reencrypt:ns:b", Server: "b-1.v2"},
		caDel(v1), caDel(v2),
	}
	tests := []struct {
		name     string
		busy     []string
		unsent   []dcm.Op
		wantOps  []string // kind server/version of the ops left
		wantSend []string
	}{
		{
			name: "the kept server's CA file stays, the other goes",
			busy: []string{"be_reencrypt:ns:a/a-1.v1"}, unsent: []dcm.Op{caDel(v1), caDel(v2)},
			wantOps:  []string{"del-server b-1.v2", "ca-del v2"},
			wantSend: []string{"ca-del v2"},
		},
		{
			name: "both kept: both files stay",
			busy: []string{"be_reencrypt:ns:a/a-1.v1", "be_reencrypt:ns:b/b-1.v2"}, unsent: []dcm.Op{caDel(v1), caDel(v2)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotOps, got, send, ok := KeepBusy(actual, ops, next, tt.busy, tt.unsent)
			if !ok {
				t.Fatal("KeepBusy refused")
			}
			if names := opNames(gotOps); !slices.Equal(names, tt.wantOps) {
				t.Errorf("ops left %q, want %q", names, tt.wantOps)
			}
			if names := opNames(send); !slices.Equal(names, tt.wantSend) {
				t.Errorf("ops to send %q, want %q", names, tt.wantSend)
			}
			// What dcm believes HAProxy holds must be what it holds: the
			// files of the CAs next's servers use, none deleted twice.
			var held []string
			for _, c := range dcm.CAsOf(got.Backends) {
				held = append(held, c.Version)
			}
			files := map[string]bool{"v1": true, "v2": true, "v3": true}
			for _, o := range append(gotOps, send...) {
				if o.Kind == dcm.OpCADel {
					delete(files, o.Upstream.Version)
				}
			}
			var left []string
			for v := range files {
				left = append(left, v)
			}
			slices.Sort(left)
			if !slices.Equal(held, left) {
				t.Errorf("state lists CA files %q, HAProxy keeps %q", held, left)
			}
		})
	}
}

func opNames(ops []dcm.Op) []string {
	var out []string
	for _, o := range ops {
		switch o.Kind {
		case dcm.OpCADel:
			out = append(out, string(o.Kind)+" "+o.Upstream.Version)
		default:
			out = append(out, string(o.Kind)+" "+o.Server)
		}
	}
	return out
}

// TestKeepBusySendsTheOtherUnsentOps: the driver sends nothing after a
// refused del server; KeepBusy holds back only the ca-del of a CA a kept
// server uses, and hands back the rest (a host's certificate removal, a CA
// no kept server uses) to send, in the plan's order.
func TestKeepBusySendsTheOtherUnsentOps(t *testing.T) {
	v1 := &dcm.UpstreamTLS{CA: "secret:ns/ca", Version: "v1", ServerName: "a.ns.svc"}
	actual := dcm.State{Backends: []*dcm.Backend{{Name: "be_reencrypt:ns:a", Servers: []dcm.Server{
		{Name: "a-1.v1", Endpoint: "a-1", Addr: "10.0.0.1", Port: 443, Weight: 1, State: dcm.StateMaint, Upstream: v1},
	}}}}
	next := dcm.State{Backends: []*dcm.Backend{{Name: "be_reencrypt:ns:a", Servers: []dcm.Server{}}}}
	certDel := dcm.Op{Kind: dcm.OpCertDel, Backend: "be_edge:ns:gone", Cert: &dcm.Cert{Host: "gone.test", Secret: "ns/gone", Version: "c1"}}
	caDel := func(v string) dcm.Op {
		return dcm.Op{Kind: dcm.OpCADel, Upstream: &dcm.UpstreamTLS{CA: "secret:ns/ca", Version: v}}
	}
	ops := []dcm.Op{{Kind: dcm.OpDelServer, Backend: "be_reencrypt:ns:a", Server: "a-1.v1"}, certDel, caDel("v1"), caDel("v0")}
	tests := []struct {
		name     string
		busy     []string
		unsent   []dcm.Op
		wantOps  []string
		wantSend []string
	}{
		{
			name: "the kept server's CA stays; the certificate and the unused CA go",
			busy: []string{"be_reencrypt:ns:a/a-1.v1"}, unsent: []dcm.Op{certDel, caDel("v1"), caDel("v0")},
			wantOps:  []string{"cert-del ", "ca-del v0"},
			wantSend: []string{"cert-del ", "ca-del v0"},
		},
		{
			name:    "nothing unsent (a driver that sent them): only the del server is dropped",
			busy:    []string{"be_reencrypt:ns:a/a-1.v1"},
			wantOps: []string{"cert-del ", "ca-del v1", "ca-del v0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotOps, got, send, ok := KeepBusy(actual, ops, next, tt.busy, tt.unsent)
			if !ok {
				t.Fatal("KeepBusy refused")
			}
			if names := opNames(gotOps); !slices.Equal(names, tt.wantOps) {
				t.Errorf("ops left %q, want %q", names, tt.wantOps)
			}
			if names := opNames(send); !slices.Equal(names, tt.wantSend) {
				t.Errorf("ops to send %q, want %q", names, tt.wantSend)
			}
			if s, ok := got.Backends[0].Server("a-1.v1"); !ok || s.State != dcm.StateMaint || !s.Unobserved {
				t.Errorf("the refused server in next: %+v (present %v), want maint and unobserved", s, ok)
			}
		})
	}
}
