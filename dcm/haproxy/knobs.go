package haproxy

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dcm-router/dcm/dcm"
)

// writeKnobs adds a server's health checks with their interval, when it
// checks, and its connection limit (none for 0, HAProxy's "no limit") to
// its arguments.
func writeKnobs(b *strings.Builder, s dcm.Server) error {
	if err := dcm.ValidateCheckInter("check interval", s.CheckInterMillis); err != nil {
		return fmt.Errorf("server %q: %w", s.Name, err)
	}
	if err := dcm.ValidateMaxConn("maxconn", s.MaxConn); err != nil {
		return fmt.Errorf("server %q: %w", s.Name, err)
	}
	if s.Check {
		b.WriteString(" check inter " + checkInterArg(s))
	}
	if s.MaxConn > 0 {
		b.WriteString(" maxconn " + strconv.Itoa(s.MaxConn))
	}
	return nil
}

// maxConnCommand is `set maxconn server <be>/<srv> <n>`: 2.6 answers it
// with nothing, and takes 0 as no limit, as the cfg's absence of maxconn.
func maxConnCommand(target string, n int) (Command, error) {
	if err := dcm.ValidateMaxConn("maxconn", n); err != nil {
		return Command{}, fmt.Errorf("op %s on %s: %w", dcm.OpSetMaxConn, target, err)
	}
	return Command{text: "set maxconn server " + target + " " + strconv.Itoa(n), kind: replyEmpty}, nil
}

// checkInterArg is a server's check interval as HAProxy reads it: its
// route's in milliseconds, else the default.
func checkInterArg(s dcm.Server) string {
	if s.CheckInterMillis <= 0 {
		return checkInter
	}
	return strconv.FormatInt(s.CheckInterMillis, 10) + "ms"
}
