package haproxy

import (
	"context"
	"fmt"
	"strconv"
)

// MaxConnLimit bounds --max-connections and the runtime change alike.
const MaxConnLimit = 10000000

// SetMaxConnCommand is `set maxconn global <n>`: HAProxy takes it at runtime
// up to the maxconn its worker started with (show info's Hard_maxconn) and
// answers "Value out of range." above that.
func SetMaxConnCommand(n int) (Command, error) {
	if n < 1 || n > MaxConnLimit {
		return Command{}, fmt.Errorf("maxconn %d: want 1 to %d", n, MaxConnLimit)
	}
	return Command{text: "set maxconn global " + strconv.Itoa(n), kind: replyEmpty}, nil
}

// SetMaxConn changes HAProxy's global maxconn and keeps haproxy.cfg equal to
// it. Within the running worker's start value it is a runtime command and
// the files are rewritten at once; above it only a new worker can take it,
// so nothing is sent, the next rendering carries the value, and reload
// tells the caller to reload.
func (d *Driver) SetMaxConn(ctx context.Context, n int) (reload bool, err error) {
	cmd, err := SetMaxConnCommand(n)
	if err != nil {
		return false, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.ready(); err != nil {
		return false, err
	}
	info, err := d.infoLocked(ctx)
	if err != nil {
		return false, fmt.Errorf("set maxconn: %w", err)
	}
	hard, err := strconv.Atoi(info.Fields["Hard_maxconn"])
	if err != nil {
		return false, fmt.Errorf("set maxconn: show info Hard_maxconn %q: %w", info.Fields["Hard_maxconn"], err)
	}
	reload = n > hard
	if fit, ok := maxConnNow(); reload && ok && n > fit {
		// A new worker would refuse to start, and the reload would be
		// retried for ever.
		return false, fmt.Errorf("set maxconn: %d needs %d file descriptors, the limit allows maxconn %d: raise it (ulimit -n) and restart dcm", n, FDsFor(n), fit)
	}
	if !reload {
		if _, err := d.client.Exec(ctx, []Command{cmd}); err != nil {
			return false, fmt.Errorf("set maxconn: %w", err)
		}
	}
	d.setSettingsMaxConn(n)
	if reload {
		return true, nil
	}
	d.filesMu.Lock()
	defer d.filesMu.Unlock()
	files, err := d.renderFiles(d.written)
	if err != nil {
		return false, fmt.Errorf("set maxconn: %w", err)
	}
	if err := WriteFiles(d.cfg.WorkDir, files, d.files); err != nil {
		d.files = Files{}
		return false, fmt.Errorf("set maxconn: %w", err)
	}
	d.files = files
	return false, nil
}

// setSettingsMaxConn makes every later rendering carry n: the cached one the
// files come from and the fresh ones the config view compares with.
func (d *Driver) setSettingsMaxConn(n int) {
	d.renderMu.Lock()
	defer d.renderMu.Unlock()
	d.cfg.Settings.MaxConn = n
	d.renderer.settings.MaxConn = n
	d.renderer.global = nil
}
