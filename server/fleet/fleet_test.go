package fleet

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
)

const token = "a-token-of-the-user-0123456789"

// peerServer answers /api/v1/status like a dcm replica that accepts only
// token, and records what it was asked.
func peerServer(t *testing.T, st dcm.ReplicaStatus) (*httptest.Server, *[]string) {
	t.Helper()
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.Method+" "+r.URL.RequestURI())
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "a valid bearer token or session is required"})
			return
		}
		switch r.URL.Path {
		case "/api/v1/status":
			_ = json.NewEncoder(w).Encode(st)
		case "/api/v1/expect":
			_ = json.NewEncoder(w).Encode(map[string]any{"seq": st.Seq, "id": "x1"})
		case "/api/v1/expect/x1":
			w.WriteHeader(http.StatusNoContent)
		case "/api/v1/events":
			_ = json.NewEncoder(w).Encode(dcm.EventsPage{Events: []dcm.Event{{Seq: st.Seq + 1, Type: dcm.EventPrediction}}, Complete: true, Seq: st.Seq + 1})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &asked
}

func status(pid int, applied string) dcm.ReplicaStatus {
	return dcm.ReplicaStatus{Seq: 7, Ready: true, Applied: applied, HAProxy: dcm.HAProxyInfo{Version: "2.6.12", PID: pid, Reloads: 1}}
}

// TestFleetAsksEveryPeerWithTheToken: the collector lists itself first and
// once, reads each other replica with the caller's token, and says why a
// replica could not be read (refused, unreachable).
func TestFleetAsksEveryPeerWithTheToken(t *testing.T) {
	b, asked := peerServer(t, status(20, "abc"))
	self := "http://127.0.0.1:1" // never asked over HTTP
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	peers := Static{{Name: "a", URL: self, Self: true}, {Name: "b", URL: b.URL}, {Name: "b again", URL: b.URL}, {Name: "gone", URL: gone.URL}}
	c := New(peers, func() dcm.ReplicaStatus { return status(10, "abc") }, self, nil)

	f := c.Fleet(context.Background(), token)
	if len(f.Replicas) != 3 {
		t.Fatalf("%d replicas, want a, b and gone once each: %+v", len(f.Replicas), f.Replicas)
	}
	a, rb, rg := f.Replicas[0], f.Replicas[1], f.Replicas[2]
	if a.Name != "a" || !a.Self || a.Status.HAProxy.PID != 10 {
		t.Errorf("first replica %+v, want this one (a, pid 10)", a)
	}
	if rb.Name != "b" || rb.Status == nil || rb.Status.HAProxy.PID != 20 || rb.Error != "" {
		t.Errorf("replica b %+v, want its status (pid 20)", rb)
	}
	if rg.Status != nil || !strings.Contains(rg.Error, "unreachable") {
		t.Errorf("replica gone %+v, want unreachable", rg)
	}
	// Latest is decided among the replicas that answered; the fleet is in
	// step only when all did.
	if f.InStep || !a.Latest || !rb.Latest || rg.Latest {
		t.Errorf("a and b agree, gone did not answer: want a and b latest, the fleet not in step: %+v", f)
	}
	if got := strings.Join(*asked, ","); got != "GET /api/v1/status" {
		t.Errorf("b was asked %q, want its status once", got)
	}

	refused := c.Fleet(context.Background(), "another-token-0123456789")
	if e := refused.Replicas[1].Error; !strings.Contains(e, "HTTP 401") || !strings.Contains(e, "bearer token") {
		t.Errorf("with a token b refuses, its error is %q, want b's 401 and message", e)
	}
	// b counts wrong tokens by address, and this replica is the address
	// of every user: a refused token is not sent again for a while.
	before := len(*asked)
	again := c.Fleet(context.Background(), "another-token-0123456789")
	if len(*asked) != before || again.Replicas[1].Error != refused.Replicas[1].Error {
		t.Errorf("a token b refused was sent again (%d requests more), or the refusal changed: %q", len(*asked)-before, again.Replicas[1].Error)
	}
	c.now = func() time.Time { return time.Now().Add(refusedFor + time.Second) }
	c.Fleet(context.Background(), "another-token-0123456789")
	if len(*asked) != before+1 {
		t.Errorf("after %s the token is not asked again", refusedFor)
	}
	if f := c.Fleet(context.Background(), token); f.Replicas[1].Status == nil {
		t.Errorf("the right token is still answered: %+v", f.Replicas[1])
	}
}

// TestExpectAndEventsGoToThePeers: an expectation is recorded on each
// peer, taken back by its id, and a peer's events are read with the token.
func TestExpectAndEventsGoToThePeers(t *testing.T) {
	b, asked := peerServer(t, status(20, "abc"))
	self := "http://127.0.0.1:1"
	c := New(Static{{Name: "b", URL: b.URL}}, func() dcm.ReplicaStatus { return status(10, "abc") }, self, nil)
	got := c.Expect(context.Background(), token, map[string]any{"namespace": "demo"})
	if len(got) != 1 || got[0].Name != "b" || got[0].Seq != 7 || got[0].Error != "" {
		t.Fatalf("Expect answered %+v, want b at seq 7", got)
	}
	p, ok := c.Find("b")
	if !ok {
		t.Fatal("b not found")
	}
	page, err := c.Events(context.Background(), token, p, 7)
	if err != nil || len(page.Events) != 1 || page.Events[0].Type != dcm.EventPrediction {
		t.Fatalf("Events: %+v, %v", page, err)
	}
	if l := c.List(); len(l) != 2 || !l[0].Self || l[0].Name != "127.0.0.1:1" {
		t.Errorf("a list without this replica gets it first, named by its address: %+v", l)
	}
	c.Unexpect(context.Background(), token, got)
	if want := "POST /api/v1/expect,GET /api/v1/events?since=7,DELETE /api/v1/expect/x1"; strings.Join(*asked, ",") != want {
		t.Errorf("b was asked %q, want %q", strings.Join(*asked, ","), want)
	}
}

func TestParseStatic(t *testing.T) {
	local := func(h string) bool { return h == "10.0.0.5" }
	for _, tt := range []struct {
		name, listen string
		urls         []string
		want         []Peer
		err          bool
	}{
		{"self by listen", "127.0.0.1:8080", []string{"http://127.0.0.1:8080", "http://127.0.0.1:8081/"},
			[]Peer{{"127.0.0.1:8080", "http://127.0.0.1:8080", true}, {"127.0.0.1:8081", "http://127.0.0.1:8081", false}}, false},
		{"any address: self by port and a local host", "0.0.0.0:8080", []string{"http://10.0.0.5:8080", "http://10.0.0.6:8080"},
			[]Peer{{"10.0.0.5:8080", "http://10.0.0.5:8080", true}, {"10.0.0.6:8080", "http://10.0.0.6:8080", false}}, false},
		{"localhost is the loopback listen", "127.0.0.1:8080", []string{"https://localhost:8080"},
			[]Peer{{"localhost:8080", "https://localhost:8080", true}}, false},
		{"duplicates once", "127.0.0.1:1", []string{"http://h:1", " http://h:1 ", ""}, []Peer{{"h:1", "http://h:1", false}}, false},
		{"no port", "127.0.0.1:1", []string{"http://h"}, nil, true},
		{"a path", "127.0.0.1:1", []string{"http://h:1/x"}, nil, true},
		{"not http", "127.0.0.1:1", []string{"ftp://h:1"}, nil, true},
		{"credentials", "127.0.0.1:1", []string{"http://u:p@h:1"}, nil, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseStatic(tt.urls, tt.listen, local)
			if (err != nil) != tt.err {
				t.Fatalf("err %v, want error %v", err, tt.err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("peer %d: %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}
