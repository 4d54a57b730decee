package haproxy

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

// TestSetMaxConn changes the global maxconn of a running HAProxy: down and
// back up to its start value at runtime, with haproxy.cfg following; above
// its start value the driver asks for the reload it cannot avoid, and the
// new worker starts with it.
func TestSetMaxConn(t *testing.T) {
	ctx := context.Background()
	st := dcm.State{}
	d, _ := startDriver(t, st, func(c *DriverConfig) { c.Settings.MaxConn = 500 })
	dir := d.cfg.WorkDir
	pid := workerPID(t, d)
	maxconn := func() (string, string) {
		t.Helper()
		info, err := d.Info(ctx)
		mustf(t, err, "show info")
		return info.Fields["Maxconn"], info.Fields["Hard_maxconn"]
	}
	cfgSays := func(want string) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, ConfigName))
		mustf(t, err, "read cfg")
		if !strings.Contains(string(b), "\n    maxconn "+want+"\n") {
			t.Fatalf("haproxy.cfg does not say maxconn %s", want)
		}
	}
	for _, n := range []struct {
		set       int
		want      string
		hardAfter string
	}{{300, "300", "500"}, {500, "500", "500"}, {120, "120", "500"}} {
		reload, err := d.SetMaxConn(ctx, n.set)
		mustf(t, err, "set maxconn %d", n.set)
		if reload {
			t.Fatalf("set maxconn %d (start value 500): asked for a reload", n.set)
		}
		if got, hard := maxconn(); got != n.want || hard != n.hardAfter {
			t.Fatalf("after set maxconn %d: Maxconn %s Hard_maxconn %s, want %s %s", n.set, got, hard, n.want, n.hardAfter)
		}
		cfgSays(n.want)
	}
	if workerPID(t, d) != pid {
		t.Fatal("a runtime maxconn change replaced the worker")
	}

	reload, err := d.SetMaxConn(ctx, 800)
	mustf(t, err, "set maxconn 800")
	if !reload {
		t.Fatal("set maxconn 800 above the start value 500: no reload asked")
	}
	if got, _ := maxconn(); got != "120" {
		t.Fatalf("Maxconn %s before the reload, want the runtime value 120 untouched", got)
	}
	if _, err := d.Reload(ctx, st); err != nil {
		t.Fatalf("reload: %v", err)
	}
	if got, hard := maxconn(); got != "800" || hard != "800" {
		t.Fatalf("after the reload: Maxconn %s Hard_maxconn %s, want 800 800", got, hard)
	}
	cfgSays("800")
	if _, err := d.SetMaxConn(ctx, 0); err == nil {
		t.Fatal("set maxconn 0 accepted")
	}
	// Above what the file-descriptor limit allows, a new worker would
	// refuse to start: refused, nothing changed.
	if fit, ok := maxConnNow(); ok && fit < MaxConnLimit {
		if reload, err := d.SetMaxConn(ctx, fit+1); err == nil || reload {
			t.Fatalf("set maxconn %d above the fd limit's %d: reload %v, err %v", fit+1, fit, reload, err)
		}
		cfgSays("800")
	}
}
