package haproxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"time"
)

// DefaultReadTimeout bounds every read and write on the admin socket.
const DefaultReadTimeout = 5 * time.Second

// Observer learns the latency and outcome of every command a Client sends.
// Within a pipelined batch a command's duration is the time between its reply
// and the previous one (the first is measured from the start of the batch).
type Observer func(command string, d time.Duration, err error)

// ClientOptions tune a Client; the zero value is usable.
type ClientOptions struct {
	// ReadTimeout bounds each read and write; 0 means DefaultReadTimeout.
	ReadTimeout time.Duration
	Observer    Observer
	Logger      *slog.Logger
}

// Reply is HAProxy's answer to one command, without the prompt and the
// trailing blank line.
type Reply struct {
	Command  string
	Text     string
	Duration time.Duration
}

// CommandError is a reply that is not the success reply of its command.
type CommandError struct {
	Command string
	Reply   string
	// Index is the position of the command in its batch.
	Index int
}

func (e *CommandError) Error() string {
	return fmt.Sprintf("haproxy command %d %q failed: %q", e.Index, e.Command, truncate(e.Reply, 500))
}

// Client is one long-lived prompt-mode connection to the admin socket. Its
// methods are safe for concurrent use; batches run one at a time.
type Client struct {
	socket string
	opts   ClientOptions
	log    *slog.Logger

	mu   sync.Mutex
	conn *guardedConn // nil until the next Exec connects
	r    *bufio.Reader
}

// NewClient returns a client for the admin socket at path. It connects on
// first use and again after any I/O error.
func NewClient(socket string, opts ClientOptions) *Client {
	if opts.ReadTimeout <= 0 {
		opts.ReadTimeout = DefaultReadTimeout
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Client{socket: socket, opts: opts, log: log}
}

// Socket is the path the client connects to.
func (c *Client) Socket() string { return c.socket }

// Close drops the connection; the next Exec reconnects.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeLocked()
}

func (c *Client) closeLocked() error {
	if c.conn == nil {
		return nil
	}
	err := c.conn.Close()
	c.conn, c.r = nil, nil
	return err
}

// Exec sends cmds as one pipelined batch and returns the replies read, in
// order. A reply that is not its command's success reply becomes a
// *CommandError; the rest of the batch is still read so the connection stays
// in step, and all failures are returned joined. An I/O error or timeout
// closes the connection, since a half-read prompt stream cannot be reused.
func (c *Client) Exec(ctx context.Context, cmds []Command) ([]Reply, error) {
	return c.ExecStreams(ctx, cmds, nil)
}

// Stream reads the body of a reply too large to hold as one text: at
// 100,000 servers `show stat` is some 40 MB and `show servers state` 15 MB,
// and the strings parsed from them would keep them alive. It gets the
// reply's header lines (Reply.Text, which tells success) and the lines
// after them as HAProxy sends them, up to the prompt.
type Stream func(header string, body io.Reader) error

// ExecStreams is Exec, the reply of cmds[i] read by streams[i] when it is
// not nil (show stat and show servers state only: their header alone
// tells success). A reply whose header is not a success reply is read
// whole, as Exec reads it, and not streamed; what a stream leaves unread
// is read and dropped, so the connection stays in step; a stream's error
// is returned with the command failures.
func (c *Client) ExecStreams(ctx context.Context, cmds []Command, streams []Stream) ([]Reply, error) {
	for i, s := range streams {
		if s != nil && (i >= len(cmds) || cmds[i].headerLines() == 0) {
			return nil, fmt.Errorf("haproxy command %d: its reply cannot be streamed", i)
		}
	}
	for i, cmd := range cmds {
		if cmd.kind == 0 || cmd.text == "" || strings.Contains(cmd.text, "\n") || splitsCommand(cmd.text) {
			return nil, fmt.Errorf("haproxy command %d: not built by a constructor of this package", i)
		}
		if cmd.payload != "" {
			if err := payloadText(cmd.payload); err != nil {
				return nil, fmt.Errorf("haproxy command %d (%s): %w", i, cmd.text, err)
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("haproxy admin socket: %w", err)
	}
	if len(cmds) == 0 {
		return nil, nil
	}
	if c.conn == nil {
		if err := c.connectLocked(ctx); err != nil {
			return nil, err
		}
	}
	conn := c.conn
	conn.arm(ctx)
	stop := context.AfterFunc(ctx, conn.cancel)
	defer stop()

	start := time.Now()
	written := make(chan error, 1)
	go func() { written <- writeCommands(conn, cmds) }()

	replies := make([]Reply, 0, len(cmds))
	var failures []error
	prev := start
	for i, cmd := range cmds {
		var text string
		var err, serr error
		if i < len(streams) && streams[i] != nil {
			text, serr, err = readStreamed(c.r, cmd, streams[i])
		} else {
			text, err = readReply(c.r)
		}
		now := time.Now()
		d := now.Sub(prev)
		prev = now
		if err != nil {
			_ = c.closeLocked()
			werr := <-written
			ioErr := fmt.Errorf("haproxy admin socket %s: read reply %d of %d (%q): %w", c.socket, i+1, len(cmds), cmd.text, ioCause(ctx, err))
			if werr != nil && !errors.Is(werr, net.ErrClosed) {
				ioErr = fmt.Errorf("%w (write: %v)", ioErr, werr)
			}
			c.observe(cmd.text, d, ioErr)
			return replies, errors.Join(append(failures, ioErr)...)
		}
		replies = append(replies, Reply{Command: cmd.text, Text: text, Duration: d})
		var cerr error
		if !cmd.succeeded(text) {
			cerr = &CommandError{Command: cmd.text, Reply: text, Index: i}
			failures = append(failures, cerr)
		}
		if serr != nil {
			failures = append(failures, fmt.Errorf("haproxy command %d %q: reading its reply: %w", i, cmd.text, serr))
		}
		c.observe(cmd.text, d, cerr)
	}
	if err := <-written; err != nil {
		_ = c.closeLocked()
		return replies, errors.Join(append(failures, fmt.Errorf("haproxy admin socket %s: write: %w", c.socket, ioCause(ctx, err)))...)
	}
	c.log.Debug("haproxy batch", "commands", len(cmds), "failed", len(failures), "duration", time.Since(start))
	return replies, errors.Join(failures...)
}

func (c *Client) observe(cmd string, d time.Duration, err error) {
	if c.opts.Observer != nil {
		c.opts.Observer(cmd, d, err)
	}
}

// connectLocked opens the socket, enters prompt mode and asks for numeric
// severities, which is what tells an error reply from an informative one.
func (c *Client) connectLocked(ctx context.Context) error {
	d := net.Dialer{Timeout: c.opts.ReadTimeout}
	raw, err := d.DialContext(ctx, "unix", c.socket)
	if err != nil {
		return fmt.Errorf("haproxy admin socket: connect: %w", err)
	}
	conn := &guardedConn{Conn: raw, timeout: c.opts.ReadTimeout}
	conn.arm(ctx)
	stop := context.AfterFunc(ctx, conn.cancel)
	defer stop()
	r := bufio.NewReaderSize(conn, 64<<10)
	for _, line := range []string{"prompt", "set severity-output number"} {
		if _, err := conn.Write([]byte(line + "\n")); err != nil {
			_ = conn.Close()
			return fmt.Errorf("haproxy admin socket %s: send %q: %w", c.socket, line, ioCause(ctx, err))
		}
		reply, err := readReply(r)
		if err != nil {
			_ = conn.Close()
			return fmt.Errorf("haproxy admin socket %s: reply to %q: %w", c.socket, line, ioCause(ctx, err))
		}
		if reply != "" {
			_ = conn.Close()
			return fmt.Errorf("haproxy admin socket %s: unexpected reply to %q: %q", c.socket, line, truncate(reply, 200))
		}
	}
	c.conn, c.r = conn, r
	return nil
}

func ioCause(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w (%w)", ctx.Err(), err)
	}
	// The socket's deadline is the context's: on a busy machine the read
	// can time out before the context's own timer has marked it done.
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) && errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("%w (%w)", context.DeadlineExceeded, err)
	}
	return err
}

func writeCommands(conn *guardedConn, cmds []Command) error {
	w := bufio.NewWriterSize(conn, 32<<10)
	for _, cmd := range cmds {
		if _, err := w.WriteString(cmd.text); err != nil {
			return err
		}
		if cmd.payload != "" {
			// The payload ends with an empty line (payloadText allows none inside).
			if _, err := w.WriteString(" <<\n" + cmd.payload + "\n"); err != nil {
				return err
			}
		}
		if err := w.WriteByte('\n'); err != nil {
			return err
		}
	}
	return w.Flush()
}

// readReply reads one reply in prompt mode. HAProxy ends every reply with the
// prompt "> " at the start of a line and no newline after it, so the prompt
// is recognised when a line begins with it. The text is returned without its
// trailing newlines: "" for an empty reply, "[6]: Server deleted." for
// replies that carry no blank line before the prompt.
func readReply(r *bufio.Reader) (string, error) {
	var b strings.Builder
	atLineStart := true
	for {
		if atLineStart {
			p, err := r.Peek(2)
			if err != nil {
				return "", err
			}
			if p[0] == '>' && p[1] == ' ' {
				_, _ = r.Discard(2)
				return strings.TrimRight(b.String(), "\n"), nil
			}
		}
		chunk, err := r.ReadSlice('\n')
		b.Write(chunk)
		switch {
		case err == nil:
			atLineStart = true
		case errors.Is(err, bufio.ErrBufferFull):
			atLineStart = false
		default:
			return "", err
		}
	}
}

// readStreamed reads a reply through s: its header lines, then, when they
// are a success reply, its body through s. err is an I/O error (the
// connection is out of step), serr the stream's own.
func readStreamed(r *bufio.Reader, cmd Command, s Stream) (text string, serr, err error) {
	body := &replyBody{r: r, atLineStart: true}
	var head strings.Builder
	buf := make([]byte, 4096)
	for lines := 0; lines < cmd.headerLines(); {
		n, err := body.Read(buf)
		head.Write(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", nil, err
		}
		if n > 0 && buf[n-1] == '\n' {
			lines++
		}
	}
	text = strings.TrimRight(head.String(), "\n")
	if body.done || !cmd.succeeded(text) {
		rest, err := io.ReadAll(body) // an error reply: a line or two
		return strings.TrimRight(head.String()+string(rest), "\n"), nil, err
	}
	serr = s(text, body)
	if _, err := io.Copy(io.Discard, body); err != nil {
		return text, serr, err
	}
	return text, serr, nil
}

// replyBody reads a reply in prompt mode up to its prompt, which it
// consumes and does not return (see readReply). An I/O error sticks; the
// connection's end before the prompt is io.ErrUnexpectedEOF, so that a
// reader of the body cannot take a cut reply for a whole one.
type replyBody struct {
	r           *bufio.Reader
	atLineStart bool
	done        bool // the prompt was read
	err         error
}

// Read returns at most one line (or what is buffered of it), so that a
// prompt is always looked for at the start of a line.
func (b *replyBody) Read(p []byte) (int, error) {
	switch {
	case b.err != nil:
		return 0, b.err
	case b.done:
		return 0, io.EOF
	case len(p) == 0:
		return 0, nil
	}
	if b.atLineStart {
		pk, err := b.r.Peek(2)
		if err != nil {
			return 0, b.fail(err)
		}
		if pk[0] == '>' && pk[1] == ' ' {
			_, _ = b.r.Discard(2)
			b.done = true
			return 0, io.EOF
		}
	}
	n := b.r.Buffered()
	if n == 0 {
		if _, err := b.r.Peek(1); err != nil {
			return 0, b.fail(err)
		}
		n = b.r.Buffered()
	}
	buf, _ := b.r.Peek(min(n, len(p)))
	b.atLineStart = false
	if i := bytes.IndexByte(buf, '\n'); i >= 0 {
		buf, b.atLineStart = buf[:i+1], true
	}
	k := copy(p, buf)
	_, _ = b.r.Discard(k)
	return k, nil
}

func (b *replyBody) fail(err error) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	b.err = err
	return err
}

// guardedConn sets a fresh deadline before every read and write, bounded by
// the batch's context deadline, and turns a cancelled context into an
// immediate error even when the cancel races with a deadline refresh.
type guardedConn struct {
	net.Conn
	timeout time.Duration

	mu        sync.Mutex
	ctxDL     time.Time
	cancelled bool
}

// arm readies the connection for a batch under ctx.
func (g *guardedConn) arm(ctx context.Context) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.ctxDL, _ = ctx.Deadline()
	g.cancelled = false
}

func (g *guardedConn) cancel() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.cancelled = true
	_ = g.Conn.SetDeadline(time.Unix(1, 0))
}

func (g *guardedConn) deadline() (time.Time, error) {
	if g.cancelled {
		return time.Time{}, context.Canceled
	}
	dl := time.Now().Add(g.timeout)
	if !g.ctxDL.IsZero() && g.ctxDL.Before(dl) {
		dl = g.ctxDL
	}
	return dl, nil
}

func (g *guardedConn) Read(p []byte) (int, error) {
	g.mu.Lock()
	dl, err := g.deadline()
	if err == nil {
		err = g.Conn.SetReadDeadline(dl)
	}
	g.mu.Unlock()
	if err != nil {
		return 0, err
	}
	return g.Conn.Read(p)
}

func (g *guardedConn) Write(p []byte) (int, error) {
	g.mu.Lock()
	dl, err := g.deadline()
	if err == nil {
		err = g.Conn.SetWriteDeadline(dl)
	}
	g.mu.Unlock()
	if err != nil {
		return 0, err
	}
	return g.Conn.Write(p)
}
