package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/haproxy"
	"github.com/dcm-router/dcm/internal/testkit"
)

// Micro are the constants behind the comparison and the what-if memory
// estimate, measured on the same machine in the same run.
type Micro struct {
	RoundTrip      time.Duration // one command, request to reply
	Pipelined      time.Duration // per command, 1,000 in one write
	Reload         map[int]MicroReload
	PerSlot        float64 // bytes of worker RSS per free server-template slot
	PerRuntimeSrv  float64 // per server added with add server
	PerCfgServer   float64 // per server in haproxy.cfg (pointing at an address)
	PerEmptyBE     float64 // per backend without servers (with its map entry)
	ReloadServers  int     // servers per backend in the reload measurements
	MemoryBackends int     // backends in the memory measurements
}

// MicroReload is one reload's cost at a size.
type MicroReload struct {
	Total  time.Duration // Driver.Reload: render, haproxy -c, write, reload, new worker answering
	Master time.Duration // the master's part: reload command until the new worker is up
	PSSMB  float64       // HAProxy (master + worker) after the reload, old workers gone
}

// microState is n backends of perBackend servers each, at addresses nothing
// listens on (health checks are off), or free slots when slots is set.
func microState(n, perBackend int, slots bool) dcm.State {
	st := dcm.State{Backends: make([]*dcm.Backend, 0, n)}
	for i := range n {
		r := route(fmt.Sprintf("m%05d", i))
		b := dcm.Backend{Name: r.BackendName(), Kind: r.Kind, Route: r}
		for j := range perBackend {
			srv := dcm.Server{Name: fmt.Sprintf("s%d", j), Weight: 1, State: dcm.StateReady, Origin: dcm.OriginCfg}
			if slots {
				srv.Name = fmt.Sprintf("slot%d", j+1)
				srv.State = dcm.StateMaint
			} else {
				srv.Endpoint, srv.Addr, srv.Port = srv.Name, fmt.Sprintf("127.254.%d.%d", i/250%250, i%250+1), 9
			}
			b.Servers = append(b.Servers, srv)
		}
		if slots {
			b.Slots = perBackend
		}
		st.Backends = append(st.Backends, &b)
	}
	dcm.SortBackends(st.Backends)
	return st
}

// startHAProxy runs HAProxy with st until stop is called.
func startHAProxy(tb testing.TB, st dcm.State) (d *haproxy.Driver, dir string, stop func()) {
	tb.Helper()
	dir = testkit.ShortDir(tb)
	d = haproxy.NewDriver(haproxy.DriverConfig{Binary: testkit.HAProxy(tb), WorkDir: dir,
		Settings: haproxy.Settings{HTTPBind: testkit.FreeAddr(tb)}}, testkit.Logger(tb))
	ctx, cancel := context.WithCancel(context.Background())
	if err := d.Start(ctx, st); err != nil {
		cancel()
		tb.Fatalf("start haproxy: %v", err)
	}
	return d, dir, func() { _ = d.Close(); cancel() }
}

func workerRSS(tb testing.TB, d *haproxy.Driver) int64 {
	tb.Helper()
	info, err := d.Info(context.Background())
	if err != nil {
		tb.Fatalf("show info: %v", err)
	}
	_, rss, err := memKB(info.Pid)
	if err != nil {
		tb.Fatal(err)
	}
	return rss * 1024
}

// RunMicro measures the constants. quick uses fewer repetitions.
func RunMicro(t *testing.T, quick bool) Micro {
	m := Micro{Reload: map[int]MicroReload{}, ReloadServers: 5, MemoryBackends: 1000}
	reps, rounds := 2000, 20
	if quick {
		reps, rounds = 300, 5
	}
	m.RoundTrip, m.Pipelined = roundTrips(t, reps, rounds)

	// Reloads at 10, 1,000 and 5,000 backends of 5 servers (quick: at 10).
	sizes := []int{10, 1000, 5000}
	if quick {
		sizes = sizes[:1]
	}
	for _, n := range sizes {
		m.Reload[n] = reloadAt(t, n, m.ReloadServers)
	}
	memoryCosts(t, &m)
	return m
}

// roundTrips times admin socket commands on a backend with one server: one
// at a time (reps of them), and 1,000 in one write (rounds of them).
func roundTrips(t *testing.T, reps, rounds int) (one, pipelined time.Duration) {
	ctx := context.Background()
	_, dir, stop := startHAProxy(t, microState(1, 1, false))
	defer stop()
	be := route("m00000").BackendName()
	c := haproxy.NewClient(filepath.Join(dir, "admin.sock"), haproxy.ClientOptions{})
	defer func() { _ = c.Close() }()
	cmd := func(w int) haproxy.Command {
		cmd, err := haproxy.CommandFor(dcm.Op{Kind: dcm.OpSetWeight, Backend: be, Server: "s0", Weight: w%256 + 1}, haproxy.HTTP2{})
		if err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	single := []haproxy.Command{cmd(1)}
	if _, err := c.Exec(ctx, single); err != nil { // connect outside the timing
		t.Fatal(err)
	}
	begin := time.Now()
	for range reps {
		if _, err := c.Exec(ctx, single); err != nil {
			t.Fatal(err)
		}
	}
	one = time.Since(begin) / time.Duration(reps)
	batch := make([]haproxy.Command, 1000)
	for i := range batch {
		batch[i] = cmd(i)
	}
	begin = time.Now()
	for range rounds {
		if _, err := c.Exec(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	return one, time.Since(begin) / time.Duration(rounds*len(batch))
}

// reloadAt times three reloads at n backends of servers each and takes
// the median, and HAProxy's memory once the old workers are gone.
func reloadAt(t *testing.T, n, servers int) MicroReload {
	ctx := context.Background()
	st := microState(n, servers, false)
	d, _, stop := startHAProxy(t, st)
	defer stop()
	var totals, masters []time.Duration
	for range 3 {
		begin := time.Now()
		rr, err := d.Reload(ctx, st)
		if err != nil {
			t.Fatalf("reload at %d backends: %v", n, err)
		}
		totals = append(totals, time.Since(begin))
		masters = append(masters, rr.Duration)
	}
	// The old workers have no connections: they are gone at once; wait for it.
	procs, err := d.Procs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var pss int64
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if hs, err := sampleHAProxy(procs.Master.PID); err == nil && hs.oldWorkers == 0 {
			pss = hs.pssKB
			break
		}
	}
	slices.Sort(totals)
	slices.Sort(masters)
	return MicroReload{Total: totals[1], Master: masters[1], PSSMB: float64(pss) / 1024}
}

// memoryCosts fills in m's memory constants: the worker's RSS with
// m.MemoryBackends backends empty, with 8 free slots each, with 8 cfg
// servers each, and with one server each added at runtime.
func memoryCosts(t *testing.T, m *Micro) {
	n := m.MemoryBackends
	d, _, stop := startHAProxy(t, dcm.State{})
	base := workerRSS(t, d)
	stop()
	empty := microState(n, 0, false)
	d, _, stop = startHAProxy(t, empty)
	withBackends := workerRSS(t, d)
	var ops []dcm.Op
	for i, b := range empty.Backends {
		ops = append(ops, dcm.Op{Kind: dcm.OpAddServer, Backend: b.Name, Server: "dyn", Addr: fmt.Sprintf("127.253.%d.%d", i/250, i%250+1), Port: 9, Weight: 1})
	}
	if err := d.Apply(context.Background(), ops, dcm.State{}); err != nil {
		t.Fatalf("add servers: %v", err)
	}
	withRuntime := workerRSS(t, d)
	stop()
	d, _, stop = startHAProxy(t, microState(n, 8, true))
	withSlots := workerRSS(t, d)
	stop()
	d, _, stop = startHAProxy(t, microState(n, 8, false))
	withServers := workerRSS(t, d)
	stop()
	m.PerEmptyBE = float64(withBackends-base) / float64(n)
	m.PerRuntimeSrv = float64(withRuntime-withBackends) / float64(n)
	m.PerSlot = float64(withSlots-withBackends) / float64(n*8)
	m.PerCfgServer = float64(withServers-withBackends) / float64(n*8)
}
