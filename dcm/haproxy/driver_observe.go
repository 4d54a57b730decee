package haproxy

import (
	"context"
	"fmt"
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
	replies, err := d.client.Exec(ctx, []Command{BackendsCommand(), state, stat})
	if err != nil {
		return nil, fmt.Errorf("observe: %w", err)
	}
	out := map[string][]dcm.Server{}
	for _, name := range strings.Split(replies[0].Text, "\n")[1:] {
		if managed(name) {
			out[name] = []dcm.Server{}
		}
	}
	if err := merge(out, replies[1].Text, replies[2].Text, nil); err != nil {
		return nil, fmt.Errorf("observe: %w", err)
	}
	return out, nil
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
	states, err := ParseServersState(stateText)
	if err != nil {
		return err
	}
	var stats []StatRow
	if statText != "" {
		if stats, err = ParseStat(statText); err != nil {
			return err
		}
	}
	type key struct{ b, s string }
	byKey := make(map[key]StatRow, len(stats))
	for _, r := range stats {
		if r.Type == StatServer {
			byKey[key{r.Proxy, r.Server}] = r
		}
	}
	for _, s := range states {
		if !managed(s.Backend) || (only != nil && !only[s.Backend]) {
			continue
		}
		srv := dcm.Server{Name: s.Name, Addr: s.Addr, Port: s.Port, Weight: s.Weight, State: s.State}
		if r, ok := byKey[key{s.Backend, s.Name}]; ok {
			srv.Health, srv.Sessions, srv.Queued, srv.UsedConn, srv.IdleConn = statusWord(r.Status), r.Sessions, r.Queued, r.UsedConn, r.IdleConn
		} else {
			srv.Health = healthOf(s)
		}
		out[s.Backend] = append(out[s.Backend], srv)
	}
	for b := range out {
		dcm.SortServers(out[b])
	}
	return nil
}

// statusWord keeps the state of show stat's status column and drops the
// check's progress ("UP 1/3" → "UP"; "no check" → "UP"), so that it reads
// the same as healthOf and only changes when the server's health does.
func statusWord(status string) string {
	w, _, _ := strings.Cut(status, " ")
	if w == "no" || w == "" {
		return "UP"
	}
	return w
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
