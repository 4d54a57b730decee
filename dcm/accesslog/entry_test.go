package accesslog

import (
	"testing"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/haproxy"
)

// fixedStates is one state, at a generation the test moves.
type fixedStates struct {
	st  dcm.State
	gen uint64
}

func (f *fixedStates) ActualState() (dcm.State, uint64) { return f.st, f.gen }

func backend(ns, name, slot string, pods ...string) *dcm.Backend {
	r := dcm.Route{Namespace: ns, Name: name, Kind: dcm.KindHTTP, Source: dcm.SourceIngress, Object: name}
	b := &dcm.Backend{Name: r.BackendName(), Kind: r.Kind, Route: r, Slot: slot}
	for _, p := range pods {
		b.Servers = append(b.Servers, dcm.Server{Name: p + ":http", Pod: p})
	}
	return b
}

// TestIndexEntry: a line names the route and pod behind HAProxy's names
// in the state at hand; a spare that carries another route by the time
// the line is written (its servers are not the line's) names no route;
// a free spare names none either; the index follows the state's
// generation.
func TestIndexEntry(t *testing.T) {
	own := backend("ns", "own", "", "pod-a")
	spared := backend("ns", "spared", "be_http:_pool:1", "pod-b")
	states := &fixedStates{st: dcm.State{Backends: []*dcm.Backend{own, spared}, Pool: []string{"be_http:_pool:2"}}, gen: 1}
	var x index
	x.refresh(states)
	line := func(be, srv string) haproxy.AccessLine {
		return haproxy.AccessLine{Frontend: "fe_http", Backend: be, Server: srv, Status: 200}
	}
	for _, c := range []struct {
		line               haproxy.AccessLine
		route, pod, server string
		spare              bool
	}{
		{line("be_http:ns:own", "pod-a:http"), "own", "pod-a", "pod-a:http", false},
		{line("be_http:_pool:1", "pod-b:http"), "spared", "pod-b", "pod-b:http", true},
		{line("be_http:_pool:1", "<NOSRV>"), "spared", "", "", true},
		{line("be_http:_pool:1", "pod-gone:http"), "", "", "pod-gone:http", true},
		{line("be_http:_pool:2", "pod-c:http"), "", "", "pod-c:http", true},
		{line("fe_http", "<NOSRV>"), "", "", "", false},
	} {
		e := x.entry(c.line)
		if e.Route != c.route || e.Pod != c.pod || e.Server != c.server || e.Spare != c.spare {
			t.Errorf("%s/%s: route %q pod %q server %q spare %v, want %q %q %q %v", c.line.Backend, c.line.Server,
				e.Route, e.Pod, e.Server, e.Spare, c.route, c.pod, c.server, c.spare)
		}
	}
	if e := x.entry(line("fe_http", "<NOSRV>")); e.Backend != "" {
		t.Errorf("no backend chosen, line names %q", e.Backend)
	}
	// The spare goes to another route: the index sees it at the next
	// generation only, and until then names no route for its pods.
	states.st = dcm.State{Backends: []*dcm.Backend{own, backend("other", "next", "be_http:_pool:1", "pod-n")}}
	x.refresh(states)
	if e := x.entry(line("be_http:_pool:1", "pod-b:http")); e.Route != "spared" {
		t.Errorf("the index changed without a new generation: %+v", e)
	}
	states.gen++
	x.refresh(states)
	if e := x.entry(line("be_http:_pool:1", "pod-n:http")); e.Route != "next" || e.Namespace != "other" {
		t.Errorf("after the move: %+v", e)
	}
}

func TestParseTarget(t *testing.T) {
	for in, want := range map[string]Target{"off": {}, "stdout": {Stdout: true},
		"syslog://127.0.0.1:514": {Syslog: "127.0.0.1:514"}, "syslog://logs.example:5140": {Syslog: "logs.example:5140"},
		"syslog://[::1]:514": {Syslog: "[::1]:514"}} {
		got, err := ParseTarget(in)
		if err != nil || got != want {
			t.Errorf("%q: %+v %v, want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "on", "STDOUT", "syslog://", "syslog://host", "syslog://:514", "syslog://h:0",
		"syslog://h:70000", "syslog://h:514/x", "udp://h:514", "syslog://u@h:514"} {
		if _, err := ParseTarget(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
