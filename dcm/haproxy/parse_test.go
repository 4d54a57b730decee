package haproxy

import (
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/dcm-router/dcm/dcm"
)

func testdata(tb testing.TB, name string) string {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// The testdata files were captured from HAProxy 2.6.12 with cfg servers
// (s0 up without check, s6 IPv6 DOWN by check), a filled slot (slot1) and
// dynamic servers: ready with check, drained, in maint, DOWN by check, IPv6.
func TestParseServersState(t *testing.T) {
	got, err := ParseServersState(testdata(t, "show_servers_state.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := []ServerState{
		{"be_http:ns:r1", "s0", "127.0.0.1", 9000, 2, 0, dcm.StateReady, 1},
		{"be_http:ns:r1", "s6", "::1", 9000, 0, 0, dcm.StateReady, 1},
		{"be_http:ns:r1", "slot1", "127.0.0.1", 9000, 2, 4, dcm.StateReady, 1},
		{"be_http:ns:r1", "dyn-ready", "127.0.0.1", 9000, 2, 4, dcm.StateReady, 2},
		{"be_http:ns:r1", "dyn-drain", "127.0.0.1", 9000, 2, 12, dcm.StateDrain, 3},
		{"be_http:ns:r1", "dyn-maint", "127.0.0.1", 9000, 0, 5, dcm.StateMaint, 4},
		{"be_http:ns:r1", "dyn-down", "127.0.0.1", 9999, 0, 4, dcm.StateReady, 5},
		{"be_http:ns:r1", "dyn-v6", "::1", 9006, 2, 4, dcm.StateReady, 6},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d servers, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("server %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestAdminStateOf(t *testing.T) {
	tests := []struct {
		bits int
		want dcm.AdminState
	}{
		{0, dcm.StateReady},
		{AdminConfigMaint, dcm.StateReady}, // readied after starting disabled
		{AdminForcedMaint, dcm.StateMaint},
		{AdminForcedMaint | AdminConfigMaint, dcm.StateMaint},
		{AdminInheritedMaint, dcm.StateMaint},
		{AdminResolveMaint, dcm.StateMaint},
		{AdminForcedDrain, dcm.StateDrain},
		{AdminInheritedDrain | AdminConfigMaint, dcm.StateDrain},
		{AdminForcedDrain | AdminForcedMaint, dcm.StateMaint},
		{AdminHostnameSet, dcm.StateReady},
	}
	for _, tt := range tests {
		if got := adminStateOf(tt.bits); got != tt.want {
			t.Errorf("adminStateOf(%#x) = %s, want %s", tt.bits, got, tt.want)
		}
	}
}

func TestParseServersStateErrors(t *testing.T) {
	hdr := "1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight srv_iweight srv_port\n"
	for _, in := range []string{
		"",
		"2\n",
		"1\n",
		"1\n3 be 1 s0 127.0.0.1 0 0 1 1 80\n",
		"1\n# be_id be_name\n",
		hdr + "3 be 1 s0 127.0.0.1 0 0 1 1\n",
		hdr + "3 be 1 s0 127.0.0.1 x 0 1 1 80\n",
		hdr + "3 be 1 s0 127.0.0.1 0 -1 1 1 80\n",
		hdr + "3 be\x00x 1 s0 127.0.0.1 0 0 1 1 80\n",
		hdr + "3 be 1 s;0 127.0.0.1 0 0 1 1 80\n",
		hdr + "3 be 1 s0 127.0.0.1\x00 0 0 1 1 80\n",
		"[3]: Can't find backend.\n",
	} {
		if _, err := ParseServersState(in); err == nil {
			t.Errorf("ParseServersState(%q) accepted", in)
		}
	}
	if got, err := ParseServersState(hdr + "\n"); err != nil || len(got) != 0 {
		t.Errorf("empty backend: %v %v", got, err)
	}
}

func TestParseStat(t *testing.T) {
	rows, err := ParseStat(testdata(t, "show_stat.txt"))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]StatRow{}
	for _, r := range rows {
		if r.Proxy != "be_http:ns:r1" || r.Type != StatServer {
			t.Errorf("row %+v", r)
		}
		byName[r.Server] = r
	}
	tests := []struct {
		name, status, check, addr string
		weight                    int
	}{
		{"s0", "no check", "", "127.0.0.1:9000", 1},
		{"s6", "DOWN", "L4CON", "[::1]:9000", 1},
		{"dyn-ready", "UP", "L4OK", "127.0.0.1:9000", 2},
		{"dyn-drain", "DRAIN", "", "127.0.0.1:9000", 3},
		{"dyn-maint", "MAINT", "", "127.0.0.1:9000", 1},
		{"dyn-down", "DOWN", "L4CON", "127.0.0.1:9999", 5},
		{"dyn-v6", "UP", "L4OK", "[::1]:9006", 6},
	}
	for _, tt := range tests {
		r, ok := byName[tt.name]
		if !ok || r.Status != tt.status || r.CheckStatus != tt.check || r.Addr != tt.addr || r.Weight != tt.weight {
			t.Errorf("%s: %+v", tt.name, r)
		}
	}
	if one, err := ParseStat(testdata(t, "show_stat_backend.txt")); err != nil || len(one) != len(rows) {
		t.Errorf("show stat <backend>: %d rows, %v", len(one), err)
	}
}

// TestParseStatIdleConns: a server's idle connections are both of
// HAProxy's idle lists, which keep del server refused until they are empty.
func TestParseStatIdleConns(t *testing.T) {
	in := "# pxname,svname,type,status,weight,scur,qcur,used_conn_cur,idle_conn_cur,safe_conn_cur,\n" +
		"be,a,2,MAINT,1,0,0,0,2,3,\n" +
		"be,b,2,MAINT,1,0,0,0,0,0,\n"
	rows, err := ParseStat(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].IdleConn != 5 || rows[1].IdleConn != 0 {
		t.Fatalf("rows %+v, want idle connections 5 and 0", rows)
	}
	if (dcm.Server{IdleConn: 5}).Deletable() || !(dcm.Server{}).Deletable() || !(dcm.Server{IdleConn: 5}).Idle() {
		t.Error("a server HAProxy keeps idle connections to counts as deletable, or one without does not")
	}
}

func TestParseStatErrors(t *testing.T) {
	for _, in := range []string{
		"",
		"pxname,svname\n",
		"# pxname,svname\n",
		"# pxname,svname,type,status,weight,scur,qcur,\nbe,s,2,UP,1,0\n",
		"# pxname,svname,type,status,weight,scur,qcur,\nbe,s,2,UP,x,0,0,\n",
		"# pxname,svname,type,status,weight,scur,qcur,\n,s,2,UP,1,0,0,\n",
		"# pxname,svname,type,status,weight,scur,qcur,\n\"be\nx\",s,2,UP,1,0,0,\n",
		"[3]: No such proxy.\n",
	} {
		if _, err := ParseStat(in); err == nil {
			t.Errorf("ParseStat(%q) accepted", in)
		}
	}
	got, err := ParseStat("# pxname,svname,type,status,weight,scur,qcur,check_desc,\nbe,s,2,UP,1,0,0,\"a, b\",\n\n")
	if err != nil || len(got) != 1 || got[0].Status != "UP" {
		t.Errorf("quoted field: %+v %v", got, err)
	}
}

func TestParseInfo(t *testing.T) {
	info, err := ParseInfo(testdata(t, "show_info.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Pid <= 0 || info.Version != "2.6.12-1+deb12u4" || info.Fields["Name"] != "HAProxy" || info.Fields["Unstoppable Jobs"] == "" {
		t.Errorf("%+v", info)
	}
	for _, in := range []string{"", "Name: HAProxy\n", "Pid: x\n", "Pid: 1\nnot a pair\n", "Pid: 1\nUptime_sec: -3\n", "[3]: Permission denied\n"} {
		if _, err := ParseInfo(in); err == nil {
			t.Errorf("ParseInfo(%q) accepted", in)
		}
	}
}

func TestParseProc(t *testing.T) {
	tests := []struct {
		file            string
		master, failed  int
		current, oldest int
		reloads         int
	}{
		{"show_proc.txt", 2833, 0, 3596, 0, 1},
		{"show_proc_reload.txt", 7882, 0, 8832, 8603, 2},
		{"show_proc_failed.txt", 7882, 1, 8832, 0, 3},
	}
	for _, tt := range tests {
		p, err := ParseProc(testdata(t, tt.file))
		if err != nil {
			t.Errorf("%s: %v", tt.file, err)
			continue
		}
		cur, ok := p.Current()
		if p.Master.PID != tt.master || p.Failed != tt.failed || !ok || cur.PID != tt.current || p.Master.Reloads != tt.reloads {
			t.Errorf("%s: %+v", tt.file, p)
		}
		if tt.oldest != 0 && (len(p.OldWorkers) != 1 || p.OldWorkers[0].PID != tt.oldest || p.OldWorkers[0].Reloads != 1) {
			t.Errorf("%s: old workers %+v", tt.file, p.OldWorkers)
		}
		if p.Master.Version != "2.6.12-1+deb12u4" {
			t.Errorf("%s: master version %q", tt.file, p.Master.Version)
		}
	}
	for _, in := range []string{
		"",
		"2833 master 1 [failed: 0] 0d 2.6\n",
		"#<PID> <type>\n# workers\n3596 worker 0 0d 2.6\n",
		"#<PID> <type>\nx master 1 [failed: 0] 0d 2.6\n",
		"#<PID> <type>\n2833 master 1 0d00h 2.6\n",
		"#<PID> <type>\n2833 master 1 [failed: 0] 0d 2.6\n# workers\n3596 master 0\n",
	} {
		if _, err := ParseProc(in); err == nil {
			t.Errorf("ParseProc(%q) accepted", in)
		}
	}
}

func fuzzSeeds(f *testing.F, files ...string) {
	for _, name := range files {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add("")
	f.Add("\n\n")
}

// haproxyNameRE is what a proxy or server name HAProxy printed looks like;
// dcm may put such a name back into a command.
var haproxyNameRE = regexp.MustCompile(`^[A-Za-z0-9._:-]+$`)

func haproxyName(s string) bool { return haproxyNameRE.MatchString(s) }

// The parser fuzz targets start from the captured real replies. A parser
// must never panic; it either refuses the text or returns values that
// HAProxy could have printed: names dcm can reuse in a command, counts that
// are not negative, states derived from the bits, and the same answer twice.

func FuzzParseServersState(f *testing.F) {
	fuzzSeeds(f, "show_servers_state.txt")
	f.Add("1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight srv_port\n1 be\x00x 1 s 127.0.0.1 2 0 1 80\n")
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ParseServersState(in)
		if err != nil {
			return
		}
		for _, s := range got {
			if s.Port < 0 || s.Weight < 0 || s.OpState < 0 || s.AdminBits < 0 || s.State != adminStateOf(s.AdminBits) {
				t.Fatalf("invariant broken: %+v", s)
			}
			if _, err := netip.ParseAddr(s.Addr); !haproxyName(s.Backend) || !haproxyName(s.Name) || err != nil && s.Addr != "-" {
				t.Fatalf("a name HAProxy cannot print: %+v", s)
			}
		}
		again, _ := ParseServersState(in)
		if !slices.Equal(got, again) {
			t.Fatalf("two parses differ")
		}
	})
}

func FuzzParseStat(f *testing.F) {
	fuzzSeeds(f, "show_stat.txt", "show_stat_backend.txt")
	f.Add("# pxname,svname,type,status,weight,scur,qcur,\n\"be\nx\",s,2,UP,1,0,0,\n")
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ParseStat(in)
		if err != nil {
			return
		}
		for _, r := range got {
			if r.Weight < 0 || r.Sessions < 0 || r.Queued < 0 || r.UsedConn < 0 || r.Type < 0 {
				t.Fatalf("negative count: %+v", r)
			}
			if !haproxyName(r.Proxy) || !haproxyName(r.Server) {
				t.Fatalf("a name HAProxy cannot print: %+v", r)
			}
		}
	})
}

func FuzzParseInfo(f *testing.F) {
	fuzzSeeds(f, "show_info.txt")
	f.Fuzz(func(t *testing.T, in string) {
		info, err := ParseInfo(in)
		if err != nil {
			return
		}
		if info.Pid <= 0 || info.Fields["Pid"] == "" || info.UptimeSec < 0 || info.Version != info.Fields["Version"] {
			t.Fatalf("invariant broken: %+v", info)
		}
		for k, v := range info.Fields {
			if k == "" || strings.TrimSpace(k) != k || strings.ContainsAny(k, "\n:") || strings.TrimSpace(v) != v || strings.Contains(v, "\n") {
				t.Fatalf("field %q: %q", k, v)
			}
		}
	})
}

func FuzzParseProc(f *testing.F) {
	fuzzSeeds(f, "show_proc.txt", "show_proc_reload.txt", "show_proc_failed.txt")
	f.Fuzz(func(t *testing.T, in string) {
		p, err := ParseProc(in)
		if err != nil {
			return
		}
		if p.Master.PID <= 0 || p.Failed < 0 || p.Master.Reloads < 0 {
			t.Fatalf("invariant broken: %+v", p)
		}
		for _, w := range slices.Concat(p.Workers, p.OldWorkers) {
			if w.PID <= 0 || w.Reloads < 0 || strings.ContainsFunc(w.Uptime+w.Version, unicode.IsSpace) {
				t.Fatalf("worker %+v", w)
			}
		}
		cur, ok := p.Current()
		if ok != (len(p.Workers) > 0) || ok && !slices.Contains(p.Workers, cur) {
			t.Fatalf("current worker %+v of %+v", cur, p.Workers)
		}
	})
}

// TestObservationGathers: the servers of a backend come together in its
// slice however the state reply orders them, and the stat rows after it
// find them.
func TestObservationGathers(t *testing.T) {
	o := observation{out: map[string][]dcm.Server{"be_http:ns:b": {}}}
	for _, s := range []ServerState{
		{Backend: "be_http:ns:a", Name: "a1", Addr: "127.0.0.1", OpState: 2, State: dcm.StateReady},
		{Backend: "be_http:ns:a", Name: "a2", Addr: "127.0.0.2", OpState: 2, State: dcm.StateReady},
		{Backend: "be_http:ns:b", Name: "b1", Addr: "127.0.0.3", OpState: 2, State: dcm.StateReady},
		{Backend: "be_default", Name: "x", Addr: "127.0.0.4"},
		{Backend: "be_http:ns:a", Name: "a3", Addr: "127.0.0.5", State: dcm.StateMaint},
	} {
		o.state(s)
	}
	o.flush()
	o.stat(StatRow{Proxy: "be_http:ns:a", Server: "a3", Type: StatServer, Status: "MAINT", Sessions: 2})
	o.stat(StatRow{Proxy: "be_http:ns:b", Server: "b1", Type: StatServer, Status: "UP 1/3", Sessions: 1})
	o.sort()
	var got []string
	for _, b := range slices.Sorted(maps.Keys(o.out)) {
		for _, s := range o.out[b] {
			got = append(got, fmt.Sprintf("%s/%s %s %s %d", b, s.Name, s.Addr, s.Health, s.Sessions))
		}
	}
	want := []string{"be_http:ns:a/a1 127.0.0.1 UP 0", "be_http:ns:a/a2 127.0.0.2 UP 0", "be_http:ns:a/a3 127.0.0.5 MAINT 2",
		"be_http:ns:b/b1 127.0.0.3 UP 1"}
	if !slices.Equal(got, want) {
		t.Errorf("observed %q, want %q", got, want)
	}
}
