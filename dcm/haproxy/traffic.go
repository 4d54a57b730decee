package haproxy

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// TrafficRow is one backend's (or, with Server set, one server's) traffic
// counters and latency figures from `show stat`. The counters count from
// the worker's start (or a `clear counters`); they are not carried over a
// reload, which starts a new worker.
type TrafficRow struct {
	Proxy  string // pxname
	Server string // svname; empty for the backend's own row
	// Requests is req_tot (HTTP only: TCP backends leave it empty);
	// Sessions is stot, the connections the proxy took (both modes).
	Requests, Sessions uint64
	// Responses are hrsp_1xx … hrsp_5xx and hrsp_other (HTTP only).
	Responses         [6]uint64
	BytesIn, BytesOut uint64 // bin, bout
	// ConnErrors is econ (failed connections to a server); RespErrors is
	// eresp (a server's response aborted or invalid).
	ConnErrors, RespErrors uint64
	Queue                  int // qcur
	// Times are qtime, ctime, rtime, ttime in milliseconds: HAProxy 2.6's
	// averages over the last 1024 requests (no percentiles, no histogram).
	Times [4]int
}

// Traffic is a read of show stat with the worker it came from: counters
// belong to one worker process, so a reader that keeps totals across
// reloads needs to know when the worker changed.
type Traffic struct {
	Pid  int
	Rows []TrafficRow
}

// TrafficCommand is `show stat` of every proxy's backend rows, and of the
// servers' rows too when servers is set (type mask 2, or 2|4).
func TrafficCommand(servers bool) Command {
	if servers {
		return Command{text: "show stat -1 6 -1", kind: replyStat}
	}
	return Command{text: "show stat -1 2 -1", kind: replyStat}
}

// ReadTraffic reads the traffic counters of dcm's backends (and their
// servers, when servers is set) and the worker's pid, in one batch so that
// both come from the same worker: no reload runs while trafficMu is held.
func (d *Driver) ReadTraffic(ctx context.Context, servers bool) (Traffic, error) {
	d.mu.Lock()
	if err := d.ready(); err != nil {
		d.mu.Unlock()
		return Traffic{}, err
	}
	// Over a connection of its own: the syncs' commands go on meanwhile
	// (Driver.traffic).
	d.trafficMu.Lock()
	c := d.traffic
	d.mu.Unlock()
	replies, err := c.Exec(ctx, []Command{InfoCommand(), TrafficCommand(servers)})
	d.trafficMu.Unlock()
	if err != nil {
		return Traffic{}, fmt.Errorf("read traffic: %w", err)
	}
	// Parsed outside the lock: on 10,000 backends parsing takes longer
	// than HAProxy's answer, and syncs need not wait for it.
	info, err := ParseInfo(replies[0].Text)
	if err != nil {
		return Traffic{}, fmt.Errorf("read traffic: %w", err)
	}
	rows, err := ParseTraffic(replies[1].Text)
	if err != nil {
		return Traffic{}, fmt.Errorf("read traffic: %w", err)
	}
	return Traffic{Pid: info.Pid, Rows: rows}, nil
}

// trafficColumns are the counters ParseTraffic reads, by header name.
var trafficColumns = []string{"req_tot", "stot", "hrsp_1xx", "hrsp_2xx", "hrsp_3xx", "hrsp_4xx", "hrsp_5xx", "hrsp_other",
	"bin", "bout", "econ", "eresp", "qcur", "qtime", "ctime", "rtime", "ttime"}

// ParseTraffic parses show stat's CSV into the rows of dcm's backends
// (be_* but not the default backend) and their servers; frontends and
// other proxies are skipped. Columns are found by header name; an empty
// field (a figure the proxy's mode lacks) reads as 0.
func ParseTraffic(text string) ([]TrafficRow, error) {
	text = strings.TrimLeft(text, "\n")
	if !strings.HasPrefix(text, "# ") {
		return nil, fmt.Errorf("show stat: want a \"# pxname,...\" header, got %q", truncate(firstLine(text), 80))
	}
	r := csv.NewReader(strings.NewReader(text[2:]))
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("show stat header: %w", err)
	}
	col := map[string]int{}
	for i, h := range header {
		if _, dup := col[h]; !dup {
			col[h] = i
		}
	}
	idx := make([]int, len(trafficColumns))
	for i, name := range append([]string{"pxname", "svname", "type"}, trafficColumns...) {
		c, ok := col[name]
		if !ok {
			return nil, fmt.Errorf("show stat: header lacks %s", name)
		}
		if i >= 3 {
			idx[i-3] = c
		}
	}
	width := len(header)
	var out []TrafficRow
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("show stat: %w", err)
		}
		if len(rec) == 1 && rec[0] == "" {
			continue
		}
		line, _ := r.FieldPos(0)
		if len(rec) != width {
			return nil, fmt.Errorf("show stat line %d: %d fields, header has %d", line, len(rec), width)
		}
		row, keep, err := trafficRow(rec, col, idx)
		if err != nil {
			return nil, fmt.Errorf("show stat line %d: %w", line, err)
		}
		if keep {
			out = append(out, row)
		}
	}
}

// trafficRow reads one record; keep is false for rows dcm does not report.
func trafficRow(rec []string, col map[string]int, idx []int) (row TrafficRow, keep bool, err error) {
	row.Proxy = rec[col["pxname"]]
	sv := rec[col["svname"]]
	switch rec[col["type"]] {
	case "1": // StatBackend: svname is "BACKEND"
	case "2": // StatServer
		row.Server = sv
	default:
		return row, false, nil
	}
	if !managed(row.Proxy) {
		return row, false, nil
	}
	if err := checkNames(row.Proxy, sv); err != nil {
		return row, false, err
	}
	var n [17]uint64
	for i, c := range idx {
		if rec[c] == "" {
			continue
		}
		if n[i], err = strconv.ParseUint(rec[c], 10, 64); err != nil {
			return row, false, fmt.Errorf("%s %q is not a number", trafficColumns[i], rec[c])
		}
	}
	row.Requests, row.Sessions = n[0], n[1]
	copy(row.Responses[:], n[2:8])
	row.BytesIn, row.BytesOut, row.ConnErrors, row.RespErrors = n[8], n[9], n[10], n[11]
	row.Queue = int(n[12])
	for i := range row.Times {
		row.Times[i] = int(n[13+i])
	}
	return row, true, nil
}
