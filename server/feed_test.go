package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/engine"
	"github.com/dcm-router/dcm/internal/testkit"
)

// feedEngine is the package's fakeEngine (real hub) serving a full picture
// — backends in two namespaces with servers, routes with workloads,
// rejections, the last reload — so snapshots and filters have something to
// cut and every field of the schema shows up in real messages.
type feedEngine struct{ *fakeEngine }

func newFeedEngine(ring int) feedEngine {
	return feedEngine{&fakeEngine{hub: engine.NewHub(ring), ready: true}}
}

func (f feedEngine) Snapshot() dcm.Snapshot {
	s := fullSnapshot()
	s.Seq = f.hub.Seq()
	return s
}

// The backends of fullSnapshot.
const (
	webName = "be_http:demo:web"
	appName = "be_edge:other:app"
)

func tStart() time.Time { return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) }

func fullRoute(ns, name string, kind dcm.RouteKind) dcm.Route {
	r := dcm.Route{Namespace: ns, Name: name, Source: dcm.SourceIngress, Object: name, Kind: kind,
		Host: name + "." + ns + ".example", Path: "/", PathType: dcm.PathPrefix,
		Services: []dcm.ServiceRef{{Name: name, Port: "http", Weight: 100}},
		Workload: &dcm.WorkloadRef{Kind: "Deployment", Name: name}, Balance: dcm.BalanceRoundRobin, Check: true}
	if kind == dcm.KindEdge {
		r.TLS = &dcm.TLSRef{Secret: ns + "/" + name + "-tls", Version: "0123abcd"}
	}
	return r
}

func fullBackend(ns, name string, kind dcm.RouteKind) dcm.Backend {
	return dcm.Backend{Name: dcm.BackendName(kind, ns, name), Kind: kind, Route: fullRoute(ns, name, kind), Slots: 4,
		Servers: []dcm.Server{
			{Name: name + "-1:http", Addr: "127.0.1.1", Port: 8080, Weight: 1, State: dcm.StateReady, Origin: dcm.OriginCfg,
				Endpoint: name + "-1:http", Pod: name + "-1", Service: name, Check: true, Health: "UP", Sessions: 2, Queued: 1, UsedConn: 3, IdleConn: 2},
			{Name: name + "-2:http", Addr: "127.0.1.2", Port: 8080, Weight: 1, State: dcm.StateDrain, Origin: dcm.OriginRuntime,
				Endpoint: name + "-2:http", Pod: name + "-2", Health: "DRAIN", Terminating: true, Unobserved: true, Retired: true},
		}}
}

func fullReload() *dcm.ReloadInfo {
	return &dcm.ReloadInfo{Time: tStart(), Reasons: []dcm.ReloadReason{dcm.ReasonRouteAdded}, Duration: 0.25,
		OldPID: 10, NewPID: 11, Error: "example failure"}
}

func fullSnapshot() dcm.Snapshot {
	web, app := fullBackend("demo", "web", dcm.KindHTTP), fullBackend("other", "app", dcm.KindEdge)
	web.Slot, app.Retiring = "be_http:_pool:3", true
	return dcm.Snapshot{Mode: dcm.ModeSlots, Caps: dcm.Caps{Mode: dcm.ModeSlots, Slots: 4, AddServer: true, Pool: 4, StickyPool: 2, GatewayPool: 8, RuntimeCerts: true,
		Gateway: dcm.GatewayBinds{Addresses: []string{"127.0.20.1", "127.0.20.2"}, HTTPPorts: []int{80}, HTTPSPorts: []int{443}, Spares: 1}},
		GatewayBinds: []dcm.GatewayBind{{Bind: "127.0.20.1:443", HTTPS: true}, {Bind: "127.0.20.1:80"}, {Bind: "127.0.20.1:8080"}},
		Pool:         []string{"be_http:_pool:4"},
		DefaultCert:  dcm.Cert{Secret: "openshift-ingress/router-default", Version: "89abcdef"},
		HAProxy:      dcm.HAProxyInfo{Version: "2.6.12", PID: 11, Started: tStart(), Reloads: 3, Running: true},
		Updates:      dcm.Updates{Noop: 1, Dynamic: 2, Reload: 3}, LastReload: fullReload(),
		Routes: []dcm.Route{web.Route, app.Route}, Backends: dcm.BackendList(web, app),
		Rejected: []dcm.Rejection{
			{Object: dcm.ObjectRef{Kind: "Ingress", Namespace: "demo", Name: "bad"}, Reason: dcm.RejectInvalidHost, Message: "host"},
			{Object: dcm.ObjectRef{Kind: "Ingress", Namespace: "other", Name: "worse"}, Reason: dcm.RejectConflict, Message: "conflict"},
		},
		Gateways: fullGateways()}
}

// fullGateways is a Gateway API picture with every field set: a Gateway
// of demo and an HTTPRoute of other attached to it.
func fullGateways() *dcm.GatewayAPI {
	ok := []dcm.Condition{{Type: "Accepted", Status: "True", Reason: "Accepted", Message: "attached"}}
	return &dcm.GatewayAPI{
		Gateways: []dcm.GatewayView{{Namespace: "demo", Name: "gw", Class: "dcm", Address: "127.0.20.1", Conditions: ok,
			Listeners: []dcm.ListenerView{{Name: "http", Protocol: "HTTP", Port: 80, Hostname: "*.demo.example", AttachedRoutes: 1, Conditions: ok}}}},
		HTTPRoutes: []dcm.HTTPRouteView{{Namespace: "other", Name: "shop", Hostnames: []string{"shop.demo.example"},
			Parents: []dcm.RouteParentView{{Gateway: "demo/gw", Listener: "http", Conditions: []dcm.Condition{
				{Type: "ResolvedRefs", Status: "False", Reason: "RefNotPermitted", Message: "no ReferenceGrant"}}}}},
			{Kind: "GRPCRoute", Namespace: "other", Name: "echo", Parents: []dcm.RouteParentView{{Gateway: "demo/gw", Conditions: ok}}}},
	}
}

// applied is an event about the named backends carrying their ops and state.
func applied(names ...string) dcm.Event {
	ev := dcm.Event{Type: dcm.EventApplied, Message: "applied", Backends: names}
	for _, n := range names {
		parts := strings.SplitN(n, ":", 3)
		b := fullBackend(parts[1], parts[2], dcm.RouteKind(strings.TrimPrefix(parts[0], "be_")))
		ev.State = append(ev.State, &b)
		ev.Ops = append(ev.Ops, dcm.Op{Kind: dcm.OpAddServer, Backend: n, Slot: "be_http:_pool:3", Server: "s1", Addr: "127.0.1.9", Port: 80, Weight: 1,
			State: dcm.StateReady, Check: true, Endpoint: "s1", Pod: "p1"})
	}
	return ev
}

// tick is a small event about web, for tests that send thousands.
func tick() dcm.Event {
	return dcm.Event{Type: dcm.EventApplied, Message: "tick", Backends: []string{webName}}
}

// feedServer is server.New on loopback with the feed's metrics.
type feedServer struct {
	url     string
	eng     feedEngine
	dropped prometheus.Counter
	clients prometheus.Gauge
	// shutdown cancels the connections' base context, as main does when dcm stops.
	shutdown context.CancelFunc
	schema   *jsonSchema
	// pipes, when set, connects clients through socket pairs instead of TCP.
	pipes *pipeListener
}

type feedConfig struct {
	ring, queue int
	ping        time.Duration
	// engine, when set, wraps the feedEngine the server gets.
	engine func(feedEngine) Engine
	// sndbuf, when set, caps the kernel's send buffer of every accepted
	// connection, so a client that stops reading blocks the server's writes
	// after kilobytes rather than the megabytes loopback buffers grow to.
	sndbuf int
	// pipes connects clients through unix socket pairs: a fuzzer opens
	// tens of thousands of connections, which over TCP would leave as many
	// loopback ports in TIME_WAIT on a machine others share. (net.Pipe has
	// no buffer: a server closing on a client that is still writing would
	// wait out its write deadline every time.)
	pipes bool
}

func startFeedServer(t testing.TB, cfg feedConfig) *feedServer {
	t.Helper()
	if cfg.ring == 0 {
		cfg.ring = 1000
	}
	tokens, err := ParseTokens(strings.NewReader(adminToken + " admin alice\n" + viewerToken + " viewer victor\n"))
	if err != nil {
		t.Fatal(err)
	}
	base, shutdown := context.WithCancel(context.Background())
	s := &feedServer{
		eng:      newFeedEngine(cfg.ring),
		dropped:  prometheus.NewCounter(prometheus.CounterOpts{Name: "dcm_feed_dropped_total"}),
		clients:  prometheus.NewGauge(prometheus.GaugeOpts{Name: "dcm_feed_clients"}),
		shutdown: shutdown,
		schema:   loadSchema(t),
	}
	var eng Engine = s.eng
	if cfg.engine != nil {
		eng = cfg.engine(s.eng)
	}
	h := New(Deps{Engine: eng, Scaler: &fakeScaler{}, Gatherer: prometheus.NewRegistry(),
		Authenticator: tokens, Authorizer: RoleAuthorizer{}, FeedClients: s.clients, FeedDropped: s.dropped,
		FeedQueue: cfg.queue, PingEvery: cfg.ping, Log: slog.New(slog.DiscardHandler)})
	ts := httptest.NewUnstartedServer(h)
	ts.Config.BaseContext = func(net.Listener) context.Context { return base }
	if cfg.sndbuf > 0 {
		ts.Listener = smallSendBuffers{Listener: ts.Listener, size: cfg.sndbuf}
	}
	if cfg.pipes {
		_ = ts.Listener.Close()
		s.pipes = newPipeListener()
		ts.Listener = s.pipes
	}
	ts.Start()
	s.url = ts.URL
	t.Cleanup(func() {
		shutdown() // feeds end with bye; httptest does not wait for hijacked connections
		ts.Close()
	})
	return s
}

type smallSendBuffers struct {
	net.Listener
	size int
}

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		if err := tc.SetWriteBuffer(l.size); err != nil {
			return nil, fmt.Errorf("SO_SNDBUF: %w", err)
		}
	}
	return c, err
}

// pipeListener accepts the server ends of unix socket pairs whose client
// ends dial returns.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socketpair: %w", err)
	}
	var ends [2]net.Conn
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "feed-pipe")
		ends[i], err = net.FileConn(f) // dups fd
		_ = f.Close()
		if err != nil {
			return nil, fmt.Errorf("socketpair end %d: %w", i, err)
		}
	}
	client, server := ends[0], ends[1]
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		err = net.ErrClosed
	case <-ctx.Done():
		err = ctx.Err()
	}
	_ = client.Close()
	_ = server.Close()
	return nil, err
}

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	_ = c.Write(&m)
	return m.GetCounter().GetValue()
}

func gaugeValue(g prometheus.Gauge) float64 {
	var m dto.Metric
	_ = g.Write(&m)
	return m.GetGauge().GetValue()
}

// waitSubscribers waits until the hub has n subscribers: the server
// registers and drops them on its own goroutines.
func (s *feedServer) waitSubscribers(tb testing.TB, n int) {
	tb.Helper()
	testkit.Eventually(tb, fmt.Sprintf("%d subscribers", n), 10*time.Second, func() error {
		if got := s.eng.hub.Subscribers(); got != n {
			return fmt.Errorf("the hub has %d", got)
		}
		return nil
	})
}

// dialOpts shape one client's upgrade request.
type dialOpts struct {
	token  string // default adminToken; "-" for none
	header http.Header
	// rcvbuf, when set, caps the client's receive buffer (a client that stops
	// reading fills it in kilobytes).
	rcvbuf int
}

func (s *feedServer) dialRaw(query string, o dialOpts) (*websocket.Conn, *http.Response, error) {
	h := o.header.Clone()
	if h == nil {
		h = http.Header{}
	}
	switch o.token {
	case "":
		h.Set("Authorization", "Bearer "+adminToken)
	case "-":
	default:
		h.Set("Authorization", "Bearer "+o.token)
	}
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	if s.pipes != nil {
		d.NetDialContext = s.pipes.dial
	}
	if o.rcvbuf > 0 {
		nd := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
			var serr error
			if err := c.Control(func(fd uintptr) {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, o.rcvbuf)
			}); err != nil {
				return err
			}
			return serr
		}}
		d.NetDialContext = nd.DialContext
	}
	return d.Dial(strings.Replace(s.url, "http://", "ws://", 1)+"/api/v1/feed"+query, h)
}

// feedClient reads one connection, checking every message against
// docs/feed.schema.json unless schema is nil.
type feedClient struct {
	t      *testing.T
	ws     *websocket.Conn
	schema *jsonSchema
}

func (s *feedServer) dial(t *testing.T, query string, o dialOpts) *feedClient {
	t.Helper()
	ws, resp, err := s.dialRaw(query, o)
	if err != nil {
		code := 0
		if resp != nil {
			code = resp.StatusCode
		}
		t.Fatalf("dial feed%s: HTTP %d: %v", query, code, err)
	}
	t.Cleanup(func() { ws.Close() })
	return &feedClient{t: t, ws: ws, schema: s.schema}
}

func (c *feedClient) read() (dcm.FeedMessage, error) {
	var m dcm.FeedMessage
	_ = c.ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, raw, err := c.ws.ReadMessage()
	if err != nil {
		return m, err
	}
	if c.schema != nil {
		if err := c.schema.validate(raw); err != nil {
			c.t.Errorf("message does not match docs/feed.schema.json: %v\n%s", err, raw)
		}
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return m, fmt.Errorf("decode %s: %w", raw, err)
	}
	return m, nil
}

// next reads one message, skipping pings unless asked for.
func (c *feedClient) next(pings bool) dcm.FeedMessage {
	c.t.Helper()
	for {
		m, err := c.read()
		if err != nil {
			c.t.Fatalf("read feed: %v", err)
		}
		if m.Type != dcm.FeedTypePing || pings {
			return m
		}
	}
}

func (c *feedClient) expect(typ string) dcm.FeedMessage {
	c.t.Helper()
	m := c.next(false)
	if m.Type != typ {
		c.t.Fatalf("got %s (seq %d), want %s", m.Type, m.Seq, typ)
	}
	return m
}

// events reads until the event with seq last and returns the seqs seen.
func (c *feedClient) events(last uint64) []uint64 {
	c.t.Helper()
	var seqs []uint64
	for len(seqs) == 0 || seqs[len(seqs)-1] < last {
		seqs = append(seqs, c.expect(dcm.FeedTypeEvent).Seq)
	}
	return seqs
}

func seqs(from, to uint64) []uint64 {
	var out []uint64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

func (s *feedServer) publish(n int) {
	for range n {
		s.eng.hub.Publish(tick())
	}
}

func TestFeedFreshStart(t *testing.T) {
	s := startFeedServer(t, feedConfig{})
	s.publish(3)
	c := s.dial(t, "", dialOpts{token: viewerToken}) // reading is enough
	hello := c.expect(dcm.FeedTypeHello)
	want := dcm.FeedHello{Protocol: dcm.FeedProtocol, Identity: "victor", Resumed: false}
	if hello.Seq != 3 || *hello.Hello != want {
		t.Errorf("hello %d %+v, want 3 %+v", hello.Seq, *hello.Hello, want)
	}
	snap := c.expect(dcm.FeedTypeSnapshot)
	if wantSnap := s.eng.Snapshot(); snap.Seq != 3 || !reflect.DeepEqual(*snap.Snapshot, wantSnap) {
		t.Errorf("snapshot at %d:\n%+v\nwant the engine's at 3:\n%+v", snap.Seq, *snap.Snapshot, wantSnap)
	}
	s.publish(2)
	if got := c.events(5); !slices.Equal(got, seqs(4, 5)) {
		t.Errorf("live events %v, want 4-5", got)
	}
	if gaugeValue(s.clients) != 1 {
		t.Errorf("dcm_feed_clients = %v, want 1", gaugeValue(s.clients))
	}
}

// TestFeedResume: a client that comes back with ?since=N gets each event it
// missed once, then live ones; when the server no longer keeps them (or N is
// from the future, e.g. before a restart) it gets a snapshot instead.
func TestFeedResume(t *testing.T) {
	tests := []struct {
		name        string
		query       string
		wantResumed bool
		wantHello   uint64
		wantEvents  []uint64 // before the live event 41
	}{
		{name: "missed events", query: "?since=12", wantResumed: true, wantHello: 12, wantEvents: seqs(13, 40)},
		{name: "up to date", query: "?since=40", wantResumed: true, wantHello: 40},
		{name: "oldest kept", query: "?since=10", wantResumed: true, wantHello: 10, wantEvents: seqs(11, 40)},
		{name: "older than the ring", query: "?since=9", wantHello: 40},
		{name: "from the beginning, ring wrapped", query: "?since=0", wantHello: 40},
		{name: "from the future", query: "?since=41", wantHello: 40},
		{name: "no since", query: "", wantHello: 40},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startFeedServer(t, feedConfig{ring: 30}) // keeps 11-40 once 40 are out
			first := s.dial(t, "", dialOpts{})
			first.expect(dcm.FeedTypeHello)
			first.expect(dcm.FeedTypeSnapshot)
			s.publish(12)
			first.events(12)
			first.ws.Close()
			s.waitSubscribers(t, 0)
			s.publish(28) // 13-40 while away

			c := s.dial(t, tt.query, dialOpts{})
			hello := c.expect(dcm.FeedTypeHello)
			if hello.Hello.Resumed != tt.wantResumed || hello.Seq != tt.wantHello {
				t.Errorf("hello seq %d resumed %v, want %d %v", hello.Seq, hello.Hello.Resumed, tt.wantHello, tt.wantResumed)
			}
			if !tt.wantResumed {
				if snap := c.expect(dcm.FeedTypeSnapshot); snap.Seq != 40 {
					t.Errorf("snapshot at %d, want 40", snap.Seq)
				}
			}
			s.publish(1)
			if got := c.events(41); !slices.Equal(got, append(slices.Clone(tt.wantEvents), 41)) {
				t.Errorf("events %v, want %v then 41", got, tt.wantEvents)
			}
		})
	}
}

// TestFeedResumeWhilePublishing: events published while a client resumes
// fall either in its backlog or in its live stream, never both, never
// neither.
func TestFeedResumeWhilePublishing(t *testing.T) {
	const total, clients = 3000, 10
	// A queue that holds every event: this test is about the seam between
	// backlog and live events, not about slow clients.
	s := startFeedServer(t, feedConfig{ring: 5000, queue: total})
	s.publish(100)
	publishing := make(chan struct{})
	go func() {
		defer close(publishing)
		for i := range total - 100 {
			s.eng.hub.Publish(tick())
			if i%50 == 0 {
				time.Sleep(time.Millisecond) // let connections interleave
			}
		}
	}()
	var wg sync.WaitGroup
	got := make([][]uint64, clients)
	asked := make([]uint64, clients)
	for i := range clients {
		// 50 behind the latest: some backlog, then live events.
		asked[i] = s.eng.hub.Seq() - 50
		c := s.dial(t, fmt.Sprintf("?since=%d", asked[i]), dialOpts{})
		c.schema = nil // 30,000 messages: the other tests check the shape
		wg.Go(func() {
			for {
				m, err := c.read()
				if err != nil {
					t.Errorf("client %d: %v", i, err)
					return
				}
				switch {
				case m.Type == dcm.FeedTypeBye:
					t.Errorf("client %d: bye %q", i, m.Reason)
					return
				case m.Type == dcm.FeedTypeHello && (!m.Hello.Resumed || m.Seq != asked[i]):
					t.Errorf("client %d: hello %+v at %d, want resumed at %d", i, *m.Hello, m.Seq, asked[i])
					return
				case m.Type == dcm.FeedTypeEvent:
					got[i] = append(got[i], m.Seq)
					if m.Seq == total {
						return
					}
				}
			}
		})
		time.Sleep(3 * time.Millisecond)
	}
	<-publishing
	wg.Wait()
	for i := range clients {
		if !slices.Equal(got[i], seqs(asked[i]+1, total)) {
			t.Errorf("client since %d: %d events, want %d-%d each once in order", asked[i], len(got[i]), asked[i]+1, total)
		}
	}
}

// TestFeedFilters: a filtered client gets a filtered snapshot, the events
// about its namespace or backend — cut down to what matches — and the
// events about HAProxy as a whole.
func TestFeedFilters(t *testing.T) {
	both := applied(webName, appName)
	both.Message = "both"
	events := []dcm.Event{
		applied(webName), // 1
		applied(appName), // 2
		both,             // 3
		{Type: dcm.EventRejected, Message: "demo object", Object: &dcm.ObjectRef{Kind: "Ingress", Namespace: "demo", Name: "bad"}, Reason: dcm.RejectInvalidHost}, // 4
		{Type: dcm.EventReload, Message: "reload", Reload: fullReload(), Ops: both.Ops},                                                                           // 5: everyone's
		{Type: dcm.EventAction, Message: "reload requested", Actor: "alice", Object: &dcm.ObjectRef{}},                                                            // 6: no object: everyone's
		{Type: dcm.EventAction, Message: "other object", Actor: "alice", Object: &dcm.ObjectRef{Kind: "Deployment", Namespace: "other", Name: "app"}},             // 7
	}
	tests := []struct {
		query        string
		wantEvents   []uint64
		wantBackends []string // in the snapshot, and the only ones events may carry
		wantRejected int
	}{
		{query: "", wantEvents: []uint64{1, 2, 3, 4, 5, 6, 7}, wantBackends: []string{webName, appName}, wantRejected: 2},
		{query: "?namespace=demo", wantEvents: []uint64{1, 3, 4, 5, 6}, wantBackends: []string{webName}, wantRejected: 1},
		{query: "?namespace=other", wantEvents: []uint64{2, 3, 5, 6, 7}, wantBackends: []string{appName}, wantRejected: 1},
		{query: "?backend=" + appName, wantEvents: []uint64{2, 3, 5, 6}, wantBackends: []string{appName}},
		{query: "?namespace=nobody", wantEvents: []uint64{5, 6}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			s := startFeedServer(t, feedConfig{})
			c := s.dial(t, tt.query, dialOpts{})
			hello := c.expect(dcm.FeedTypeHello).Hello
			q, _ := url.ParseQuery(strings.TrimPrefix(tt.query, "?"))
			if hello.Namespace != q.Get("namespace") || hello.Backend != q.Get("backend") {
				t.Errorf("hello says filters %q %q, asked %v", hello.Namespace, hello.Backend, q)
			}
			snap := c.expect(dcm.FeedTypeSnapshot).Snapshot
			var names, routes []string
			for _, b := range snap.Backends {
				names = append(names, b.Name)
			}
			for _, r := range snap.Routes {
				routes = append(routes, r.BackendName())
			}
			if !slices.Equal(names, tt.wantBackends) || !slices.Equal(routes, tt.wantBackends) || len(snap.Rejected) != tt.wantRejected {
				t.Errorf("snapshot backends %v routes %v rejected %d; want %v, %d rejected", names, routes, len(snap.Rejected), tt.wantBackends, tt.wantRejected)
			}
			for _, ev := range events {
				s.eng.hub.Publish(ev)
			}
			s.eng.hub.Publish(dcm.Event{Type: dcm.EventHAProxy, Message: "end marker"}) // 8
			var got []uint64
			for {
				m := c.expect(dcm.FeedTypeEvent)
				if m.Seq == 8 {
					break
				}
				got = append(got, m.Seq)
				ev := m.Event
				for _, b := range ev.Backends {
					if !slices.Contains(tt.wantBackends, b) {
						t.Errorf("event %d names backend %s", m.Seq, b)
					}
				}
				for _, b := range ev.State {
					if !slices.Contains(tt.wantBackends, b.Name) {
						t.Errorf("event %d carries the state of %s", m.Seq, b.Name)
					}
				}
				for _, o := range ev.Ops {
					if !slices.Contains(tt.wantBackends, o.Backend) {
						t.Errorf("event %d carries an op on %s", m.Seq, o.Backend)
					}
				}
				if len(ev.Ops) != len(ev.State) && ev.Type == dcm.EventApplied {
					t.Errorf("event %d: %d ops for %d backends", m.Seq, len(ev.Ops), len(ev.State))
				}
			}
			if !slices.Equal(got, tt.wantEvents) {
				t.Errorf("events %v, want %v", got, tt.wantEvents)
			}
		})
	}
}

func TestFeedBadRequests(t *testing.T) {
	s := startFeedServer(t, feedConfig{})
	for _, q := range []string{"?since=soon", "?since=-1", "?namespace=Not_A_Label", "?namespace=a/b", "?backend=web", "?backend=../x", "?backend=be_a%0Ab", "?backend=be_%B8%01"} {
		_, resp, err := s.dialRaw(q, dialOpts{})
		if err == nil || resp == nil || resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %v, want HTTP 400", q, err)
		}
	}
}

func TestFeedPings(t *testing.T) {
	s := startFeedServer(t, feedConfig{ping: 20 * time.Millisecond})
	c := s.dial(t, "", dialOpts{})
	c.expect(dcm.FeedTypeHello)
	c.expect(dcm.FeedTypeSnapshot)
	s.publish(2)
	start := time.Now()
	pings := 0
	for pings < 3 {
		m := c.next(true)
		switch m.Type {
		case dcm.FeedTypePing:
			pings++
			if m.Seq != 2 {
				t.Errorf("ping at seq %d after event 2", m.Seq)
			}
		case dcm.FeedTypeEvent:
		default:
			t.Fatalf("unexpected %s", m.Type)
		}
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("3 pings took %v at a 20ms period", d)
	}
}

// TestFeedSlowClient: clients that stop reading are dropped with a bye
// that says where to resume, and counted; the publisher never waits for
// them; 100 clients that read keep up and get every event.
func TestFeedSlowClient(t *testing.T) {
	const (
		readers = 100
		stuck   = 10
		total   = 2000
		burst   = 50 // below the queue: readers that keep up between bursts are never dropped
	)
	s := startFeedServer(t, feedConfig{ring: 4096, queue: 64, sndbuf: 8 << 10})
	stuckConns := make([]*websocket.Conn, stuck)
	for i := range stuckConns {
		ws, _, err := s.dialRaw("", dialOpts{rcvbuf: 4 << 10})
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		stuckConns[i] = ws
	}

	progress := make([]atomic.Uint64, readers)
	results := make([][]uint64, readers)
	var wg sync.WaitGroup
	for i := range readers {
		c := s.dial(t, "", dialOpts{})
		c.expect(dcm.FeedTypeHello)
		c.expect(dcm.FeedTypeSnapshot)
		wg.Go(func() {
			// 200,000 messages: read only what this test checks (the
			// other tests check the whole message and its schema).
			var m struct {
				Type string `json:"type"`
				Seq  uint64 `json:"seq"`
			}
			for m.Seq < total {
				_ = c.ws.SetReadDeadline(time.Now().Add(10 * time.Second))
				if err := c.ws.ReadJSON(&m); err != nil {
					t.Errorf("reader %d: %v after %d events", i, err, len(results[i]))
					return
				}
				switch m.Type {
				case dcm.FeedTypeEvent:
					results[i] = append(results[i], m.Seq)
					progress[i].Store(m.Seq)
				case dcm.FeedTypePing: // a slow machine takes longer than the ping period
				default:
					t.Errorf("reader %d: %s", i, m.Type)
				}
			}
		})
	}
	s.waitSubscribers(t, readers+stuck)
	if g := gaugeValue(s.clients); g != readers+stuck {
		t.Errorf("dcm_feed_clients = %v, want %d", g, readers+stuck)
	}

	// Once dropped, the stuck clients read what the kernel held for them:
	// the server's last write to each waits for that (up to its timeout).
	type stuckRead struct {
		msgs []dcm.FeedMessage
		err  error
	}
	stuckDone := make(chan stuckRead, stuck)
	var publishing, slowest time.Duration
	droppedAt := uint64(0)
	for seq := uint64(0); seq < total; {
		for range burst {
			t0 := time.Now()
			seq = s.eng.hub.Publish(tick()).Seq
			d := time.Since(t0)
			publishing += d
			slowest = max(slowest, d)
		}
		if droppedAt == 0 && s.eng.hub.Subscribers() == readers {
			droppedAt = seq
			for _, ws := range stuckConns {
				sc := &feedClient{t: t, ws: ws, schema: s.schema}
				go func() {
					var r stuckRead
					for r.err == nil {
						var m dcm.FeedMessage
						if m, r.err = sc.read(); r.err == nil {
							r.msgs = append(r.msgs, m)
						}
					}
					stuckDone <- r
				}()
			}
		}
		// An engine publishes at the pace of HAProxy's replies; the test
		// waits for the readers, never for the stuck clients.
		testkit.Eventually(t, fmt.Sprintf("readers at %d", seq), 10*time.Second, func() error {
			for i := range progress {
				if got := progress[i].Load(); got < seq {
					return fmt.Errorf("reader %d at %d", i, got)
				}
			}
			return nil
		})
	}
	wg.Wait()
	t.Logf("publishing %d events to %d readers and %d stuck clients: %v in Publish, slowest call %v; stuck clients dropped by seq %d",
		total, readers, stuck, publishing, slowest, droppedAt)
	// Publishing takes tens of milliseconds (a few hundred with -race,
	// above two seconds with -race on two cores shared with other
	// builds). Waiting for the stuck clients — even 200ms each before
	// dropping them — would take far longer; blocking on them, forever.
	if publishing > 10*time.Second {
		t.Errorf("Publish took %v in total: it waits for clients", publishing)
	}
	if droppedAt == 0 {
		t.Fatal("the stuck clients were never dropped")
	}
	for i, got := range results {
		if !slices.Equal(got, seqs(1, total)) {
			t.Errorf("reader %d got %d events, want 1-%d each once in order", i, len(got), total)
		}
	}
	if n := counterValue(s.dropped); n != stuck {
		t.Errorf("dcm_feed_dropped_total = %v, want %d", n, stuck)
	}

	// Each got hello, snapshot, a prefix of the events, the bye, the close
	// frame; and resuming where the bye said gives exactly the rest.
	for range stuck {
		r := <-stuckDone
		var last uint64
		var bye *dcm.FeedMessage
		for i, m := range r.msgs {
			switch {
			case i == 0 && m.Type == dcm.FeedTypeHello, i == 1 && m.Type == dcm.FeedTypeSnapshot, m.Type == dcm.FeedTypePing:
			case m.Type == dcm.FeedTypeEvent && bye == nil && m.Seq == last+1:
				last = m.Seq
			case m.Type == dcm.FeedTypeBye && bye == nil:
				bye = &m
			default:
				t.Fatalf("stuck client: message %d is %s %d after event %d", i, m.Type, m.Seq, last)
			}
		}
		wantReason := "client too slow: queue full; resume with ?since=" + strconv.FormatUint(last, 10)
		if bye == nil || bye.Seq != last || bye.Reason != wantReason {
			t.Errorf("bye %+v, want at %d %q", bye, last, wantReason)
		}
		var ce *websocket.CloseError
		if !errors.As(r.err, &ce) || ce.Code != 4000 {
			t.Errorf("after bye: %v, want close code 4000", r.err)
		}
		c := s.dial(t, "?since="+strconv.FormatUint(last, 10), dialOpts{})
		if h := c.expect(dcm.FeedTypeHello); !h.Hello.Resumed {
			t.Fatal("resume after a drop got a snapshot")
		}
		c.schema = nil
		if got := c.events(total); !slices.Equal(got, seqs(last+1, total)) {
			t.Errorf("resumed: %d events, want %d-%d", len(got), last+1, total)
		}
	}
}

// TestFeedShutdown: when dcm stops, every feed gets a bye and close code
// 4001 with the seq to resume from.
func TestFeedShutdown(t *testing.T) {
	s := startFeedServer(t, feedConfig{})
	c := s.dial(t, "", dialOpts{})
	c.expect(dcm.FeedTypeHello)
	c.expect(dcm.FeedTypeSnapshot)
	s.publish(2)
	c.events(2)
	s.shutdown()
	bye := c.expect(dcm.FeedTypeBye)
	if bye.Seq != 2 || bye.Reason != "server shutting down; resume with ?since=2" {
		t.Errorf("bye %d %q", bye.Seq, bye.Reason)
	}
	_, err := c.read()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != 4001 {
		t.Errorf("after bye: %v, want close code 4001", err)
	}
	if n := counterValue(s.dropped); n != 0 {
		t.Errorf("a shutdown counted %v drops", n)
	}
}

// aheadEngine's snapshot is ahead of its hub, as when more events than the
// hub keeps were published between taking a snapshot and subscribing.
type aheadEngine struct{ feedEngine }

func (a aheadEngine) Snapshot() dcm.Snapshot {
	s := a.feedEngine.Snapshot()
	s.Seq += 5
	return s
}

// TestFeedSnapshotWithoutFollowUp: a snapshot the hub cannot continue with
// events would leave a gap; the client is told to come back instead, before
// any message.
func TestFeedSnapshotWithoutFollowUp(t *testing.T) {
	s := startFeedServer(t, feedConfig{engine: func(f feedEngine) Engine { return aheadEngine{f} }})
	s.publish(3)
	c := s.dial(t, "", dialOpts{})
	m, err := c.read()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.CloseTryAgainLater {
		t.Errorf("got %+v, %v; want close code 1013 and no message", m, err)
	}
	// A resume the hub can serve is not affected.
	c = s.dial(t, "?since=1", dialOpts{})
	if h := c.expect(dcm.FeedTypeHello); !h.Hello.Resumed || !slices.Equal(c.events(3), []uint64{2, 3}) {
		t.Errorf("resume: %+v", h)
	}
}

// TestFeedRefused: without read permission, or from a foreign page, there
// is no upgrade and no feed.
func TestFeedRefused(t *testing.T) {
	s := startFeedServer(t, feedConfig{})
	c := browser(t)
	signIn(t, c, s.url, viewerToken)
	u, _ := url.Parse(s.url)
	cookies := c.Jar.Cookies(u)
	cookieHeader := func(origin string) http.Header {
		h := http.Header{}
		for _, ck := range cookies {
			h.Add("Cookie", ck.String())
		}
		if origin != "" {
			h.Set("Origin", origin)
		}
		return h
	}
	tests := []struct {
		name   string
		opts   dialOpts
		want   int
		wantWW bool // WWW-Authenticate
	}{
		{name: "no token", opts: dialOpts{token: "-"}, want: http.StatusUnauthorized, wantWW: true},
		{name: "unknown token", opts: dialOpts{token: "unknown-0123456789abcdef"}, want: http.StatusUnauthorized, wantWW: true},
		{name: "foreign origin with a valid token", opts: dialOpts{header: http.Header{"Origin": {"http://evil.example"}}}, want: http.StatusForbidden},
		{name: "foreign referer with a valid token", opts: dialOpts{header: http.Header{"Referer": {"http://evil.example/page"}}}, want: http.StatusForbidden},
		{name: "session from a foreign page", opts: dialOpts{token: "-", header: cookieHeader("http://evil.example")}, want: http.StatusForbidden},
		{name: "session from the portal", opts: dialOpts{token: "-", header: cookieHeader(s.url)}, want: http.StatusSwitchingProtocols},
		{name: "token from the portal", opts: dialOpts{header: http.Header{"Origin": {s.url}}}, want: http.StatusSwitchingProtocols},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, resp, err := s.dialRaw("", tt.opts)
			if resp == nil {
				t.Fatalf("no HTTP answer: %v", err)
			}
			if resp.StatusCode != tt.want {
				t.Fatalf("HTTP %d (%v), want %d", resp.StatusCode, err, tt.want)
			}
			if tt.wantWW && resp.Header.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
			if tt.want != http.StatusSwitchingProtocols {
				if ws != nil || !errors.Is(err, websocket.ErrBadHandshake) {
					t.Errorf("refused, yet upgraded: %v", err)
				}
				if g := gaugeValue(s.clients); g != 0 {
					t.Errorf("a refused client counts as a feed client: %v", g)
				}
				return
			}
			defer ws.Close()
			fc := &feedClient{t: t, ws: ws, schema: s.schema}
			fc.expect(dcm.FeedTypeHello)
		})
	}
}

// TestFeedMessagesMatchSchema: real messages of every type, from full
// snapshots and events, validate against docs/feed.schema.json, and
// between them they carry every property the schema declares — so the
// schema describes what is sent, not what might be.
func TestFeedMessagesMatchSchema(t *testing.T) {
	s := startFeedServer(t, feedConfig{ping: 10 * time.Millisecond})
	plain := s.dial(t, "", dialOpts{})
	filtered := s.dial(t, "?namespace=demo", dialOpts{})
	one := s.dial(t, "?backend="+webName, dialOpts{})
	for _, c := range []*feedClient{plain, filtered, one} {
		c.expect(dcm.FeedTypeHello)
		c.expect(dcm.FeedTypeSnapshot)
	}
	full := applied(webName)
	full.Ops = append(full.Ops, dcm.Op{Kind: dcm.OpMapReplace, Map: dcm.MapHostPrefix,
		Set: []dcm.MapEntry{{Key: "web.demo.example/", Backend: webName, Slot: "be_http:_pool:3"}},
		Del: []dcm.MapEntry{{Key: "old.demo.example/", Backend: webName}}})
	full.Ops = append(full.Ops, dcm.Op{Kind: dcm.OpMapReplace, Map: dcm.MapInsecure,
		Set: []dcm.MapEntry{{Key: "be_http:_pool:3", Backend: webName, Slot: "be_http:_pool:3", Action: "redirect-308", New: true}}})
	full.Ops = append(full.Ops, dcm.Op{Kind: dcm.OpMapReplace, Map: dcm.MapAllowlist,
		Set: []dcm.MapEntry{{Key: "be_http:_pool:3", Backend: webName, Slot: "be_http:_pool:3", Action: "10.0.0.0/8,::1"}}})
	full.Ops = append(full.Ops, dcm.Op{Kind: dcm.OpCertUpdate, Backend: webName, Cert: &dcm.Cert{Host: "web.demo.example", Secret: "demo/shop-tls", Version: "0123abcd", H2: true}})
	full.Reload, full.Object, full.Reason, full.Actor = fullReload(), &dcm.ObjectRef{Kind: "Ingress", Namespace: "demo", Name: "web"}, "because", "alice"
	route := fullRoute("demo", "new", dcm.KindHTTP)
	route.Sticky = true
	route.Kind, route.TLS, route.Insecure, route.RedirectCode = dcm.KindEdge, &dcm.TLSRef{Secret: "demo/new-tls"}, dcm.InsecureRedirect, 308
	route.Allowlist, route.RateLimit = []string{"10.0.0.0/8", "::1"}, &dcm.RateLimit{ConcurrentTCP: 10, RateTCP: 20, RateHTTP: 30}
	route.HTTP = dcm.HTTPOptions{Forwarded: dcm.ForwardReplace, TimeoutMillis: 2000, TunnelMillis: 3600000, HSTS: "max-age=1;preload",
		CookieName: "shop_session", CookieSameSite: dcm.SameSiteStrict}
	route.HTTP.RewriteTarget, route.MaxConn, route.CheckInterMillis = "/", 10, 2000
	route.Headers = &dcm.HeaderActions{Request: []dcm.HeaderAction{{Name: "X-A", Type: dcm.HeaderSet, Value: "a"}},
		Response: []dcm.HeaderAction{{Name: "X-Powered-By", Type: dcm.HeaderDelete}}}
	full.Prediction = &dcm.PredictionCheck{Seq: 3, Match: false,
		WhatIfs: []dcm.WhatIf{
			{Kind: dcm.WhatIfScale, Namespace: "demo", Workload: &dcm.WorkloadRef{Kind: "Deployment", Name: "web"}, Replicas: 5},
			{Kind: dcm.WhatIfDeletePod, Namespace: "demo", Pod: "web-1"},
			{Kind: dcm.WhatIfAddRoute, Route: &route},
			{Kind: dcm.WhatIfDeleteRoute, Backend: webName},
			{Kind: dcm.WhatIfRotateCert, Namespace: "demo", Secret: "demo/web-tls"},
		},
		Predicted: map[string]int{webName + " add-server": 3}, Actual: map[string]int{webName + " add-server": 2}}
	s.eng.hub.Publish(full)
	for _, c := range []*feedClient{plain, filtered, one} {
		if m := c.expect(dcm.FeedTypeEvent); !reflect.DeepEqual(m.Event.Ops, full.Ops) || !reflect.DeepEqual(m.Event.State, full.State) {
			t.Errorf("event arrived as %+v", m.Event)
		}
		if m := c.next(true); m.Type != dcm.FeedTypePing {
			t.Errorf("got %s, want ping", m.Type)
		}
	}
	// A reencrypt route: its CA file and a server that verifies its pod.
	up := &dcm.UpstreamTLS{CA: "secret:demo/shop-ca", Version: "4567ef", ServerName: "shop.demo.svc", PerService: true}
	shop := fullBackend("demo", "shop", dcm.KindReencrypt)
	shop.Route.TLS, shop.Route.Upstream = &dcm.TLSRef{Secret: "demo/shop-tls", Version: "0123abcd"}, up
	shop.Servers[0].Upstream, shop.Servers[0].Proto = up, dcm.ProtoH2
	shop.Servers[0].MaxConn, shop.Servers[0].CheckInterMillis = 10, 2000
	reencrypt := dcm.Event{Type: dcm.EventApplied, Message: "applied", Backends: []string{shop.Name}, State: dcm.BackendList(shop),
		Ops: []dcm.Op{{Kind: dcm.OpCAAdd, Upstream: &dcm.UpstreamTLS{CA: up.CA, Version: up.Version}},
			{Kind: dcm.OpAddServer, Backend: shop.Name, Server: "shop-1:https.0a0b0c0d", Addr: "127.0.1.8", Port: 8443, Weight: 1, Upstream: up,
				MaxConn: 10, CheckInterMillis: 2000, Proto: dcm.ProtoH2}}}
	s.eng.hub.Publish(reencrypt)
	if m := plain.expect(dcm.FeedTypeEvent); !reflect.DeepEqual(m.Event.Ops, reencrypt.Ops) || !reflect.DeepEqual(m.Event.State, reencrypt.State) {
		t.Errorf("reencrypt event arrived as %+v", m.Event)
	}
	// A Gateway route of an HTTPS listener, every field of its shape set.
	gw := fullBackend("demo", "gw", dcm.KindEdge)
	gw.Route.Source, gw.Route.Host, gw.Route.Path = dcm.SourceHTTPRoute, "", ""
	gw.Route.Services[0].Namespace = "other"
	gw.Route.Gateway = &dcm.GatewayRoute{Gateway: "demo/gw", Listener: "https", Bind: "127.0.20.1:443", ListenerHostname: "*.demo.example", Hostnames: []string{"gw.demo.example"},
		Matches: []dcm.HTTPMatch{{PathType: dcm.GatewayPathPrefix, Path: "/", Method: "GET",
			Headers: []dcm.ValueMatch{{Name: "X-A", Value: "a"}}, Query: []dcm.ValueMatch{{Name: "q", Value: "v[0-9]", Regex: true}}}},
		Filters: &dcm.HTTPFilters{
			RequestHeaders:  &dcm.HeaderMods{Set: []dcm.HeaderValue{{Name: "X-S", Value: "s"}}, Add: []dcm.HeaderValue{{Name: "X-D", Value: "d"}}, Remove: []string{"X-R"}},
			ResponseHeaders: &dcm.HeaderMods{Remove: []string{"Server"}},
			Redirect:        &dcm.HTTPRedirect{Scheme: "https", Hostname: "new.demo.example", Port: 8443, StatusCode: 301, Path: &dcm.PathModifier{Type: dcm.ReplacePrefixMatch, Value: "/v2"}},
			Rewrite:         &dcm.URLRewrite{Hostname: "in.demo.example", Path: &dcm.PathModifier{Type: dcm.ReplaceFullPath, Value: "/x"}},
		},
		Rank: "000000000001!demo/gw!0000", Unresolved: true}
	gwEvent := dcm.Event{Type: dcm.EventApplied, Message: "applied", Backends: []string{gw.Name}, State: dcm.BackendList(gw),
		Ops: []dcm.Op{{Kind: dcm.OpCertAdd, Backend: gw.Name, Cert: &dcm.Cert{Host: "gw.demo.example", Secret: "demo/gw-tls", Version: "89ab", Bind: "127.0.20.1:443"}}}}
	s.eng.hub.Publish(gwEvent)
	if m := plain.expect(dcm.FeedTypeEvent); !reflect.DeepEqual(m.Event.Ops, gwEvent.Ops) || !reflect.DeepEqual(m.Event.State, gwEvent.State) {
		t.Errorf("gateway event arrived as %+v", m.Event)
	}
	gwView := dcm.Event{Type: dcm.EventGateways, Message: "Gateway API", Gateways: fullGateways()}
	s.eng.hub.Publish(gwView)
	if m := plain.expect(dcm.FeedTypeEvent); !reflect.DeepEqual(m.Event.Gateways, gwView.Gateways) {
		t.Errorf("gateways event arrived as %+v", m.Event)
	}
	s.shutdown()
	plain.expect(dcm.FeedTypeBye)

	var missing []string
	for name, def := range s.schema.defs {
		props, _ := def["properties"].(map[string]any)
		for p := range props {
			if !s.schema.seen[name+"."+p] {
				missing = append(missing, name+"."+p)
			}
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("schema properties no message carried: %v", missing)
	}
}

// TestSchemaValidatorRefuses: the validator the feed tests rely on does
// catch what it must.
func TestSchemaValidatorRefuses(t *testing.T) {
	s := loadSchema(t)
	const ok = `{"type":"event","seq":1,"event":{"seq":1,"time":"2026-03-01T12:00:00Z","type":"applied","message":"m"}}`
	if err := s.validate([]byte(ok)); err != nil {
		t.Fatalf("a valid message: %v", err)
	}
	tests := []struct{ name, msg, want string }{
		{"unknown field", `{"type":"ping","seq":1,"extra":true}`, "extra"},
		{"missing seq", `{"type":"ping"}`, "seq"},
		{"unknown type", `{"type":"pong","seq":1}`, "enum"},
		{"seq as string", `{"type":"ping","seq":"1"}`, "integer"},
		{"negative seq", `{"type":"ping","seq":-1}`, "minimum"},
		{"fractional seq", `{"type":"ping","seq":1.5}`, "integer"},
		{"hello without hello", `{"type":"hello","seq":1}`, "hello"},
		{"bye without reason", `{"type":"bye","seq":1}`, "reason"},
		{"wrong protocol", `{"type":"hello","seq":1,"hello":{"protocol":2,"identity":"x","resumed":false}}`, "const"},
		{"bad time", `{"type":"event","seq":1,"event":{"seq":1,"time":"yesterday","type":"applied","message":"m"}}`, "date-time"},
		{"bad enum deep inside", `{"type":"event","seq":1,"event":{"seq":1,"time":"2026-03-01T12:00:00Z","type":"applied","message":"m","ops":[{"op":"explode","backend":"b","server":"s"}]}}`, "explode"},
		{"null where omitted", `{"type":"event","seq":1,"event":{"seq":1,"time":"2026-03-01T12:00:00Z","type":"applied","message":"m","ops":null}}`, "array"},
	}
	for _, tt := range tests {
		err := s.validate([]byte(tt.msg))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error mentioning %q", tt.name, err, tt.want)
		}
	}
}

// TestFeedSchemaMatchesGoTypes walks the Go types a FeedMessage is made of
// and the schema side by side: every JSON field has a property of the right
// type and vice versa, required is exactly the fields without omitempty,
// slices that may be null say so, and every enum lists exactly the Go
// constants of its type. Adding a field or a constant on one side only fails.
func TestFeedSchemaMatchesGoTypes(t *testing.T) {
	s := loadSchema(t)
	consts := goStringConsts(t, "../dcm")
	reached := map[string]bool{}

	var walk func(rt reflect.Type)
	var checkValue func(where string, rt reflect.Type, omitempty bool, prop map[string]any)
	walk = func(rt reflect.Type) {
		name := rt.Name()
		if reached[name] {
			return
		}
		reached[name] = true
		def, ok := s.defs[name]
		if !ok {
			t.Errorf("Go type dcm.%s has no $defs/%s", name, name)
			return
		}
		props, _ := def["properties"].(map[string]any)
		if def["type"] != "object" || def["additionalProperties"] != false {
			t.Errorf("$defs/%s: want type object with additionalProperties false", name)
		}
		required := map[string]bool{}
		for _, r := range asSlice(def["required"]) {
			required[r.(string)] = true
		}
		fields := map[string]bool{}
		for i := range rt.NumField() {
			f := rt.Field(i)
			tag, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || tag == "-" {
				continue
			}
			if tag == "" {
				tag = f.Name
			}
			fields[tag] = true
			omitempty := slices.Contains(strings.Split(opts, ","), "omitempty") || slices.Contains(strings.Split(opts, ","), "omitzero")
			where := name + "." + tag
			prop, ok := props[tag].(map[string]any)
			if !ok {
				t.Errorf("Go field dcm.%s.%s (json %q) is not in the schema", name, f.Name, tag)
				continue
			}
			if required[tag] == omitempty {
				t.Errorf("%s: required %v, but the Go field has omitempty %v", where, required[tag], omitempty)
			}
			checkValue(where, f.Type, omitempty, prop)
		}
		for p := range props {
			if !fields[p] {
				t.Errorf("schema property %s.%s has no Go field", name, p)
			}
		}
		for r := range required {
			if !fields[r] {
				t.Errorf("%s requires %q, which is no Go field", name, r)
			}
		}
	}
	checkValue = func(where string, rt reflect.Type, omitempty bool, prop map[string]any) {
		ref, _ := prop["$ref"].(string)
		switch {
		case rt == reflect.TypeFor[time.Time]():
			if prop["type"] != "string" || prop["format"] != "date-time" {
				t.Errorf("%s: a time, want type string format date-time", where)
			}
		case rt.Kind() == reflect.Pointer:
			if !omitempty {
				t.Errorf("%s: a pointer without omitempty may be null; the schema does not say so", where)
			}
			checkValue(where, rt.Elem(), omitempty, prop)
		case rt.Kind() == reflect.Struct:
			if ref != "#/$defs/"+rt.Name() {
				t.Errorf("%s: want $ref #/$defs/%s, have %q", where, rt.Name(), ref)
			}
			walk(rt)
		case rt.Kind() == reflect.Slice:
			want := any("array")
			if !omitempty {
				want = []any{"array", "null"} // Go writes a nil slice as null
			}
			if !reflect.DeepEqual(prop["type"], want) {
				t.Errorf("%s: type %v, want %v", where, prop["type"], want)
			}
			items, _ := prop["items"].(map[string]any)
			// A State's backends are pointers so that states share them,
			// never nil ones: an element pointer is not null.
			checkValue(where+"[]", rt.Elem(), rt.Elem().Kind() == reflect.Pointer, items)
		case rt.Kind() == reflect.Map:
			// A map with string keys: an object whose every property has the element's schema.
			if rt.Key().Kind() != reflect.String || prop["type"] != "object" {
				t.Errorf("%s: a map, want type object with string keys", where)
				return
			}
			elem, ok := prop["additionalProperties"].(map[string]any)
			if !ok {
				t.Errorf("%s: a map, want additionalProperties with the element's schema", where)
				return
			}
			checkValue(where+"{}", rt.Elem(), false, elem)
		case rt.Kind() == reflect.String && rt.PkgPath() != "":
			if ref != "#/$defs/"+rt.Name() {
				t.Errorf("%s: dcm.%s, want $ref #/$defs/%s, have %q", where, rt.Name(), rt.Name(), ref)
				return
			}
			reached[rt.Name()] = true
			checkEnum(t, "$defs/"+rt.Name(), s.defs[rt.Name()], consts[rt.Name()])
		default:
			want := map[reflect.Kind]string{reflect.String: "string", reflect.Bool: "boolean", reflect.Float64: "number",
				reflect.Int: "integer", reflect.Int64: "integer", reflect.Uint64: "integer", reflect.Uint: "integer"}[rt.Kind()]
			if want == "" {
				t.Errorf("%s: Go kind %s has no schema rule in this test", where, rt.Kind())
			} else if prop["type"] != want {
				t.Errorf("%s: type %v, want %s", where, prop["type"], want)
			}
		}
	}
	walk(reflect.TypeFor[dcm.FeedMessage]())
	// The message type is a plain string in Go; its values are the FeedType constants.
	typeProp := s.defs["FeedMessage"]["properties"].(map[string]any)["type"].(map[string]any)
	checkEnum(t, "FeedMessage.type", typeProp, consts["FeedType*"])
	for name := range s.defs {
		if !reached[name] {
			t.Errorf("$defs/%s describes no Go type of a FeedMessage", name)
		}
	}
}

func checkEnum(t *testing.T, where string, node map[string]any, want []string) {
	t.Helper()
	var have []string
	for _, v := range asSlice(node["enum"]) {
		have = append(have, v.(string))
	}
	slices.Sort(have)
	slices.Sort(want)
	if node["type"] != "string" || len(want) == 0 || !slices.Equal(have, want) {
		t.Errorf("%s: enum %v, want the Go constants %v", where, have, want)
	}
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// goStringConsts reads the string constants of the model's source, by
// declared type; untyped FeedType… constants are listed under "FeedType*".
func goStringConsts(t *testing.T, dir string) map[string][]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files in %s: %v", dir, err)
	}
	out := map[string][]string{}
	fset := gotoken.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != gotoken.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != gotoken.STRING {
						continue
					}
					v, _ := strconv.Unquote(lit.Value)
					switch typ, _ := vs.Type.(*ast.Ident); {
					case typ != nil:
						out[typ.Name] = append(out[typ.Name], v)
					case strings.HasPrefix(name.Name, "FeedType"):
						out["FeedType*"] = append(out["FeedType*"], v)
					}
				}
			}
		}
	}
	return out
}

// jsonSchema validates JSON against docs/feed.schema.json. No JSON Schema
// library is available, so this implements the subset the schema uses and
// refuses a schema that uses more: type, properties, required,
// additionalProperties (false, or a schema for maps), items, enum, const, minimum, format
// date-time, $ref to $defs, allOf, if/then.
type jsonSchema struct {
	root map[string]any
	defs map[string]map[string]any
	mu   sync.Mutex
	// seen holds "Def.property" for every property a validated message carried.
	seen map[string]bool
}

func loadSchema(t testing.TB) *jsonSchema {
	t.Helper()
	keywords := map[string]bool{"$schema": true, "$id": true, "$ref": true, "$defs": true, "title": true,
		"description": true, "type": true, "properties": true, "required": true, "additionalProperties": true,
		"items": true, "enum": true, "const": true, "minimum": true, "format": true, "allOf": true, "if": true, "then": true}
	b, err := os.ReadFile("../docs/feed.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	s := &jsonSchema{defs: map[string]map[string]any{}, seen: map[string]bool{}}
	if err := dec.Decode(&s.root); err != nil {
		t.Fatalf("docs/feed.schema.json: %v", err)
	}
	if s.root["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("$schema %v, want draft 2020-12", s.root["$schema"])
	}
	defs, _ := s.root["$defs"].(map[string]any)
	for name, d := range defs {
		s.defs[name] = d.(map[string]any)
	}
	var check func(where string, node map[string]any)
	check = func(where string, node map[string]any) {
		for k, v := range node {
			if !keywords[k] {
				t.Errorf("schema %s uses %q, which the test's validator does not implement", where, k)
			}
			switch k {
			case "additionalProperties":
				switch sub := v.(type) {
				case bool:
					if sub {
						t.Errorf("schema %s: additionalProperties true says nothing; leave it out", where)
					}
				case map[string]any:
					check(where+"/"+k, sub)
				default:
					t.Errorf("schema %s: additionalProperties must be false or a schema", where)
				}
			case "format":
				if v != "date-time" {
					t.Errorf("schema %s: format %v is not supported", where, v)
				}
			case "$ref":
				if _, ok := s.defs[strings.TrimPrefix(v.(string), "#/$defs/")]; !ok || !strings.HasPrefix(v.(string), "#/$defs/") {
					t.Errorf("schema %s: $ref %v leads nowhere", where, v)
				}
			case "properties", "$defs":
				for name, sub := range v.(map[string]any) {
					check(where+"/"+k+"/"+name, sub.(map[string]any))
				}
			case "items", "if", "then":
				check(where+"/"+k, v.(map[string]any))
			case "allOf":
				for i, sub := range v.([]any) {
					check(fmt.Sprintf("%s/allOf/%d", where, i), sub.(map[string]any))
				}
			}
		}
	}
	check("#", s.root)
	return s
}

func (s *jsonSchema) validate(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.check(s.root, v, "$", "", true)...)
}

// check validates v at path against node; def names the $defs entry node
// belongs to, for recording which properties were seen.
func (s *jsonSchema) check(node map[string]any, v any, path, def string, record bool) []error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(path+": "+format, args...)) }
	if ref, ok := node["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/$defs/")
		errs = append(errs, s.check(s.defs[name], v, path, name, record)...)
	}
	if typ, ok := node["type"]; ok {
		types := asSlice(typ)
		if types == nil {
			types = []any{typ}
		}
		if !slices.ContainsFunc(types, func(t any) bool { return hasType(v, t.(string)) }) {
			fail("%v is not of type %v", v, typ)
			return errs
		}
	}
	if enum, ok := node["enum"]; ok && !slices.ContainsFunc(asSlice(enum), func(e any) bool { return e == v }) {
		fail("%v is not in enum %v", v, enum)
	}
	if c, ok := node["const"]; ok && fmt.Sprint(c) != fmt.Sprint(v) {
		fail("%v is not the const %v", v, c)
	}
	if min, ok := node["minimum"].(json.Number); ok {
		if n, isNum := v.(json.Number); isNum {
			if a, _ := n.Float64(); a < mustFloat(min) {
				fail("%v is below the minimum %v", v, min)
			}
		}
	}
	if node["format"] == "date-time" {
		if str, ok := v.(string); ok {
			if _, err := time.Parse(time.RFC3339Nano, str); err != nil {
				fail("%q is not a date-time", str)
			}
		}
	}
	if obj, ok := v.(map[string]any); ok {
		props, _ := node["properties"].(map[string]any)
		for k, val := range obj {
			p, ok := props[k].(map[string]any)
			if !ok {
				switch extra := node["additionalProperties"].(type) {
				case bool:
					if !extra {
						fail("property %q is not allowed", k)
					}
				case map[string]any:
					errs = append(errs, s.check(extra, val, path+"."+k, "", record)...)
				}
				continue
			}
			if record && def != "" {
				s.seen[def+"."+k] = true
			}
			errs = append(errs, s.check(p, val, path+"."+k, "", record)...)
		}
		for _, r := range asSlice(node["required"]) {
			if _, ok := obj[r.(string)]; !ok {
				fail("required property %q is missing", r)
			}
		}
	}
	if arr, ok := v.([]any); ok {
		if items, ok := node["items"].(map[string]any); ok {
			for i, item := range arr {
				errs = append(errs, s.check(items, item, fmt.Sprintf("%s[%d]", path, i), "", record)...)
			}
		}
	}
	for _, sub := range asSlice(node["allOf"]) {
		errs = append(errs, s.check(sub.(map[string]any), v, path, def, record)...)
	}
	if cond, ok := node["if"].(map[string]any); ok && len(s.check(cond, v, path, "", false)) == 0 {
		if then, ok := node["then"].(map[string]any); ok {
			errs = append(errs, s.check(then, v, path, def, record)...)
		}
	}
	return errs
}

func hasType(v any, typ string) bool {
	switch typ {
	case "null":
		return v == nil
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		_, err := strconv.ParseInt(n.String(), 10, 64)
		if err != nil {
			_, err = strconv.ParseUint(n.String(), 10, 64)
		}
		return err == nil
	case "array":
		_, ok := v.([]any)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	}
	return false
}

func mustFloat(n json.Number) float64 {
	f, _ := n.Float64()
	return f
}

// TestFeedFilterMapOps: a filtered feed gets of a map replace only the
// entries of its own backends, and no map replace when none is left.
func TestFeedFilterMapOps(t *testing.T) {
	other := "be_http:other:x"
	op := dcm.Op{Kind: dcm.OpMapReplace, Map: dcm.MapHostExact,
		Set: []dcm.MapEntry{{Key: "a/", Backend: webName}, {Key: "b/", Backend: other}},
		Del: []dcm.MapEntry{{Key: "c/", Backend: other}}}
	ev := dcm.Event{Type: dcm.EventApplied, Backends: []string{webName, other}, Ops: []dcm.Op{op}}
	got, ok := feedFilter{namespace: "demo"}.keepEvent(ev)
	if !ok || len(got.Ops) != 1 || !reflect.DeepEqual(got.Ops[0].Set, op.Set[:1]) || len(got.Ops[0].Del) != 0 {
		t.Errorf("namespace demo: %v %+v", ok, got.Ops)
	}
	if got, _ := (feedFilter{namespace: "demo", backend: webName}).keepEvent(ev); len(got.Ops) != 1 || len(got.Ops[0].Set) != 1 {
		t.Errorf("backend web: ops %+v", got.Ops)
	}
	ev.Backends = []string{other}
	if _, ok := (feedFilter{namespace: "demo"}).keepEvent(ev); ok {
		t.Errorf("an event about another namespace is kept: %v", ok)
	}
}
