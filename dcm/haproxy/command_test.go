package haproxy

import (
	"regexp"
	"strings"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

// The shape of every runtime command dcm sends, per op kind: one line, the
// verb, a backend/server target, then exactly the arguments the kind takes.
// Names are HAProxy identifiers, addresses IP literals, numbers digits.
const (
	cmdTarget = `be_[A-Za-z0-9._:-]+/[A-Za-z0-9._:-]+`
	cmdIP     = `(\d{1,3}(\.\d{1,3}){3}|[0-9A-Fa-f:.]+)`
	cmdAddr   = `(\d{1,3}(\.\d{1,3}){3}|\[[0-9a-f:.]+\]):\d{1,5}`
)

var commandShapes = map[dcm.OpKind]*regexp.Regexp{
	dcm.OpAddServer:    regexp.MustCompile(`^add server ` + cmdTarget + ` ` + cmdAddr + ` weight \d{1,3}( check inter (\d+ms|5s))?( maxconn \d{1,7})? disabled$`),
	dcm.OpDelServer:    regexp.MustCompile(`^del server ` + cmdTarget + `$`),
	dcm.OpSetAddr:      regexp.MustCompile(`^set server ` + cmdTarget + ` addr ` + cmdIP + ` port \d{1,5}$`),
	dcm.OpSetState:     regexp.MustCompile(`^set server ` + cmdTarget + ` state (ready|drain|maint)$`),
	dcm.OpSetWeight:    regexp.MustCompile(`^set weight ` + cmdTarget + ` \d{1,3}$`),
	dcm.OpEnableHealth: regexp.MustCompile(`^enable health ` + cmdTarget + `$`),
	dcm.OpSetMaxConn:   regexp.MustCompile(`^set maxconn server ` + cmdTarget + ` \d{1,7}$`),
}

var showShapes = regexp.MustCompile(`^(show servers state|show stat)( be_[A-Za-z0-9._:-]+)?( 4 -1| -1 4 -1)?$`)

// FuzzCommandFor: whatever an op carries, CommandFor either refuses it or
// builds one line of the expected shape, with as many fields as the kind
// takes, so no value can end a command (';', newline), start a comment ('#')
// or add an argument (white space). The show commands take a backend name
// the same way.
func FuzzCommandFor(f *testing.F) {
	kinds := []dcm.OpKind{dcm.OpAddServer, dcm.OpDelServer, dcm.OpSetAddr, dcm.OpSetState, dcm.OpSetWeight, dcm.OpEnableHealth, dcm.OpSetMaxConn}
	f.Add(uint8(0), "be_http:ns:r", "pod-1:http", "10.0.0.1", 8080, 1, "ready", true)
	f.Add(uint8(2), "be_http:ns:r", "ip-fd00--1:80", "fd00::1", 80, 256, "drain", false)
	f.Add(uint8(3), "be_http:ns:r;del server x", "s\nshow info", "1.2.3.4 check", -1, 257, "maint;", false)
	f.Add(uint8(4), "be_default", "s#x", "::ffff:1.2.3.4", 65536, 0, "up", true)
	f.Add(uint8(5), "be_x", "s", "fe80::1%eth0", 1, 1, "ready\r", false)
	f.Add(uint8(1), "a.example/api/", "be_http:ns:r", "", 0, 0, "", false)    // a map key and a backend
	f.Add(uint8(1), "be_edge:ns:a", "max-age=1;preload", "", 0, 0, "", false) // an HSTS value's ';'
	f.Add(uint8(1), "be_http:ns:a", "10.0.0.0/8,::1", "", 0, 0, "", false)    // an allowlist
	f.Fuzz(func(t *testing.T, kind uint8, backend, server, addr string, port, weight int, state string, check bool) {
		op := dcm.Op{Kind: kinds[int(kind)%len(kinds)], Backend: backend, Server: server, Addr: addr, Port: port,
			Weight: weight, State: dcm.AdminState(state), Check: check, MaxConn: port}
		if kind >= uint8(len(kinds)) && kind%16 == 15 {
			op.Kind = dcm.OpKind(state) // an unknown kind
		}
		if cmd, err := CommandFor(op, HTTP2{}); err == nil {
			text := cmd.String()
			re, ok := commandShapes[op.Kind]
			if !ok || !re.MatchString(text) {
				t.Fatalf("op %+v gave %q", op, text)
			}
			want := map[dcm.OpKind]int{dcm.OpAddServer: 7, dcm.OpDelServer: 3, dcm.OpSetAddr: 7, dcm.OpSetState: 5,
				dcm.OpSetWeight: 4, dcm.OpEnableHealth: 3, dcm.OpSetMaxConn: 5}[op.Kind]
			if op.Kind == dcm.OpAddServer && op.Check {
				want += 3
			}
			if op.Kind == dcm.OpAddServer && op.MaxConn > 0 {
				want += 2
			}
			if n := len(strings.Fields(text)); n != want || strings.Count(text, " ") != n-1 {
				t.Fatalf("%q has %d fields, want %d", text, n, want)
			}
		}
		for _, build := range []func(string) (Command, error){ServersStateCommand, StatCommand} {
			if cmd, err := build(backend); err == nil && !showShapes.MatchString(cmd.String()) {
				t.Fatalf("backend %q gave %q", backend, cmd)
			}
		}
		// A map entry's command, the key from backend and the value from
		// server: one command of its words, whatever the strings.
		for _, table := range []dcm.MapTable{dcm.MapHostPrefix, dcm.MapHSTS, dcm.MapAllowlist, dcm.MapInsecure, dcm.MapHeaders} {
			for verb, build := range map[string]func(dcm.MapTable, string, string) (Command, error){"add": AddMapCommand, "set": SetMapCommand,
				"del": func(t dcm.MapTable, key, _ string) (Command, error) { return DelMapCommand(t, key) }} {
				cmd, err := build(table, backend, server)
				if err != nil {
					continue
				}
				text, want := cmd.String(), 5
				if verb == "del" {
					want = 4
				}
				if f := strings.Fields(text); len(f) != want || strings.Count(text, " ") != want-1 || f[0] != verb || f[3] != backend ||
					strings.ContainsAny(text, "\r\n") || splitsCommand(text) {
					t.Fatalf("%s map %s %q %q gave %q", verb, table, backend, server, text)
				}
			}
		}
	})
}
