package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/engine"
	"github.com/dcm-router/dcm/dcm/haproxy"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/internal/testkit"
	"github.com/dcm-router/dcm/system"
)

// recoverWithin is how soon after HAProxy is killed requests must be served
// again (the bound).
const recoverWithin = 2 * time.Second

// faultApp is a backend of three pods: two ready, with weights 1 and 3, and
// one draining, a state no configuration file can hold (HAProxy 2.6 has no
// "drain" server keyword), so dcm must re-apply it at runtime.
func faultApp(t *testing.T, ipBase string) (*harness.StaticSource, []pod) {
	t.Helper()
	pods := []pod{
		startPod(t, ipBase+"1", "a"),
		startPod(t, ipBase+"2", "b"),
		startPod(t, ipBase+"3", "c"),
	}
	heavy := pods[1].endpoint(dcm.StateReady)
	heavy.Weight = 3
	return harness.NewStaticSource(desiredApp(pods[0].endpoint(dcm.StateReady), heavy, pods[2].endpoint(dcm.StateDrain))), pods
}

// firstOK waits until the processes gone have exited, then polls HAProxy
// until a request to the app answers 200, and returns how long after since
// that was. Waiting for gone matters when the master is killed: its worker
// serves on for a moment before it notices, and a 200 from it says nothing
// about the recovery.
func firstOK(t *testing.T, s *harness.Stack, since time.Time, limit time.Duration, gone ...int) time.Duration {
	t.Helper()
	for _, pid := range gone {
		for alive(pid) {
			if time.Since(since) > limit {
				t.Fatalf("process %d still alive %s after the kill", pid, limit)
			}
			time.Sleep(time.Millisecond)
		}
	}
	probe := &http.Client{Timeout: 250 * time.Millisecond, Transport: &http.Transport{DisableKeepAlives: true}}
	deadline := since.Add(limit)
	var last string
	for time.Now().Before(deadline) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+s.HTTPAddr+"/", nil)
		req.Host = "app.test"
		resp, err := probe.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(since)
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no 200 within %s of the kill (last: %s)", limit, last)
	return 0
}

// alive says whether pid runs (a zombie does not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// observed lists HAProxy's servers as harness.Stack.Observed does, with
// the error (the admin connection dies with a killed worker).
func observed(s *harness.Stack) ([]string, error) {
	obs, err := s.Driver.Observe(context.Background())
	if err != nil {
		return nil, err
	}
	var out []string
	for b, servers := range obs {
		for _, sv := range servers {
			out = append(out, fmt.Sprintf("%s/%s %s:%d w%d %s", b, sv.Name, sv.Addr, sv.Port, sv.Weight, sv.State))
		}
	}
	slices.Sort(out)
	return out, nil
}

// haproxyProcs lists the pids of the haproxy processes whose command line
// names a file in dir.
func haproxyProcs(t *testing.T, dir string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if strings.HasSuffix(args[0], "haproxy") && strings.Contains(string(b), dir+"/") {
			out = append(out, pid)
		}
	}
	return out
}

// servedShares sends n requests and counts who answered.
func servedShares(t *testing.T, s *harness.Stack, n int) map[string]int {
	t.Helper()
	got, err := s.Served("app.test", "/", n)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestHAProxyKilled: kill -9 of the worker, and of the master. dcm's
// supervisor (or HAProxy's master, for a worker) brings HAProxy back from
// the files on disk, dcm re-applies what the files cannot hold (drain), and
// traffic is served again within recoverWithin by exactly the same servers.
func TestHAProxyKilled(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ipBase string
		victim func(t *testing.T, s *harness.Stack) int
	}{
		{"worker", "127.0.3.", func(t *testing.T, s *harness.Stack) int { return s.WorkerPID() }},
		{"master", "127.0.3.1", func(t *testing.T, s *harness.Stack) int { return s.Driver.MasterPID() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, _ := faultApp(t, tc.ipBase)
			s := harness.Start(t, harness.Options{Source: src})
			be := appRoute.BackendName()
			s.Eventually("c drains", 5*time.Second, func() error {
				if sv, ok := s.Backend(be).Server("c:http"); !ok || sv.State != dcm.StateDrain {
					return errors.New("c not draining yet")
				}
				return nil
			})
			before, err := observed(s)
			if err != nil {
				t.Fatal(err)
			}
			if got := servedShares(t, s, 40); got["a"] != 10 || got["b"] != 30 || len(got) != 2 {
				t.Fatalf("before the kill: served %v, want a 10, b 30", got)
			}
			rec := s.Subscribe(t)
			oldWorker := s.WorkerPID()
			pid := tc.victim(t, s)
			if pid <= 0 {
				t.Fatalf("no %s pid", tc.name)
			}
			killed := time.Now()
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			took := firstOK(t, s, killed, 10*time.Second, pid, oldWorker)
			t.Logf("kill -9 %s %d → first 200 after %d ms", tc.name, pid, took.Milliseconds())
			if took > recoverWithin {
				t.Errorf("first 200 %s after the kill, want within %s", took, recoverWithin)
			}
			// The drain is restored at runtime once dcm has seen the new
			// process; then HAProxy holds exactly what it held before.
			s.Eventually("HAProxy holds the servers it held before", 5*time.Second, func() error {
				got, err := observed(s)
				if err != nil {
					return err
				}
				if !slices.Equal(got, before) {
					return fmt.Errorf("HAProxy has\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(before, "\n"))
				}
				return nil
			})
			if got := servedShares(t, s, 40); got["a"] != 10 || got["b"] != 30 || len(got) != 2 {
				t.Errorf("after the kill: served %v, want a 10, b 30", got)
			}
			if w := s.WorkerPID(); w == oldWorker {
				t.Errorf("worker pid %d unchanged after the kill", w)
			}
			// No worker of the killed master lingers beside the new one
			// (it would serve the old state on the same reused port).
			s.Eventually("only the new master and its worker run", 5*time.Second, func() error {
				if procs := haproxyProcs(t, s.Dir); len(procs) != 2 {
					return fmt.Errorf("haproxy processes on %s: %v, want the master and one worker", s.Dir, procs)
				}
				return nil
			})
			var kinds []string
			for _, ev := range rec.Events() {
				if ev.Type == dcm.EventHAProxy {
					kinds = append(kinds, ev.Reason)
				}
				// The new process runs the files, which is what dcm expects
				// of it: nothing was changed by hand.
				if ev.Type == dcm.EventObserved && ev.Reason == engine.DriftReason {
					t.Errorf("drift reported after a restart from the files: %s", ev.Message)
				}
			}
			if !slices.Contains(kinds, string(haproxy.ProcessRestarted)) {
				t.Errorf("HAProxy events %v, want a restart", kinds)
			}
			t.Logf("events after the kill: %v", kinds)
		})
	}
}

// TestDriftRepaired: someone changes a server by hand over the admin socket
// (weight, admin state, address). dcm notices in its periodic read-back,
// reports the difference (an observed event with reason drift, the log,
// dcm_prediction_mismatch_total; /config shows it until then) and sets the
// server back: requests reach exactly the pods Kubernetes names again.
func TestDriftRepaired(t *testing.T) {
	be := appRoute.BackendName()
	for i, tc := range []struct {
		name string
		op   func(intruder pod) dcm.Op
		// drifted is true once HAProxy shows the change.
		drifted func(sv dcm.Server, intruder pod) bool
	}{
		{"weight", func(pod) dcm.Op { return dcm.Op{Kind: dcm.OpSetWeight, Backend: be, Server: "b:http", Weight: 1} },
			func(sv dcm.Server, _ pod) bool { return sv.Weight == 1 }},
		{"state", func(pod) dcm.Op {
			return dcm.Op{Kind: dcm.OpSetState, Backend: be, Server: "b:http", State: dcm.StateMaint}
		},
			func(sv dcm.Server, _ pod) bool { return sv.State == dcm.StateMaint }},
		{"addr", func(p pod) dcm.Op {
			return dcm.Op{Kind: dcm.OpSetAddr, Backend: be, Server: "b:http", Addr: p.Addr, Port: p.Port}
		}, func(sv dcm.Server, p pod) bool { return sv.Addr == p.Addr && sv.Port == p.Port }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := fmt.Sprintf("127.0.4.%d", i+1) // .11, .21, .31 …
			a := startPod(t, base+"1", "a")
			b := startPod(t, base+"2", "b")
			intruder := startPod(t, base+"3", "intruder")
			heavy := b.endpoint(dcm.StateReady)
			heavy.Weight = 3
			src := harness.NewStaticSource(desiredApp(a.endpoint(dcm.StateReady), heavy))
			// A slow read-back leaves time to look at the drift before the repair.
			s := harness.Start(t, harness.Options{Source: src, Config: func(c *system.Config) { c.ObserveEvery = 2 * time.Second }})
			before, err := observed(s)
			if err != nil {
				t.Fatal(err)
			}
			if got := servedShares(t, s, 40); got["a"] != 10 || got["b"] != 30 || len(got) != 2 {
				t.Fatalf("before: served %v, want a 10, b 30", got)
			}
			rec := s.Subscribe(t)
			mismatches := s.Counter("dcm_prediction_mismatch_total")
			reloads := s.Reloads()

			cli := haproxy.NewClient(s.Dir+"/admin.sock", haproxy.ClientOptions{})
			defer cli.Close()
			cmd, err := haproxy.CommandFor(tc.op(intruder), haproxy.HTTP2{})
			if err != nil {
				t.Fatal(err)
			}
			changed := time.Now()
			if _, err := cli.Exec(context.Background(), []haproxy.Command{cmd}); err != nil {
				t.Fatal(err)
			}
			obs, err := s.Driver.ObserveStates(context.Background(), []string{be})
			if err != nil {
				t.Fatal(err)
			}
			if i := slices.IndexFunc(obs[be], func(sv dcm.Server) bool { return sv.Name == "b:http" }); i < 0 || !tc.drifted(obs[be][i], intruder) {
				t.Fatalf("the change by hand did not take: %+v", obs[be])
			}
			// Until the read-back, /config shows what HAProxy runs against the files.
			view, err := s.Engine.Config(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(view.Drift, func(l string) bool { return strings.Contains(l, "b:http") }) {
				t.Errorf("/config drift does not name b:http: %q", view.Drift)
			}

			s.Eventually("HAProxy is set back", 10*time.Second, func() error {
				got, err := observed(s)
				if err != nil {
					return err
				}
				if !slices.Equal(got, before) {
					return fmt.Errorf("HAProxy has %v, want %v", got, before)
				}
				return nil
			})
			t.Logf("%s changed by hand, set back after %d ms", tc.name, time.Since(changed).Milliseconds())
			if got := servedShares(t, s, 40); got["a"] != 10 || got["b"] != 30 || len(got) != 2 {
				t.Errorf("after the repair: served %v, want a 10, b 30", got)
			}
			if got := s.Counter("dcm_prediction_mismatch_total") - mismatches; got < 1 {
				t.Errorf("dcm_prediction_mismatch_total grew by %v, want at least 1", got)
			}
			if got := s.Reloads(); got != reloads {
				t.Errorf("%v reloads to repair a server, want none", got-reloads)
			}
			var reported, repaired bool
			for _, ev := range rec.Events() {
				if ev.Type == dcm.EventObserved && ev.Reason == engine.DriftReason && strings.Contains(ev.Message, be+"/b:http") &&
					slices.Contains(ev.Backends, be) {
					reported = true
				}
				if ev.Type == dcm.EventApplied && reported {
					for _, op := range ev.Ops {
						repaired = repaired || op.Server == "b:http"
					}
				}
			}
			if !reported || !repaired {
				t.Errorf("drift event %v, repair applied after it %v; events %+v", reported, repaired, rec.Events())
			}
			view, err = s.Engine.Config(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(view.Drift) != 0 {
				t.Errorf("/config drift after the repair: %q", view.Drift)
			}
		})
	}
}

// refusingHAProxy writes a --haproxy-bin wrapper that runs the real haproxy
// but fails its configuration check (-c) while the returned flag file
// exists, as a configuration HAProxy refuses would.
func refusingHAProxy(t *testing.T) (bin, flag string) {
	t.Helper()
	dir := t.TempDir()
	bin, flag = dir+"/haproxy", dir+"/refuse"
	script := fmt.Sprintf(`#!/bin/sh
for a in "$@"; do
	if [ "$a" = "-c" ] && [ -e %[1]q ]; then
		echo "[ALERT]    (0) : config : test wrapper: configuration refused while %[1]s exists" >&2
		exit 1
	fi
done
exec %[2]q "$@"
`, flag, testkit.HAProxy(t))
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, flag
}

// portalPage fetches a page of the portal with the test's bearer token.
func portalPage(t *testing.T, s *harness.Stack, path string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.PortalURL+path, nil)
	req.Header.Set("Authorization", "Bearer "+whatifToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", path, resp.Status)
	}
	return string(b)
}

// TestReloadRefusedIsRetried: a change that needs a reload (the balance
// algorithm) meets a configuration check that fails. The old worker keeps
// serving the old configuration, the error is on the portal's overview and
// in the events, dcm retries with a doubling delay, and once the check
// passes again the reload goes through.
func TestReloadRefusedIsRetried(t *testing.T) {
	bin, flag := refusingHAProxy(t)
	a := startPod(t, "127.0.5.1", "a")
	b := startPod(t, "127.0.5.2", "b")
	src := harness.NewStaticSource(desiredApp(a.endpoint(dcm.StateReady), b.endpoint(dcm.StateReady)))
	const first = 200 * time.Millisecond
	s := harness.Start(t, harness.WithTokens(t, harness.Options{Source: src, Config: func(c *system.Config) {
		c.HAProxyBin, c.RetryReloadAfter = bin, first
	}}, whatifToken+" admin alice"))
	be := appRoute.BackendName()
	if err := s.ServesExactly("app.test", "/", []string{"a", "b"}, 10); err != nil {
		t.Fatal(err)
	}
	pid := s.WorkerPID()
	rec := s.Subscribe(t)
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	changed := desiredApp(a.endpoint(dcm.StateReady), b.endpoint(dcm.StateReady))
	changed.Backends[0].Route.Balance = dcm.BalanceLeastConn
	src.Set(changed)

	failures := func() []time.Time {
		var out []time.Time
		for _, ev := range rec.Events() {
			if ev.Type == dcm.EventReload && ev.Reason == "failed" && ev.Reload != nil {
				out = append(out, ev.Reload.Time)
			}
		}
		return out
	}
	const tries = 5
	s.Eventually(fmt.Sprintf("%d failed reloads", tries), 15*time.Second, func() error {
		if n := len(failures()); n < tries {
			return fmt.Errorf("%d failed reloads", n)
		}
		return nil
	})
	// The old worker serves on, as before.
	if got := s.WorkerPID(); got != pid {
		t.Errorf("worker %d replaced by %d although every reload failed", pid, got)
	}
	if err := s.ServesExactly("app.test", "/", []string{"a", "b"}, 10); err != nil {
		t.Errorf("while reloads fail: %v", err)
	}
	// The delay between attempts doubles.
	at := failures()
	var gaps []string
	for i := 1; i < len(at); i++ {
		gap := at[i].Sub(at[i-1])
		gaps = append(gaps, fmt.Sprintf("%dms", gap.Milliseconds()))
		if want := first << (i - 1); gap < want*9/10 || gap > want*2+time.Second {
			t.Errorf("retry %d came %s after the one before, want about %s", i, gap, want)
		}
	}
	t.Logf("intervals between failed reloads: %v", gaps)
	var failed dcm.Event
	for _, ev := range rec.Events() {
		if ev.Type == dcm.EventReload && ev.Reason == "failed" {
			failed = ev
		}
	}
	const said = "configuration refused while"
	if failed.Reload == nil || !strings.Contains(failed.Reload.Error, said) || !slices.Contains(failed.Reload.Reasons, dcm.ReasonRouteChanged) {
		t.Errorf("failed reload event %+v: want reason %s and HAProxy's alert", failed.Reload, dcm.ReasonRouteChanged)
	}
	if page := portalPage(t, s, "/"); !strings.Contains(page, said) {
		t.Errorf("the overview does not show the reload error %q", said)
	}
	if got := s.Counter("dcm_reload_failures_total", "reason", string(dcm.ReasonRouteChanged)); got < tries {
		t.Errorf("dcm_reload_failures_total{reason=route-changed} = %v, want at least %d", got, tries)
	}

	if err := os.Remove(flag); err != nil {
		t.Fatal(err)
	}
	s.Eventually("the retried reload goes through", 15*time.Second, func() error {
		if s.Counter("dcm_reloads_total", "reason", string(dcm.ReasonRouteChanged)) != 1 {
			return errors.New("no route-changed reload yet")
		}
		return nil
	})
	if got := s.WorkerPID(); got == pid {
		t.Error("same worker after the reload")
	}
	if err := s.ServesExactly("app.test", "/", []string{"a", "b"}, 10); err != nil {
		t.Errorf("after the reload: %v", err)
	}
	if b := s.Backend(be); b.Route.Balance != dcm.BalanceLeastConn {
		t.Errorf("backend balance %q after the reload, want leastconn", b.Route.Balance)
	}
	if page := portalPage(t, s, "/"); strings.Contains(page, said) {
		t.Error("the overview still shows the old reload error after a good reload")
	}
}

// stallSocket puts a listener that accepts and never answers at path (the
// real socket moved aside to path+".real") and returns a function that
// puts the real one back (false when it is gone).
func stallSocket(t *testing.T, path string) (restore func() bool) {
	t.Helper()
	if err := os.Rename(path, path+".real"); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c) // read nothing, answer nothing
			mu.Unlock()
		}
	}()
	stop := func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range held {
			_ = c.Close()
		}
		held = nil
		mu.Unlock()
	}
	t.Cleanup(stop)
	return func() bool {
		stop()
		if _, err := os.Stat(path + ".real"); err != nil {
			return false
		}
		if err := os.Rename(path+".real", path); err != nil {
			t.Fatal(err)
		}
		return true
	}
}

// dropCLISessions ends every CLI session of HAProxy (dcm's long-lived
// admin connection among them) through the socket at path.
func dropCLISessions(t *testing.T, path string) int {
	t.Helper()
	out := cliOnce(t, path, "show sess")
	n := 0
	for _, line := range strings.Split(out, "\n") {
		id, rest, ok := strings.Cut(line, ": ")
		if !ok || !strings.Contains(rest, "fe=GLOBAL") {
			continue
		}
		if reply := cliOnce(t, path, "shutdown session "+id); strings.TrimSpace(reply) == "" {
			n++
		}
	}
	return n
}

// cliOnce sends one command on a fresh connection and returns the reply.
func cliOnce(t *testing.T, path, cmd string) string {
	t.Helper()
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(c, cmd+"\n"); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAdminSocketStalls: HAProxy's admin socket accepts but never answers
// (a worker stuck on something). Every read gives up after the read
// timeout, the engine keeps answering (Snapshot, /healthz), the change
// falls back to a reload with reason runtime-error, and dcm converges.
func TestAdminSocketStalls(t *testing.T) {
	a := startPod(t, "127.0.6.1", "a")
	b := startPod(t, "127.0.6.2", "b")
	c := startPod(t, "127.0.6.3", "c")
	src := harness.NewStaticSource(desiredApp(a.endpoint(dcm.StateReady), b.endpoint(dcm.StateReady)))
	const readTimeout = 300 * time.Millisecond
	s := harness.Start(t, harness.WithTokens(t, harness.Options{Source: src, Config: func(c *system.Config) {
		c.AdminReadTimeout, c.ReloadTimeout = readTimeout, 2*time.Second
	}}, whatifToken+" admin alice"))
	if err := s.ServesExactly("app.test", "/", []string{"a", "b"}, 10); err != nil {
		t.Fatal(err)
	}
	rec := s.Subscribe(t)
	sock := s.Dir + "/admin.sock"
	restore := stallSocket(t, sock)
	if n := dropCLISessions(t, sock+".real"); n == 0 {
		t.Fatal("no CLI session to drop")
	}
	// The driver learns that its connection is gone; its next command
	// connects to the staller.
	if _, err := s.Driver.Info(context.Background()); err == nil {
		t.Fatal("show info answered on a dropped connection")
	}
	stalled := time.Now()
	src.Set(desiredApp(a.endpoint(dcm.StateReady), b.endpoint(dcm.StateReady), c.endpoint(dcm.StateReady)))

	// The engine answers while the driver waits on the socket: through the
	// failed update, its reload fallback and the wait for the new worker's
	// socket (ReloadTimeout).
	reloadEvent := func() bool {
		return slices.ContainsFunc(rec.Events(), func(ev dcm.Event) bool {
			return ev.Type == dcm.EventReload && ev.Reload != nil && slices.Contains(ev.Reload.Reasons, dcm.ReasonRuntimeError)
		})
	}
	var slowest time.Duration
	for time.Since(stalled) < 10*time.Second && !reloadEvent() {
		start := time.Now()
		done := make(chan struct{})
		go func() { s.Engine.Snapshot(); close(done) }()
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			t.Fatalf("Snapshot blocked for 2s while the admin socket stalls")
		}
		resp, err := (&http.Client{Timeout: 2 * time.Second}).Get(s.PortalURL + "/healthz")
		if err != nil {
			t.Fatalf("/healthz while the admin socket stalls: %v", err)
		}
		resp.Body.Close()
		slowest = max(slowest, time.Since(start))
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("slowest Snapshot + /healthz while stalled: %d ms (over %d ms)", slowest.Milliseconds(), time.Since(stalled).Milliseconds())
	var syncErr, reloadTried bool
	for _, ev := range rec.Events() {
		switch {
		case ev.Type == dcm.EventSyncError && ev.Reason == string(dcm.ReasonRuntimeError) && !syncErr:
			syncErr = true
			t.Logf("change → sync-error after %d ms: %s", ev.Time.Sub(stalled).Milliseconds(), ev.Message)
			if !strings.Contains(ev.Message, "i/o timeout") {
				t.Errorf("the sync error does not say the read timed out: %s", ev.Message)
			}
			if d := ev.Time.Sub(stalled); d < readTimeout {
				t.Errorf("sync error %s after the change, before the read timeout %s", d, readTimeout)
			}
		case ev.Type == dcm.EventReload && ev.Reload != nil && slices.Contains(ev.Reload.Reasons, dcm.ReasonRuntimeError):
			reloadTried = true
			t.Logf("reload event %d ms after the change: %s", ev.Time.Sub(stalled).Milliseconds(), ev.Message)
			if ev.Reload.Error != "" && ev.Reload.NewPID != 0 && strings.Contains(ev.Message, "old worker keeps serving") {
				t.Errorf("the event says the old worker serves, but worker %d replaced it: %s", ev.Reload.NewPID, ev.Message)
			}
		}
	}
	if !syncErr || !reloadTried {
		t.Fatalf("sync error %v, runtime-error reload tried %v; want both", syncErr, reloadTried)
	}

	if !restore() {
		t.Fatal("the real admin socket is gone")
	}
	restored := time.Now()
	s.Eventually("a runtime-error reload goes through", 15*time.Second, func() error {
		if s.Counter("dcm_reloads_total", "reason", string(dcm.ReasonRuntimeError)) < 1 {
			return errors.New("no runtime-error reload counted yet")
		}
		return nil
	})
	s.Serves("app.test", "/", 3, func() ([]string, error) { return []string{"a", "b", "c"}, nil })
	s.Eventually("dcm knows the worker and its servers", 5*time.Second, func() error {
		got, err := observed(s)
		if err != nil {
			return err
		}
		if len(got) != 3 || slices.ContainsFunc(got, func(l string) bool { return !strings.HasSuffix(l, " w1 ready") }) {
			return fmt.Errorf("HAProxy has %v", got)
		}
		if snap := s.Engine.Snapshot(); snap.HAProxy.PID != s.WorkerPID() {
			return fmt.Errorf("snapshot says worker %d, HAProxy %d", snap.HAProxy.PID, s.WorkerPID())
		}
		return nil
	})
	t.Logf("converged %d ms after the real socket came back", time.Since(restored).Milliseconds())
}

// TestDiskFull: HAProxy's work directory is a small tmpfs that fills up.
// The change still reaches HAProxy at runtime, writing the files fails
// with a clear error, nothing half-written is left or loaded (files go to
// a temporary name and are renamed), the reload that would make the files
// equal the runtime again is retried, and once there is space dcm
// converges: the files on disk hold the change.
func TestDiskFull(t *testing.T) {
	dir := testkit.ShortDir(t) + "/work"
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a tmpfs to fill up (needs root, as CI has): %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })

	a := startPod(t, "127.0.7.1", "a")
	b := startPod(t, "127.0.7.2", "b")
	c := startPod(t, "127.0.7.3", "c")
	src := harness.NewStaticSource(desiredApp(a.endpoint(dcm.StateReady), b.endpoint(dcm.StateReady)))
	s := harness.Start(t, harness.Options{Source: src, Config: func(c *system.Config) {
		c.WorkDir, c.RetryReloadAfter = dir, 200*time.Millisecond
	}})
	if err := s.ServesExactly("app.test", "/", []string{"a", "b"}, 10); err != nil {
		t.Fatal(err)
	}
	// haproxy.cfg and the backends' files, as HAProxy reads them.
	config := func() (string, error) {
		f, err := haproxy.ReadFiles(dir)
		return string(f.Text()), err
	}
	cfgBefore, err := config()
	if err != nil {
		t.Fatal(err)
	}
	rec := s.Subscribe(t)

	// Fill the file system.
	filler, err := os.Create(dir + "/filler")
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 4096)
	for {
		if _, err := filler.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling the tmpfs: %v", err)
			}
			break
		}
	}
	_ = filler.Close()

	src.Set(desiredApp(a.endpoint(dcm.StateReady), b.endpoint(dcm.StateReady), c.endpoint(dcm.StateReady)))
	// The runtime takes the change; the disk does not.
	s.Serves("app.test", "/", 3, func() ([]string, error) { return []string{"a", "b", "c"}, nil })
	s.Eventually("a write error and a failed reload", 10*time.Second, func() error {
		var write, reload bool
		for _, ev := range rec.Events() {
			write = write || ev.Type == dcm.EventSyncError && ev.Reason == "write-failed" && strings.Contains(ev.Message, "no space left on device")
			reload = reload || ev.Type == dcm.EventReload && ev.Reload != nil && strings.Contains(ev.Reload.Error, "no space left on device")
		}
		if !write || !reload {
			return fmt.Errorf("write error reported %v, failed reload %v", write, reload)
		}
		return nil
	})
	if got, err := config(); err != nil || got != cfgBefore {
		t.Errorf("the configuration changed on a full disk (err %v):\n%s", err, got)
	}
	// No temporary file left behind, and no half-written one renamed in.
	for _, sub := range []string{".", "maps", haproxy.BackendsDir} {
		ents, err := os.ReadDir(dir + "/" + sub)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if strings.Contains(e.Name(), ".tmp") {
				t.Errorf("temporary file %s/%s left behind", sub, e.Name())
			}
		}
	}
	pid := s.WorkerPID()
	failed := s.Counter("dcm_reload_failures_total")
	s.Eventually("two more retries, both failing", 15*time.Second, func() error {
		if n := s.Counter("dcm_reload_failures_total") - failed; n < 2 {
			return fmt.Errorf("%v more failed reloads", n)
		}
		return nil
	})
	if got := s.WorkerPID(); got != pid {
		t.Errorf("worker changed from %d to %d on a full disk", pid, got)
	}
	if err := s.ServesExactly("app.test", "/", []string{"a", "b", "c"}, 9); err != nil {
		t.Errorf("on a full disk: %v", err)
	}

	if err := os.Remove(dir + "/filler"); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	s.Eventually("the files hold the change", 15*time.Second, func() error {
		got, err := config()
		if err != nil {
			return err
		}
		if !strings.Contains(got, "server c:http "+c.Addr) {
			return errors.New("the configuration has no server c:http yet")
		}
		return nil
	})
	s.Eventually("the retried reload is counted", 10*time.Second, func() error {
		if s.Counter("dcm_reloads_total", "reason", string(dcm.ReasonRuntimeError)) < 1 {
			return errors.New("no runtime-error reload yet")
		}
		return nil
	})
	t.Logf("files written %d ms after space came back", time.Since(freed).Milliseconds())
	s.Serves("app.test", "/", 3, func() ([]string, error) { return []string{"a", "b", "c"}, nil })
}
