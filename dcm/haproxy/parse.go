package haproxy

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
	"unicode"

	"github.com/dcm-router/dcm/dcm"
)

// Admin state bits of `show servers state` (enum srv_admin in HAProxy 2.6's
// server-t.h).
const (
	AdminForcedMaint    = 0x01 // set server state maint, or added/started disabled
	AdminInheritedMaint = 0x02 // tracks a server in maint
	AdminConfigMaint    = 0x04 // "disabled" in the cfg: a memo only, see adminStateOf
	AdminForcedDrain    = 0x08 // set server state drain
	AdminInheritedDrain = 0x10 // tracks a server in drain
	AdminResolveMaint   = 0x20 // address resolution failed
	AdminHostnameSet    = 0x40 // FQDN changed at runtime: not a state

	// adminMaintMask is HAProxy's SRV_ADMF_MAINT: the bits that keep a server
	// out of rotation. AdminConfigMaint is not among them: it stays set after
	// `set server state ready` on a server that started disabled, and such a
	// server serves (measured on 2.6.12: admin_state 4, op_state 2, traffic flows).
	adminMaintMask = AdminForcedMaint | AdminInheritedMaint | AdminResolveMaint
	adminDrainMask = AdminForcedDrain | AdminInheritedDrain
)

// ServerState is one line of `show servers state`.
type ServerState struct {
	Backend string
	Name    string
	Addr    string
	Port    int
	// OpState is srv_op_state: 0 stopped, 1 starting, 2 running, 3 stopping.
	OpState int
	// AdminBits is srv_admin_state as HAProxy reports it.
	AdminBits int
	// State is AdminBits read as dcm's admin state.
	State  dcm.AdminState
	Weight int // srv_uweight: the weight set by cfg or runtime
}

// adminStateOf reads the admin bits as dcm's three states; maintenance wins
// over drain because a server in both takes no traffic at all.
func adminStateOf(bits int) dcm.AdminState {
	switch {
	case bits&adminMaintMask != 0:
		return dcm.StateMaint
	case bits&adminDrainMask != 0:
		return dcm.StateDrain
	}
	return dcm.StateReady
}

// ParseServersState parses the reply of `show servers state [<backend>]`:
// a format version line "1", a "# be_id be_name ..." header, then one line per
// server. Fields are found by header name.
func ParseServersState(text string) ([]ServerState, error) {
	var out []ServerState
	err := ReadServersState(strings.NewReader(strings.TrimRight(text, "\n")), func(s ServerState) error {
		out = append(out, s)
		return nil
	})
	return out, err
}

// ReadServersState is ParseServersState for a reply read as it comes (a
// Stream's header and body, one after the other): each server is handed
// to each, and nothing is kept. The strings of a ServerState share one
// allocation per line; each copies what it keeps.
func ReadServersState(r io.Reader, each func(ServerState) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	sc.Split(scanLines)
	if !sc.Scan() || strings.TrimSpace(sc.Text()) != "1" {
		if err := sc.Err(); err != nil {
			return fmt.Errorf("show servers state: %w", err)
		}
		return fmt.Errorf("show servers state: want format version 1, got %q", truncate(sc.Text(), 80))
	}
	var (
		col    map[string]int
		fields []string
		want   = []string{"be_name", "srv_name", "srv_addr", "srv_op_state", "srv_admin_state", "srv_uweight", "srv_port"}
	)
	for n := 2; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "#") {
			names := strings.Fields(strings.TrimPrefix(line, "#"))
			col = make(map[string]int, len(names))
			for j, f := range names {
				if _, dup := col[f]; dup {
					return fmt.Errorf("show servers state line %d: column %s twice", n, f)
				}
				col[f] = j
			}
			for _, w := range want {
				if _, ok := col[w]; !ok {
					return fmt.Errorf("show servers state: header lacks %s", w)
				}
			}
			continue
		}
		if col == nil {
			return fmt.Errorf("show servers state line %d: data before header", n)
		}
		fields = appendFields(fields[:0], line)
		if len(fields) != len(col) {
			return fmt.Errorf("show servers state line %d: %d fields, header has %d", n, len(fields), len(col))
		}
		s, err := serverStateOf(fields, col, n)
		if err != nil {
			return err
		}
		if err := each(s); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("show servers state: %w", err)
	}
	if col == nil {
		return errors.New("show servers state: no header")
	}
	return nil
}

// scanLines is bufio.ScanLines without its dropping a carriage return
// before the newline: a line is what strings.Split(text, "\n") makes it.
func scanLines(data []byte, atEOF bool) (advance int, token []byte, err error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// serverStateOf reads the fields of line n of `show servers state`.
func serverStateOf(fields []string, col map[string]int, n int) (ServerState, error) {
	s := ServerState{
		Backend: fields[col["be_name"]],
		Name:    fields[col["srv_name"]],
		Addr:    fields[col["srv_addr"]],
	}
	if err := checkNames(s.Backend, s.Name); err != nil {
		return ServerState{}, fmt.Errorf("show servers state line %d: %w", n, err)
	}
	// HAProxy prints an IP literal, or "-" for a server without one
	// (FuzzParseServersState found any bytes accepted here).
	if _, err := netip.ParseAddr(s.Addr); err != nil && s.Addr != "-" {
		return ServerState{}, fmt.Errorf("show servers state line %d: srv_addr %q is not an address", n, truncate(s.Addr, 80))
	}
	var err error
	ints := [...]struct {
		name string
		dst  *int
	}{{"srv_port", &s.Port}, {"srv_op_state", &s.OpState}, {"srv_admin_state", &s.AdminBits}, {"srv_uweight", &s.Weight}}
	for _, f := range ints {
		if *f.dst, err = strconv.Atoi(fields[col[f.name]]); err != nil || *f.dst < 0 {
			return ServerState{}, fmt.Errorf("show servers state line %d: %s %q is not a number", n, f.name, fields[col[f.name]])
		}
	}
	s.State = adminStateOf(s.AdminBits)
	return s, nil
}

// appendFields appends the fields of line, as strings.Fields splits them,
// to dst: a slice reused from line to line instead of one per line.
func appendFields(dst []string, line string) []string {
	start := -1
	for i, r := range line {
		if unicode.IsSpace(r) {
			if start >= 0 {
				dst = append(dst, line[start:i])
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		dst = append(dst, line[start:])
	}
	return dst
}

// Stat types of the `type` column of show stat.
const (
	StatFrontend = 0
	StatBackend  = 1
	StatServer   = 2
	StatListener = 3
)

// StatRow is one row of `show stat` with the columns dcm reads.
type StatRow struct {
	Proxy       string // pxname
	Server      string // svname
	Type        int
	Status      string // UP, DOWN, MAINT, DRAIN, no check…
	Weight      int
	Sessions    int // scur
	Queued      int // qcur
	CheckStatus string
	Addr        string
	UsedConn    int // used_conn_cur
	IdleConn    int // idle_conn_cur + safe_conn_cur
}

// ParseStat parses the CSV of `show stat`; columns are found by header name
// because their number and order change between HAProxy versions.
func ParseStat(text string) ([]StatRow, error) {
	text = strings.TrimLeft(text, "\n")
	if !strings.HasPrefix(text, "# ") {
		return nil, fmt.Errorf("show stat: want a \"# pxname,...\" header, got %q", truncate(firstLine(text), 80))
	}
	var out []StatRow
	err := ReadStat(strings.NewReader(text[2:]), func(r StatRow) error {
		out = append(out, r)
		return nil
	})
	return out, err
}

// ReadStat is ParseStat for a reply read as it comes, its "# " taken
// off: each row is handed to each, and nothing is kept. The strings of a
// StatRow share one allocation per row; each copies what it keeps.
func ReadStat(in io.Reader, each func(StatRow) error) error {
	r := csv.NewReader(in)
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	r.ReuseRecord = true // the row's strings are copied out of it
	header, err := r.Read()
	if err != nil {
		return fmt.Errorf("show stat header: %w", err)
	}
	col := make(map[string]int, len(header))
	for i, h := range header {
		if _, dup := col[h]; !dup {
			col[h] = i
		}
	}
	ncol := len(header)
	for _, w := range []string{"pxname", "svname", "type", "status", "weight", "scur", "qcur"} {
		if _, ok := col[w]; !ok {
			return fmt.Errorf("show stat: header lacks %s", w)
		}
	}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("show stat: %w", err)
		}
		if len(rec) == 1 && rec[0] == "" {
			continue
		}
		line, _ := r.FieldPos(0)
		if len(rec) != ncol {
			return fmt.Errorf("show stat line %d: %d fields, header has %d", line, len(rec), ncol)
		}
		row, err := statRowOf(rec, col, line)
		if err != nil {
			return err
		}
		if err := each(row); err != nil {
			return err
		}
	}
}

// statRowOf reads record line of `show stat`.
func statRowOf(rec []string, col map[string]int, line int) (StatRow, error) {
	get := func(name string) string {
		if i, ok := col[name]; ok {
			return rec[i]
		}
		return ""
	}
	num := func(name string) (int, error) {
		v := get(name)
		if v == "" {
			return 0, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("show stat line %d: %s %q is not a number", line, name, v)
		}
		return n, nil
	}
	row := StatRow{
		Proxy:       get("pxname"),
		Server:      get("svname"),
		Status:      get("status"),
		CheckStatus: get("check_status"),
		Addr:        get("addr"),
	}
	if err := checkNames(row.Proxy, row.Server); err != nil {
		return StatRow{}, fmt.Errorf("show stat line %d: %w", line, err)
	}
	var err error
	for _, f := range [...]struct {
		name string
		dst  *int
	}{{"type", &row.Type}, {"weight", &row.Weight}, {"scur", &row.Sessions}, {"qcur", &row.Queued}, {"used_conn_cur", &row.UsedConn}} {
		if *f.dst, err = num(f.name); err != nil {
			return StatRow{}, err
		}
	}
	for _, name := range []string{"idle_conn_cur", "safe_conn_cur"} {
		n, err := num(name)
		if err != nil {
			return StatRow{}, err
		}
		row.IdleConn += n
	}
	return row, nil
}

// Info is the reply of `show info`.
type Info struct {
	Pid       int
	Version   string
	UptimeSec int
	// Fields holds every "Name: value" line, the three above included.
	Fields map[string]string
}

// ParseInfo parses the "Name: value" lines of `show info`.
func ParseInfo(text string) (Info, error) {
	info := Info{Fields: map[string]string{}}
	for i, line := range strings.Split(text, "\n") {
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		// Most names are one word; "Unstoppable Jobs" and "Build info" are not.
		if !ok || strings.TrimSpace(k) != k || k == "" {
			return Info{}, fmt.Errorf("show info line %d: want \"Name: value\", got %q", i+1, truncate(line, 80))
		}
		info.Fields[k] = strings.TrimSpace(v)
	}
	pid, ok := info.Fields["Pid"]
	if !ok {
		return Info{}, errors.New("show info: no Pid")
	}
	var err error
	if info.Pid, err = strconv.Atoi(pid); err != nil || info.Pid <= 0 {
		return Info{}, fmt.Errorf("show info: Pid %q is not a process id", pid)
	}
	info.Version = info.Fields["Version"]
	if up, ok := info.Fields["Uptime_sec"]; ok {
		if info.UptimeSec, err = strconv.Atoi(up); err != nil || info.UptimeSec < 0 {
			return Info{}, fmt.Errorf("show info: Uptime_sec %q is not a number", up)
		}
	}
	return info, nil
}

// Proc is one process in the master's `show proc`.
type Proc struct {
	PID     int
	Reloads int
	Uptime  string
	Version string
}

// Procs is the reply of the master's `show proc`.
type Procs struct {
	Master Proc
	// Failed counts the reloads the master could not complete.
	Failed int
	// Workers are the current workers in HAProxy's order; OldWorkers still
	// finish connections from before a reload.
	Workers    []Proc
	OldWorkers []Proc
}

// Current is the worker that serves new connections: the newest one.
func (p Procs) Current() (Proc, bool) {
	if len(p.Workers) == 0 {
		return Proc{}, false
	}
	best := p.Workers[0]
	for _, w := range p.Workers[1:] {
		if w.Reloads < best.Reloads {
			best = w
		}
	}
	return best, true
}

// ParseProc parses the master CLI's `show proc`:
//
//	#<PID>          <type>          <reloads>       <uptime>        <version>
//	2833            master          1 [failed: 0]   0d00h00m15s     2.6.12-1+deb12u4
//	# workers
//	3596            worker          0               0d00h00m00s     2.6.12-1+deb12u4
//	# old workers
//	3001            worker          1               0d00h00m09s     2.6.12-1+deb12u4
//	# programs
func ParseProc(text string) (Procs, error) {
	var (
		p       Procs
		section = "master"
		header  bool
		master  bool
	)
	for i, line := range strings.Split(text, "\n") {
		n := i + 1
		trim := strings.TrimSpace(line)
		switch {
		case trim == "":
			continue
		case strings.HasPrefix(trim, "#<PID>"):
			header = true
			continue
		case strings.HasPrefix(trim, "#"):
			section = strings.TrimSpace(strings.TrimPrefix(trim, "#"))
			continue
		}
		if !header {
			return Procs{}, fmt.Errorf("show proc line %d: data before header", n)
		}
		fields := strings.Fields(trim)
		if len(fields) < 3 {
			return Procs{}, fmt.Errorf("show proc line %d: too few fields in %q", n, truncate(trim, 80))
		}
		pid, err := strconv.Atoi(fields[0])
		if err != nil || pid <= 0 {
			return Procs{}, fmt.Errorf("show proc line %d: pid %q", n, fields[0])
		}
		reloads, err := strconv.Atoi(fields[2])
		if err != nil || reloads < 0 {
			return Procs{}, fmt.Errorf("show proc line %d: reloads %q", n, fields[2])
		}
		rest := fields[3:]
		proc := Proc{PID: pid, Reloads: reloads}
		switch {
		case section == "master" && fields[1] == "master":
			// "[failed: N]" follows the master's reload count.
			if len(rest) < 2 || rest[0] != "[failed:" || !strings.HasSuffix(rest[1], "]") {
				return Procs{}, fmt.Errorf("show proc line %d: master line lacks [failed: N]", n)
			}
			if p.Failed, err = strconv.Atoi(strings.TrimSuffix(rest[1], "]")); err != nil || p.Failed < 0 {
				return Procs{}, fmt.Errorf("show proc line %d: failed count %q", n, rest[1])
			}
			rest = rest[2:]
			master = true
		case section == "workers" || section == "old workers":
			if fields[1] != "worker" {
				return Procs{}, fmt.Errorf("show proc line %d: want a worker, got %q", n, fields[1])
			}
		case section == "programs":
			continue // external programs are not ours
		default:
			return Procs{}, fmt.Errorf("show proc line %d: unexpected %q in section %q", n, fields[1], section)
		}
		if len(rest) > 0 {
			proc.Uptime = rest[0]
		}
		if len(rest) > 1 {
			proc.Version = rest[1]
		}
		switch section {
		case "master":
			p.Master = proc
		case "workers":
			p.Workers = append(p.Workers, proc)
		case "old workers":
			p.OldWorkers = append(p.OldWorkers, proc)
		}
	}
	if !master {
		return Procs{}, errors.New("show proc: no master line")
	}
	return p, nil
}

// identByte is HAProxy's alphabet for proxy and server names (invalid_char
// in 2.6's tools.c): letters, digits, '.', '_', '-' and ':'.
func identByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c == ':'
}

// checkNames refuses a row whose proxy or server name HAProxy could not have
// printed: such a reply is not one dcm understands (a torn or foreign
// stream), and its names must not reach the planner, which would put them
// back into commands. Found by FuzzParseStat (an empty or quoted name with a
// newline was accepted) and FuzzParseServersState (any byte in a name).
func checkNames(proxy, server string) error {
	for _, n := range []string{proxy, server} {
		if n == "" {
			return errors.New("empty proxy or server name")
		}
		for i := 0; i < len(n); i++ {
			if !identByte(n[i]) {
				return fmt.Errorf("name %q is not an HAProxy name", truncate(n, 80))
			}
		}
	}
	return nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
