package haproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// Master speaks to the master CLI (haproxy -S): one command per connection,
// and the client half-closes after writing, or the master keeps the
// connection open and a read to EOF never ends.
type Master struct {
	socket  string
	timeout time.Duration
}

// NewMaster returns a master CLI client; timeout bounds each exchange.
func NewMaster(socket string, timeout time.Duration) *Master {
	if timeout <= 0 {
		timeout = DefaultReadTimeout
	}
	return &Master{socket: socket, timeout: timeout}
}

// Socket is the master CLI's path.
func (m *Master) Socket() string { return m.socket }

// command sends one line and reads the whole answer.
func (m *Master) command(ctx context.Context, line string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", m.socket)
	if err != nil {
		return "", fmt.Errorf("haproxy master socket: connect: %w", err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := io.WriteString(conn, line+"\n"); err != nil {
		return "", fmt.Errorf("haproxy master socket: send %q: %w", line, ioCause(ctx, err))
	}
	if err := conn.(*net.UnixConn).CloseWrite(); err != nil {
		return "", fmt.Errorf("haproxy master socket: half-close after %q: %w", line, err)
	}
	out, err := io.ReadAll(conn)
	if err != nil {
		return "", fmt.Errorf("haproxy master socket: read reply to %q: %w", line, ioCause(ctx, err))
	}
	return string(out), nil
}

// ShowProc lists the master and its workers.
func (m *Master) ShowProc(ctx context.Context) (Procs, error) {
	out, err := m.command(ctx, "show proc")
	if err != nil {
		return Procs{}, err
	}
	p, err := ParseProc(out)
	if err != nil {
		return Procs{}, fmt.Errorf("haproxy master: %w", err)
	}
	return p, nil
}

// ReloadResult describes a completed reload.
type ReloadResult struct {
	OldPID, NewPID int
	Duration       time.Duration
}

// ErrReloadRejected means the master could not load the new configuration;
// the old worker keeps serving the old one.
var ErrReloadRejected = errors.New("haproxy rejected the new configuration; the old worker keeps serving")

// Reload asks the master to reload and waits until show proc lists a new
// current worker, or until the failed-reload count grows. 2.6 answers
// nothing to `reload`, so show proc is the only witness. Files must be
// validated before: this is the last line of defence.
func (m *Master) Reload(ctx context.Context, timeout time.Duration) (ReloadResult, error) {
	start := time.Now()
	before, err := m.ShowProc(ctx)
	if err != nil {
		return ReloadResult{}, fmt.Errorf("reload: %w", err)
	}
	old, ok := before.Current()
	if !ok {
		return ReloadResult{}, errors.New("reload: the master has no worker")
	}
	res := ReloadResult{OldPID: old.PID}
	// The master re-executes itself and drops the connection, so an error
	// reading the (empty) answer says nothing: show proc decides.
	_, _ = m.command(ctx, "reload")

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return res, fmt.Errorf("reload: no new worker after %s: %w (last error: %w)", time.Since(start).Round(time.Millisecond), ctx.Err(), lastErr)
			}
			return res, fmt.Errorf("reload: no new worker after %s: %w", time.Since(start).Round(time.Millisecond), ctx.Err())
		case <-tick.C:
		}
		now, err := m.ShowProc(ctx)
		if err != nil {
			lastErr = err // the master is busy re-executing
			continue
		}
		if now.Failed > before.Failed {
			res.Duration = time.Since(start)
			return res, fmt.Errorf("reload (master %d, failed reloads %d): %w", now.Master.PID, now.Failed, ErrReloadRejected)
		}
		if cur, ok := now.Current(); ok && cur.PID != old.PID {
			res.NewPID = cur.PID
			res.Duration = time.Since(start)
			return res, nil
		}
	}
}
