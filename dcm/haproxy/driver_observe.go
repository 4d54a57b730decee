package haproxy

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/dcm-router/dcm/dcm"
)

// Observe reports the servers of every backend dcm manages, as HAProxy sees
// them: address, weight, admin state, health and load. Origin, Pod,
// Endpoint and Check are left for the engine, which knows them.
func (d *Driver) Observe(ctx context.Context) (map[string][]dcm.Server, error) {
	state, _ := ServersStateCommand("")
	stat, _ := StatCommand("")
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.ready(); err != nil {
		return nil, err
	}
	// The replies of every server are read as they come: at 100,000
	// servers, holding them as text and then parsed took 680 MB of
	// allocations and held a quarter of it at once.
	o := observation{out: map[string][]dcm.Server{}}
	replies, err := d.client.ExecStreams(ctx, []Command{BackendsCommand(), state, stat}, []Stream{nil, o.readState, o.readStat})
	if err != nil {
		return nil, fmt.Errorf("observe: %w", err)
	}
	for _, name := range strings.Split(replies[0].Text, "\n")[1:] {
		if _, ok := o.out[name]; !ok && managed(name) {
			o.out[name] = []dcm.Server{}
		}
	}
	o.sort()
	return o.out, nil
}

// ObserveBackends is Observe limited to some backends, in one batch. A
// backend HAProxy does not know is absent from the result.
func (d *Driver) ObserveBackends(ctx context.Context, names []string) (map[string][]dcm.Server, error) {
	return d.observeBackends(ctx, names, true)
}

// ObserveStates is ObserveBackends without the traffic figures: admin state,
// address, weight and a health derived from the operational state, from
// `show servers state` alone. It is several times cheaper than show stat
// (which walks every proxy for each backend asked), so the periodic drift
// check uses it; Sessions, Queued, UsedConn and IdleConn are left zero.
func (d *Driver) ObserveStates(ctx context.Context, names []string) (map[string][]dcm.Server, error) {
	return d.observeBackends(ctx, names, false)
}

func (d *Driver) observeBackends(ctx context.Context, names []string, traffic bool) (map[string][]dcm.Server, error) {
	per := 1
	if traffic {
		per = 2
	}
	cmds := make([]Command, 0, per*len(names))
	for _, n := range names {
		state, err := ServersStateCommand(n)
		if err != nil {
			return nil, fmt.Errorf("observe: %w", err)
		}
		cmds = append(cmds, state)
		if traffic {
			stat, err := StatCommand(n)
			if err != nil {
				return nil, fmt.Errorf("observe: %w", err)
			}
			cmds = append(cmds, stat)
		}
	}
	if len(cmds) == 0 {
		return map[string][]dcm.Server{}, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.ready(); err != nil {
		return nil, err
	}
	replies, err := d.client.Exec(ctx, cmds)
	if len(replies) < len(cmds) {
		return nil, fmt.Errorf("observe: %w", err)
	}
	out := map[string][]dcm.Server{}
	for i, n := range names {
		st := replies[per*i].Text
		sr := ""
		if traffic {
			sr = replies[per*i+1].Text
		}
		if missingBackend(st) || missingBackend(sr) {
			continue
		}
		if !cmds[per*i].succeeded(st) || traffic && !cmds[per*i+1].succeeded(sr) {
			return nil, fmt.Errorf("observe %s: %w", n, err)
		}
		if managed(n) {
			out[n] = []dcm.Server{}
		}
		if err := merge(out, st, sr, map[string]bool{n: true}); err != nil {
			return nil, fmt.Errorf("observe %s: %w", n, err)
		}
	}
	return out, nil
}

// missingBackend recognises 2.6's replies for a backend that does not exist.
func missingBackend(reply string) bool {
	_, msg, ok := severity(reply)
	return ok && (msg == "Can't find backend." || msg == "No such proxy." || msg == "No such backend.")
}

// managed says whether dcm manages a backend: be_* but not the 404 backend.
func managed(name string) bool {
	return strings.HasPrefix(name, BackendPrefix) && name != DefaultBackend
}

// merge joins `show servers state` and `show stat` into out, per backend.
func merge(out map[string][]dcm.Server, stateText, statText string, only map[string]bool) error {
	o := observation{out: out, only: only}
	states, err := ParseServersState(stateText)
	if err != nil {
		return err
	}
	for _, s := range states {
		o.state(s)
	}
	o.flush()
	if statText != "" {
		stats, err := ParseStat(statText)
		if err != nil {
			return err
		}
		for _, r := range stats {
			o.stat(r)
		}
	}
	o.sort()
	return nil
}

// observation gathers the servers of `show servers state`, then their
// figures from `show stat`, per backend, as the replies are read.
type observation struct {
	out  map[string][]dcm.Server
	only map[string]bool // nil: every backend
	hint int             // where the next stat row's server likely is in its backend
	// cur is the backend whose servers come now, gathered in pending:
	// HAProxy lists a backend's servers together, and out takes them at
	// their size rather than grown one by one (at 100,000 servers, 37 MB
	// held and as much again dropped, against 23 MB).
	cur     string
	pending []dcm.Server
}

func (o *observation) readState(header string, body io.Reader) error {
	err := ReadServersState(io.MultiReader(strings.NewReader(header+"\n"), body), func(s ServerState) error {
		o.state(s)
		return nil
	})
	o.flush()
	return err
}

func (o *observation) readStat(header string, body io.Reader) error {
	return ReadStat(io.MultiReader(strings.NewReader(strings.TrimPrefix(header, "# ")+"\n"), body), func(r StatRow) error {
		o.stat(r)
		return nil
	})
}

// state adds a server of `show servers state`.
func (o *observation) state(s ServerState) {
	if !managed(s.Backend) || (o.only != nil && !o.only[s.Backend]) {
		return
	}
	// Copies: s's strings share its line, which the state would keep.
	srv := dcm.Server{Name: strings.Clone(s.Name), Addr: strings.Clone(s.Addr), Port: s.Port, Weight: s.Weight, State: s.State,
		Health: healthOf(s)}
	if s.Backend != o.cur {
		o.flush()
		o.cur = strings.Clone(s.Backend)
	}
	o.pending = append(o.pending, srv)
}

// flush puts the servers gathered for the current backend in out; state
// calls it when the backend changes, and the reader of the reply at its
// end, before any stat row is read.
func (o *observation) flush() {
	if len(o.pending) == 0 {
		return
	}
	if have := o.out[o.cur]; have != nil {
		o.out[o.cur] = append(have, o.pending...) // listed by show backend, or its servers came apart
	} else {
		o.out[o.cur] = slices.Clone(o.pending)
	}
	o.pending = o.pending[:0]
}

// stat sets the health and load of a server `show servers state` listed.
// Both replies list a backend's servers in the same order, so the one
// after the last found is looked at first.
func (o *observation) stat(r StatRow) {
	if r.Type != StatServer {
		return
	}
	servers := o.out[r.Proxy]
	i := o.hint
	if i >= len(servers) || servers[i].Name != r.Server {
		if i = slices.IndexFunc(servers, func(s dcm.Server) bool { return s.Name == r.Server }); i < 0 {
			return
		}
	}
	s := &servers[i]
	s.Health, s.Sessions, s.Queued, s.UsedConn, s.IdleConn = statusWord(r.Status), r.Sessions, r.Queued, r.UsedConn, r.IdleConn
	o.hint = i + 1
}

func (o *observation) sort() {
	for _, servers := range o.out {
		dcm.SortServers(servers)
	}
}

// statusWord keeps the state of show stat's status column and drops the
// check's progress ("UP 1/3" → "UP"; "no check" → "UP"), so that it reads
// the same as healthOf and only changes when the server's health does.
func statusWord(status string) string {
	w, _, _ := strings.Cut(status, " ")
	switch w {
	case "no", "", "UP":
		return "UP"
	case "DOWN":
		return "DOWN"
	case "MAINT":
		return "MAINT"
	case "DRAIN":
		return "DRAIN"
	case "NOLB":
		return "NOLB"
	}
	return strings.Clone(w) // w shares the whole row's text
}

// healthOf words a server's state as show stat's status column does, from
// `show servers state` alone.
func healthOf(s ServerState) string {
	switch {
	case s.State == dcm.StateMaint:
		return "MAINT"
	case s.OpState == 0:
		return "DOWN"
	case s.State == dcm.StateDrain:
		return "DRAIN"
	case s.OpState == 3:
		return "NOLB"
	}
	return "UP"
}
