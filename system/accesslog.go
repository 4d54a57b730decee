package system

import (
	"fmt"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dcm-router/dcm/dcm/accesslog"
	"github.com/dcm-router/dcm/dcm/haproxy"
)

// logSocket is HAProxy's access-log socket in dir, "" with --access-log=off:
// then HAProxy's cfg has no log line and there is no socket.
func logSocket(c Config, dir string) string {
	t, _ := accesslog.ParseTarget(c.AccessLog) // Validate has parsed it
	if t.Off() {
		return ""
	}
	return filepath.Join(dir, haproxy.LogSocketName)
}

// listenAccessLog creates the access-log socket before HAProxy starts, and
// the metrics of its lines.
func (s *System) listenAccessLog(socket string, deps Deps) error {
	if socket == "" {
		return nil
	}
	t, _ := accesslog.ParseTarget(s.cfg.AccessLog)
	l, err := accesslog.Listen(accesslog.Options{Socket: socket, Target: t, Stdout: deps.AccessLog,
		States: s.engine, Log: s.log.With("part", "access-log")})
	if err != nil {
		return fmt.Errorf("--access-log: %w", err)
	}
	s.accessLog = l
	for _, c := range []struct {
		result string
		n      func() uint64
	}{{"written", l.Written}, {"dropped", l.Dropped}, {"other", l.Other}} {
		s.registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "dcm_access_log_lines_total",
			Help:        "Lines HAProxy sent to the access log: written, dropped by dcm (its queue full or the write failed), other (HAProxy messages that are not access-log lines). HAProxy counts the lines it could not send in show info's DroppedLogs.",
			ConstLabels: prometheus.Labels{"result": c.result},
		}, func() float64 { return float64(c.n()) }))
	}
	return nil
}
