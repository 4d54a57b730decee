package feedclient_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
	"github.com/dcm-router/dcm/server/feedclient"
	"github.com/dcm-router/dcm/server/feedclient/feedtest"
)

// recorder is a Run handler that keeps every message for the test to read.
type recorder struct {
	mu   sync.Mutex
	msgs []dcm.FeedMessage
}

func newRecorder() *recorder { return &recorder{} }

func (r *recorder) handle(m dcm.FeedMessage) error {
	r.mu.Lock()
	r.msgs = append(r.msgs, m)
	r.mu.Unlock()
	return nil
}

func (r *recorder) all() []dcm.FeedMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.msgs)
}

// waitFor waits until cond holds for the messages so far.
func (r *recorder) waitFor(t *testing.T, what string, cond func([]dcm.FeedMessage) bool) {
	t.Helper()
	testkit.Eventually(t, what, 10*time.Second, func() error {
		if msgs := r.all(); !cond(msgs) {
			return fmt.Errorf("got %s", summary(msgs))
		}
		return nil
	})
}

func ofType(msgs []dcm.FeedMessage, typ string) []dcm.FeedMessage {
	return slices.DeleteFunc(slices.Clone(msgs), func(m dcm.FeedMessage) bool { return m.Type != typ })
}

func eventSeqs(msgs []dcm.FeedMessage) []uint64 {
	var out []uint64
	for _, m := range ofType(msgs, dcm.FeedTypeEvent) {
		out = append(out, m.Seq)
	}
	return out
}

func hasEvent(seq uint64) func([]dcm.FeedMessage) bool {
	return func(msgs []dcm.FeedMessage) bool { return slices.Contains(eventSeqs(msgs), seq) }
}

func summary(msgs []dcm.FeedMessage) string {
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "%s:%d ", m.Type, m.Seq)
	}
	return b.String()
}

func seqRange(from, to uint64) []uint64 {
	var out []uint64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

func publish(srv *feedtest.Server, n int) {
	for range n {
		srv.Engine.Publish(dcm.Event{Type: dcm.EventAction, Actor: "test", Message: "tick"})
	}
}

var twoBackends = dcm.Snapshot{Mode: dcm.ModeDynamic, Backends: []*dcm.Backend{
	{Name: "be_http:demo:web", Kind: dcm.KindHTTP, Route: dcm.Route{Namespace: "demo", Name: "web", Kind: dcm.KindHTTP}},
	{Name: "be_http:other:app", Kind: dcm.KindHTTP, Route: dcm.Route{Namespace: "other", Name: "app", Kind: dcm.KindHTTP}},
}}

// runInBackground runs feedclient.Run until the test ends and returns where
// its result will arrive.
func runInBackground(t *testing.T, o feedclient.Options, handle func(dcm.FeedMessage) error) <-chan error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- feedclient.Run(ctx, o, handle) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("Run did not return after its context ended")
		}
	})
	return done
}

// TestRunResumes: whatever ends a connection, Run comes back resuming from
// the last seq it handed over, and the handler sees every event once, in
// order, including those published while it was away.
func TestRunResumes(t *testing.T) {
	tests := []struct {
		name string
		// disrupt ends the client's connection.
		disrupt func(srv *feedtest.Server)
		idle    time.Duration
		wantBye string
	}{
		{name: "connection cut", disrupt: (*feedtest.Server).Cut},
		{name: "server says bye", disrupt: (*feedtest.Server).Bye, wantBye: "server shutting down; resume with ?since=6"},
		// The server pings every minute here: silence for longer than the
		// client's idle timeout means a dead connection.
		{name: "silent connection", disrupt: func(*feedtest.Server) {}, idle: 500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := feedtest.Start(t, feedtest.Options{PingEvery: time.Minute})
			publish(srv, 3) // before the client: in its snapshot
			rec := newRecorder()
			runInBackground(t, feedclient.Options{URL: srv.URL, Token: feedtest.Token,
				MinBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, IdleTimeout: tt.idle}, rec.handle)
			rec.waitFor(t, "the snapshot", func(m []dcm.FeedMessage) bool { return len(ofType(m, dcm.FeedTypeSnapshot)) == 1 })
			publish(srv, 3)
			rec.waitFor(t, "event 6", hasEvent(6))

			// While down, the server answers 503, which Run retries.
			srv.SetDown(true)
			tt.disrupt(srv)
			srv.WaitSubscribers(t, 0)
			publish(srv, 4) // 7-10, missed
			srv.SetDown(false)
			rec.waitFor(t, "event 10", hasEvent(10))
			publish(srv, 1)
			rec.waitFor(t, "event 11", hasEvent(11))

			msgs := rec.all()
			if got := eventSeqs(msgs); !slices.Equal(got, seqRange(4, 11)) {
				t.Errorf("events %v, want each of 4-11 once in order", got)
			}
			snaps := ofType(msgs, dcm.FeedTypeSnapshot)
			if len(snaps) != 1 || snaps[0].Seq != 3 {
				t.Errorf("snapshots %s, want one at seq 3", summary(snaps))
			}
			// A silent connection may also end before the outage: that
			// reconnect resumes at 6 as well.
			hellos := ofType(msgs, dcm.FeedTypeHello)
			if len(hellos) < 2 || hellos[0].Hello.Resumed || hellos[len(hellos)-1].Seq != 6 ||
				slices.ContainsFunc(hellos[1:], func(m dcm.FeedMessage) bool { return !m.Hello.Resumed }) {
				t.Errorf("hellos %s, want a fresh one, then resuming ones, the last at 6", summary(hellos))
			}
			byes := ofType(msgs, dcm.FeedTypeBye)
			if tt.wantBye == "" && len(byes) != 0 || tt.wantBye != "" && (len(byes) != 1 || byes[0].Reason != tt.wantBye) {
				t.Errorf("byes %+v, want reason %q", byes, tt.wantBye)
			}
		})
	}
}

// TestRunSnapshotAfterLongOutage: when the server no longer keeps the
// events missed, the client gets a snapshot instead, and then live events.
func TestRunSnapshotAfterLongOutage(t *testing.T) {
	srv := feedtest.Start(t, feedtest.Options{EventBuffer: 5})
	rec := newRecorder()
	runInBackground(t, feedclient.Options{URL: srv.URL, Token: feedtest.Token, MinBackoff: 20 * time.Millisecond}, rec.handle)
	rec.waitFor(t, "the snapshot", func(m []dcm.FeedMessage) bool { return len(ofType(m, dcm.FeedTypeSnapshot)) == 1 })
	publish(srv, 2)
	rec.waitFor(t, "event 2", hasEvent(2))
	srv.SetDown(true)
	srv.Cut()
	srv.WaitSubscribers(t, 0)
	publish(srv, 20) // 3-22: the ring keeps 18-22 only
	srv.SetDown(false)
	rec.waitFor(t, "a second snapshot", func(m []dcm.FeedMessage) bool { return len(ofType(m, dcm.FeedTypeSnapshot)) == 2 })
	publish(srv, 1)
	rec.waitFor(t, "event 23", hasEvent(23))

	msgs := rec.all()
	hellos := ofType(msgs, dcm.FeedTypeHello)
	if len(hellos) != 2 || hellos[1].Hello.Resumed || hellos[1].Seq != 22 {
		t.Errorf("hellos %+v, want the second fresh at seq 22", hellos)
	}
	if got := eventSeqs(msgs); !slices.Equal(got, []uint64{1, 2, 23}) {
		t.Errorf("events %v, want 1, 2, then 23 after the snapshot", got)
	}
	if snaps := ofType(msgs, dcm.FeedTypeSnapshot); snaps[1].Seq != 22 {
		t.Errorf("second snapshot at %d, want 22", snaps[1].Seq)
	}
}

// TestRunStops: Run gives up at once when retrying cannot help, and says why.
func TestRunStops(t *testing.T) {
	errStop := errors.New("enough")
	tests := []struct {
		name     string
		opts     feedclient.Options
		handle   func(dcm.FeedMessage) error
		wantCode int   // a *HandshakeError with this status
		wantIs   error // errors.Is
		wantText string
	}{
		{name: "no token", opts: feedclient.Options{}, wantCode: http.StatusUnauthorized},
		{name: "wrong token", opts: feedclient.Options{Token: "not-the-token-at-all"}, wantCode: http.StatusUnauthorized},
		{name: "foreign origin", opts: feedclient.Options{Token: feedtest.Token, Header: http.Header{"Origin": {"http://evil.example"}}},
			wantCode: http.StatusForbidden, wantText: "cross-origin"},
		{name: "bad namespace", opts: feedclient.Options{Token: feedtest.Token, Namespace: "Not_A_Label"}, wantCode: http.StatusBadRequest},
		{name: "handler fails", opts: feedclient.Options{Token: feedtest.Token},
			handle: func(dcm.FeedMessage) error { return errStop }, wantIs: errStop, wantText: "feed handler: enough"},
		{name: "not an http URL", opts: feedclient.Options{URL: "ftp://127.0.0.1:1", Token: feedtest.Token}, wantText: "want http(s)://host:port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := feedtest.Start(t, feedtest.Options{})
			if tt.opts.URL == "" {
				tt.opts.URL = srv.URL
			}
			if tt.handle == nil {
				tt.handle = func(dcm.FeedMessage) error { return nil }
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := feedclient.Run(ctx, tt.opts, tt.handle)
			if err == nil || ctx.Err() != nil {
				t.Fatalf("Run = %v, want it to give up before the context ends", err)
			}
			if tt.wantCode != 0 {
				var he *feedclient.HandshakeError
				if !errors.As(err, &he) || he.StatusCode != tt.wantCode || !he.Permanent() {
					t.Errorf("Run = %v, want a permanent refusal with HTTP %d", err, tt.wantCode)
				}
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("Run = %v, want it to wrap %v", err, tt.wantIs)
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("Run = %q, want it to mention %q", err, tt.wantText)
			}
		})
	}
}

// TestRunEndsWithContext: cancelling Run closes its connection promptly,
// also while it waits between attempts.
func TestRunEndsWithContext(t *testing.T) {
	for _, down := range []bool{false, true} {
		t.Run(fmt.Sprintf("down=%v", down), func(t *testing.T) {
			srv := feedtest.Start(t, feedtest.Options{})
			srv.SetDown(down)
			ctx, cancel := context.WithCancel(context.Background())
			rec := newRecorder()
			done := make(chan error, 1)
			go func() {
				done <- feedclient.Run(ctx, feedclient.Options{URL: srv.URL, Token: feedtest.Token, MinBackoff: time.Minute}, rec.handle)
			}()
			if !down {
				rec.waitFor(t, "the snapshot", func(m []dcm.FeedMessage) bool { return len(ofType(m, dcm.FeedTypeSnapshot)) == 1 })
			}
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("Run = %v, want context.Canceled", err)
				}
			case <-time.After(2 * time.Second):
				t.Fatal("Run did not return after cancel")
			}
			srv.WaitSubscribers(t, 0)
		})
	}
}

// TestDial: one connection, resuming or filtered, with the order checked.
func TestDial(t *testing.T) {
	tests := []struct {
		name        string
		opts        feedclient.Options
		wantResumed bool
		wantSeqs    []uint64
	}{
		{name: "fresh", wantSeqs: []uint64{4, 5, 6}},
		{name: "since 1", opts: feedclient.Options{Since: 1}, wantResumed: true, wantSeqs: []uint64{2, 3, 4, 5, 6}},
		{name: "since the future", opts: feedclient.Options{Since: 99}, wantSeqs: []uint64{4, 5, 6}},
		{name: "namespace other", opts: feedclient.Options{Since: 1, Namespace: "other"}, wantResumed: true, wantSeqs: []uint64{2, 3, 5, 6}},
		{name: "backend web", opts: feedclient.Options{Backend: "be_http:demo:web"}, wantSeqs: []uint64{4, 6}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := feedtest.Start(t, feedtest.Options{Snapshot: twoBackends})
			// 1: web, 2: other, 3: reload (everyone's)
			srv.Engine.Publish(dcm.Event{Type: dcm.EventApplied, Backends: []string{"be_http:demo:web"}})
			srv.Engine.Publish(dcm.Event{Type: dcm.EventApplied, Backends: []string{"be_http:other:app"}})
			srv.Engine.Publish(dcm.Event{Type: dcm.EventReload, Reload: &dcm.ReloadInfo{Reasons: []dcm.ReloadReason{dcm.ReasonManual}}})
			tt.opts.URL, tt.opts.Token = srv.URL, feedtest.Token
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := feedclient.Dial(ctx, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			first, err := c.Next(ctx)
			if err != nil || first.Type != dcm.FeedTypeHello {
				t.Fatalf("first message %+v, %v; want hello", first, err)
			}
			if c.Hello().Resumed != tt.wantResumed {
				t.Errorf("resumed %v, want %v", c.Hello().Resumed, tt.wantResumed)
			}
			if !tt.wantResumed {
				if m, err := c.Next(ctx); err != nil || m.Type != dcm.FeedTypeSnapshot || m.Seq != 3 {
					t.Fatalf("after hello %+v, %v; want the snapshot at seq 3", m, err)
				}
			}
			// 4: web, 5: other, 6: reload
			srv.Engine.Publish(dcm.Event{Type: dcm.EventApplied, Backends: []string{"be_http:demo:web"}})
			srv.Engine.Publish(dcm.Event{Type: dcm.EventApplied, Backends: []string{"be_http:other:app"}})
			srv.Engine.Publish(dcm.Event{Type: dcm.EventReload, Reload: &dcm.ReloadInfo{Reasons: []dcm.ReloadReason{dcm.ReasonManual}}})
			var got []uint64
			for len(got) == 0 || got[len(got)-1] != 6 {
				m, err := c.Next(ctx)
				if err != nil {
					t.Fatalf("after events %v: %v", got, err)
				}
				got = append(got, m.Seq)
			}
			if !slices.Equal(got, tt.wantSeqs) {
				t.Errorf("events %v, want %v", got, tt.wantSeqs)
			}
			if c.Seq() != 6 {
				t.Errorf("Seq() = %d, want 6", c.Seq())
			}
		})
	}
}
