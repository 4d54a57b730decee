// Package feedclient reads dcm's live feed (GET /api/v1/feed, described in
// docs/feed.md) for tools. Dial opens one connection and checks that the
// server keeps the feed's order; Run keeps a feed going across disconnects
// and drops, resuming each time from the last seq it handed over, so the
// handler sees every event exactly once or, when the server no longer keeps
// the missed events, a fresh snapshot.
package feedclient

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"github.com/dcm-router/dcm/dcm"
)

// FeedPath is where a dcm server serves its feed.
const FeedPath = "/api/v1/feed"

// Defaults of Options.
const (
	DefaultMinBackoff  = 250 * time.Millisecond
	DefaultMaxBackoff  = 30 * time.Second
	DefaultIdleTimeout = 60 * time.Second
	// maxMessage bounds one message: a snapshot of a large cluster is a few
	// megabytes, anything near this is not dcm talking.
	maxMessage = 256 << 20
	// handshakeTimeout bounds the TCP, TLS and HTTP upgrade exchange.
	handshakeTimeout = 15 * time.Second
)

// ErrProtocol says the server broke the feed's order (a seq going backwards,
// a gap in an unfiltered feed, a missing hello or snapshot). Run does not
// retry it: resuming from a server that loses track would hide the fault.
var ErrProtocol = errors.New("feed protocol violation")

// Options say where the feed is and what to ask of it.
type Options struct {
	// URL is the dcm portal: http://host:port or https://host:port, with an
	// optional path prefix; ws:// and wss:// work too.
	URL string
	// Token is sent as a bearer token: one from dcm's token file, or a
	// Kubernetes token allowed to get haproxy.dcm.io.
	Token string
	// Since resumes from this seq: the events after it follow, or a snapshot
	// when the server no longer keeps them. 0 starts with a snapshot.
	Since uint64
	// Namespace and Backend narrow the feed (empty: everything).
	Namespace string
	Backend   string
	// Header is added to the upgrade request.
	Header http.Header
	// TLSConfig is used for https and wss URLs (nil: the system's roots).
	TLSConfig *tls.Config
	// MinBackoff and MaxBackoff bound Run's wait between attempts; it doubles
	// from MinBackoff after each failed attempt, with jitter.
	MinBackoff, MaxBackoff time.Duration
	// IdleTimeout is how long a connection may stay silent before it counts
	// as dead; the server pings every 20s by default.
	IdleTimeout time.Duration
	// Log receives connects and reconnects (nil: discarded).
	Log *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.MinBackoff <= 0 {
		o.MinBackoff = DefaultMinBackoff
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(DefaultMaxBackoff, o.MinBackoff)
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return o
}

// feedURL turns the portal's URL into the feed's websocket URL.
func feedURL(base string, since uint64, resume bool, namespace, backend string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("feed URL %q, want http(s)://host:port: %w", base, err)
	}
	switch u.Scheme {
	case "http", "ws":
		u.Scheme = "ws"
	case "https", "wss":
		u.Scheme = "wss"
	default:
		return "", fmt.Errorf("feed URL %q: want http(s)://host:port", base)
	}
	if u.Host == "" {
		return "", fmt.Errorf("feed URL %q: no host", base)
	}
	if !strings.HasSuffix(u.Path, FeedPath) {
		u.Path = strings.TrimSuffix(u.Path, "/") + FeedPath
	}
	q := url.Values{}
	if resume {
		q.Set("since", strconv.FormatUint(since, 10))
	}
	if namespace != "" {
		q.Set("namespace", namespace)
	}
	if backend != "" {
		q.Set("backend", backend)
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// HandshakeError is the server's answer when it refused the upgrade.
type HandshakeError struct {
	StatusCode int
	// Message is the server's explanation, when it gave one.
	Message string
}

func (e *HandshakeError) Error() string {
	msg := fmt.Sprintf("feed refused: HTTP %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

// Permanent reports whether retrying cannot help: the token, the
// permissions or the request are wrong.
func (e *HandshakeError) Permanent() bool {
	return e.StatusCode >= 400 && e.StatusCode < 500 &&
		e.StatusCode != http.StatusRequestTimeout && e.StatusCode != http.StatusTooManyRequests
}

// state is where a connection is in the feed's order.
type state int

const (
	awaitHello state = iota
	awaitSnapshot
	streaming
	closing // bye received; only the close frame may follow
)

// Conn is one feed connection. Its methods are not safe for concurrent use.
type Conn struct {
	ws       *websocket.Conn
	idle     time.Duration
	filtered bool
	asked    uint64 // the seq asked for with ?since=, when resume
	resume   bool
	st       state
	last     uint64
	hello    dcm.FeedHello
}

// Dial opens a feed connection as o asks. ctx bounds the handshake only.
func Dial(ctx context.Context, o Options) (*Conn, error) {
	o = o.withDefaults()
	return dial(ctx, o, o.Since, o.Since > 0)
}

func dial(ctx context.Context, o Options, since uint64, resume bool) (*Conn, error) {
	u, err := feedURL(o.URL, since, resume, o.Namespace, o.Backend)
	if err != nil {
		return nil, err
	}
	h := o.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	if o.Token != "" {
		h.Set("Authorization", "Bearer "+o.Token)
	}
	d := websocket.Dialer{
		Proxy:            http.ProxyFromEnvironment,
		HandshakeTimeout: handshakeTimeout,
		TLSClientConfig:  o.TLSConfig,
	}
	ws, resp, err := d.DialContext(ctx, u, h)
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			return nil, handshakeError(resp)
		}
		return nil, fmt.Errorf("dial feed %s: %w", u, err)
	}
	ws.SetReadLimit(maxMessage)
	return &Conn{ws: ws, idle: o.IdleTimeout, filtered: o.Namespace != "" || o.Backend != "",
		asked: since, resume: resume}, nil
}

// handshakeError reads the server's JSON error ({"error": "..."}) or text.
func handshakeError(resp *http.Response) error {
	he := &HandshakeError{StatusCode: resp.StatusCode}
	if resp.Body != nil {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		_ = resp.Body.Close()
		var apiErr struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(b, &apiErr) == nil && apiErr.Error != "" {
			he.Message = apiErr.Error
		} else {
			he.Message = strings.TrimSpace(string(b))
		}
	}
	return he
}

// Hello is the server's hello on this connection (zero before Next returned it).
func (c *Conn) Hello() dcm.FeedHello { return c.hello }

// Seq is the seq this connection has brought the client to: everything up
// to it was delivered or, in a filtered feed, left out. Resume from it.
func (c *Conn) Seq() uint64 { return c.last }

// Close ends the connection.
func (c *Conn) Close() error { return c.ws.Close() }

// Next reads the next message and checks that it keeps the feed's order.
// An error wrapping ErrProtocol means the server broke it; a
// *websocket.CloseError carries the close code (4000 too slow, 4001 server
// shutting down: resume from Seq).
func (c *Conn) Next(ctx context.Context) (dcm.FeedMessage, error) {
	// A read cannot take a context: an expired deadline interrupts it.
	stop := context.AfterFunc(ctx, func() { _ = c.ws.SetReadDeadline(time.Now()) })
	defer stop()
	_ = c.ws.SetReadDeadline(time.Now().Add(c.idle))
	var m dcm.FeedMessage
	if err := c.ws.ReadJSON(&m); err != nil {
		if ctx.Err() != nil {
			return m, ctx.Err()
		}
		return m, fmt.Errorf("read feed: %w", err)
	}
	return m, c.check(m)
}

func protocolError(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrProtocol}, args...)...)
}

// check applies docs/feed.md's order to m and advances the connection.
func (c *Conn) check(m dcm.FeedMessage) error {
	switch c.st {
	case awaitHello:
		if m.Type != dcm.FeedTypeHello || m.Hello == nil {
			return protocolError("first message is %q, want hello", m.Type)
		}
		if m.Hello.Protocol != dcm.FeedProtocol {
			return protocolError("server speaks protocol %d, this client %d", m.Hello.Protocol, dcm.FeedProtocol)
		}
		c.hello = *m.Hello
		if !m.Hello.Resumed {
			c.st = awaitSnapshot
			return nil
		}
		if !c.resume || m.Seq != c.asked {
			return protocolError("hello resumes at seq %d, asked for %d (resume %v)", m.Seq, c.asked, c.resume)
		}
		c.last, c.st = m.Seq, streaming
		return nil
	case awaitSnapshot:
		if m.Type != dcm.FeedTypeSnapshot || m.Snapshot == nil {
			return protocolError("%q after a hello that announced a snapshot", m.Type)
		}
		if m.Seq != m.Snapshot.Seq {
			return protocolError("snapshot message seq %d, snapshot seq %d", m.Seq, m.Snapshot.Seq)
		}
		// A snapshot may go back from the seq asked: the server restarted
		// and counts from 0 again. It replaces what the client knew.
		c.last, c.st = m.Seq, streaming
		return nil
	case closing:
		return protocolError("%q after bye", m.Type)
	}
	switch m.Type {
	case dcm.FeedTypeEvent:
		if m.Event == nil || m.Event.Seq != m.Seq {
			return protocolError("event message seq %d without a matching event", m.Seq)
		}
		if m.Seq <= c.last {
			return protocolError("event seq %d after %d", m.Seq, c.last)
		}
		if !c.filtered && m.Seq != c.last+1 {
			return protocolError("event seq %d after %d in an unfiltered feed: events %d-%d missing", m.Seq, c.last, c.last+1, m.Seq-1)
		}
	case dcm.FeedTypePing, dcm.FeedTypeBye:
		if m.Seq < c.last {
			return protocolError("%s seq %d after %d", m.Type, m.Seq, c.last)
		}
		if m.Type == dcm.FeedTypeBye {
			c.st = closing
		}
	case dcm.FeedTypeHello, dcm.FeedTypeSnapshot:
		return protocolError("%q in the middle of the feed", m.Type)
	default:
		// A newer server's message type: hand it over, keep the seq.
		return nil
	}
	c.last = m.Seq
	return nil
}

// HandlerError wraps what the handler returned, so Run's caller can tell it
// from a failure of the feed.
type HandlerError struct{ Err error }

func (e *HandlerError) Error() string { return "feed handler: " + e.Err.Error() }
func (e *HandlerError) Unwrap() error { return e.Err }

// Run hands every message of the feed to handle, in order, and reconnects
// after a disconnect, a bye or a silent connection, resuming from the last
// seq handed over (exponential backoff with jitter between attempts). It
// returns ctx.Err() when ctx ends, a *HandlerError when handle fails, and
// other errors when retrying cannot help: a refused token or permission
// (*HandshakeError), a bad URL, or ErrProtocol.
func Run(ctx context.Context, o Options, handle func(dcm.FeedMessage) error) error {
	o = o.withDefaults()
	if _, err := feedURL(o.URL, 0, false, o.Namespace, o.Backend); err != nil {
		return err
	}
	since, resume := o.Since, o.Since > 0
	for attempt := 0; ; attempt++ {
		connected, err := runOnce(ctx, o, &since, &resume, handle)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var he *HandshakeError
		var herr *HandlerError
		switch {
		case errors.As(err, &herr), errors.Is(err, ErrProtocol), errors.As(err, &he) && he.Permanent():
			return err
		}
		if connected {
			attempt = 0
		}
		wait := backoff(o.MinBackoff, o.MaxBackoff, attempt)
		o.Log.Warn("feed connection ended; reconnecting", "err", err, "in", wait.Round(time.Millisecond), "since", since, "resume", resume)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// runOnce serves one connection; connected says the server said hello.
func runOnce(ctx context.Context, o Options, since *uint64, resume *bool, handle func(dcm.FeedMessage) error) (connected bool, err error) {
	c, err := dial(ctx, o, *since, *resume)
	if err != nil {
		return false, err
	}
	defer c.Close()
	for {
		m, err := c.Next(ctx)
		if err != nil {
			return connected, err
		}
		if m.Type == dcm.FeedTypeHello {
			connected = true
			o.Log.Info("feed connected", "url", o.URL, "identity", m.Hello.Identity, "seq", m.Seq, "resumed", m.Hello.Resumed)
		}
		if err := handle(m); err != nil {
			return connected, &HandlerError{Err: err}
		}
		// Only now is the message the caller's: resume after it. A hello
		// announcing a snapshot moves nothing until the snapshot arrives.
		if c.st == streaming || c.st == closing {
			*since, *resume = c.Seq(), true
		}
	}
}

// backoff doubles from lo up to hi and keeps a random half of it, so that
// many clients dropped together do not come back together.
func backoff(lo, hi time.Duration, attempt int) time.Duration {
	d := hi
	if attempt < 32 && lo<<attempt > 0 && lo<<attempt < hi {
		d = lo << attempt
	}
	return d/2 + rand.N(d/2+1)
}
