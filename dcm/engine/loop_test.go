package engine

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/haproxy"
	"github.com/dcm-router/dcm/dcm/plan"
)

// The loop tests run Engine.Run against a fake HAProxy and a fake source,
// with the real planner. Names and addresses never reach a real HAProxy.

const (
	webBE  = "be_http:demo:web"
	shopBE = "be_http:demo:shop"
	apiBE  = "be_http:demo:api"
	webA   = "web-a:http"
	webB   = "web-b:http"
)

// never is a timer period no test waits for: whatever a test sees happen
// was not brought about by that timer.
const never = time.Hour

// pooled can add routes at runtime; unpooled must reload for a new route.
var (
	pooled   = dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 2}
	unpooled = dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true}
)

// web is the desired state the loop tests start from: route web with pods
// a and b, and route shop with one pod. Options change it.
func web(change ...func(map[string][]dcm.Endpoint)) dcm.Desired {
	routes := map[string][]dcm.Endpoint{
		"web":  {testEndpoint("web-a", "127.0.0.1", dcm.StateReady), testEndpoint("web-b", "127.0.0.2", dcm.StateReady)},
		"shop": {testEndpoint("shop-a", "127.0.0.3", dcm.StateReady)},
	}
	for _, c := range change {
		c(routes)
	}
	return desiredOf(routes)
}

func weightOfA(w int) func(map[string][]dcm.Endpoint) {
	return func(r map[string][]dcm.Endpoint) { r["web"][0].Weight = w }
}

func withoutB(r map[string][]dcm.Endpoint) { r["web"] = r["web"][:1] }

func withAPI(r map[string][]dcm.Endpoint) {
	r["api"] = []dcm.Endpoint{testEndpoint("api-a", "127.0.0.4", dcm.StateReady)}
}

func withoutShop(r map[string][]dcm.Endpoint) { delete(r, "shop") }

func bDrains(r map[string][]dcm.Endpoint) { r["web"][1].State = dcm.StateDrain }

// after returns the calls recorded after index from (of h.calls()).
func after(calls []call, from int) []call {
	if from >= len(calls) {
		return nil
	}
	return calls[from:]
}

func TestRunStartsWithTheCompleteDesiredState(t *testing.T) {
	partial := web(withoutShop)
	complete := web()
	h := newHarness(t, Config{Caps: pooled, ObserveEvery: never}, partial)
	h.start(false)
	h.waitFor("the engine to check twice whether Kubernetes is listed", func() bool {
		_, synced := h.src.counts()
		return synced >= 2 || len(h.calls("start")) > 0
	})
	if n := len(h.calls("start")); n != 0 || h.e.Ready() {
		t.Fatalf("HAProxy started (%d) or ready (%v) before the initial list was complete", n, h.e.Ready())
	}
	h.src.Set(complete)
	h.src.SetSynced()
	st := h.waitCalls("start", 1)[0]
	if want := plan.Fresh(complete, pooled); !reflect.DeepEqual(st.state, want) {
		t.Errorf("started with\n%+v\nwant the complete desired state\n%+v", st.state, want)
	}
	h.waitReady()
	h.waitEvent(dcm.EventHAProxy, "the started event", func(ev dcm.Event) bool { return strings.Contains(ev.Message, "started") })
	// The first round reads HAProxy back (to restore drain) before the
	// engine says it is ready.
	calls := h.calls("start", "observe")
	if len(calls) < 2 || calls[1].kind != "observe" {
		t.Errorf("calls %v: want a full observation after start", kinds(calls))
	}
}

func kinds(calls []call) []string {
	out := make([]string, 0, len(calls))
	for _, c := range calls {
		out = append(out, c.kind)
	}
	return out
}

func TestRunErrors(t *testing.T) {
	refused := errors.New("bind: address in use")
	tests := []struct {
		name     string
		synced   bool
		startErr error
		cancel   bool
		want     error
		wantText string
	}{
		{name: "HAProxy does not start", synced: true, startErr: refused, want: refused,
			wantText: "start haproxy: bind: address in use"},
		{name: "stopped before Kubernetes is listed", cancel: true, want: context.Canceled,
			wantText: "waiting for the initial Kubernetes list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sig := newSignal()
			d := newFakeDriver(sig)
			d.startErr = tt.startErr
			src := newFakeSource(sig, web(), tt.synced)
			e := New(Config{Caps: pooled}, d, NewMetrics(prometheus.NewRegistry()), slog.New(slog.DiscardHandler))
			ctx, cancel := context.WithCancel(context.Background())
			if tt.cancel {
				cancel()
			}
			defer cancel()
			err := e.Run(ctx, src)
			if err == nil || !strings.Contains(err.Error(), tt.wantText) {
				t.Fatalf("Run = %v, want an error saying %q", err, tt.wantText)
			}
			if !errors.Is(err, tt.want) {
				t.Errorf("Run = %v, want it to wrap %v", err, tt.want)
			}
		})
	}
}

// TestRuntimeFailureFallsBackToReload: when HAProxy refuses an op, or the
// files cannot be written after one, the sync reports it and converges
// through a reload with reason runtime-error.
func TestRuntimeFailureFallsBackToReload(t *testing.T) {
	tests := []struct {
		name       string
		inject     func(d *fakeDriver)
		wantReason string
		// observeFirst: what HAProxy really did is read back before the
		// configuration is rendered.
		observeFirst bool
	}{
		{
			name: "an op refused",
			inject: func(d *fakeDriver) {
				d.applyErr = func(int, []dcm.Op) error { return errors.New("set server weight: unexpected reply") }
			},
			wantReason:   string(dcm.ReasonRuntimeError),
			observeFirst: true,
		},
		{
			name: "the files not written",
			inject: func(d *fakeDriver) {
				d.writeErr = func(n int) error {
					if n == 1 {
						return errors.New("write haproxy.cfg: no space left on device")
					}
					return nil
				}
			},
			wantReason: "write-failed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, Config{Caps: pooled, ObserveEvery: never, IdlePollEvery: never}, web())
			tt.inject(h.d)
			h.start(true)
			h.waitReady()
			from := len(h.calls())
			h.src.Set(web(weightOfA(3)))

			ev := h.waitEvent(dcm.EventSyncError, "the sync error", nil)
			if ev.Reason != tt.wantReason {
				t.Errorf("sync error reason %q, want %q: %s", ev.Reason, tt.wantReason, ev.Message)
			}
			rel := h.waitEvent(dcm.EventReload, "the reload", nil)
			if rel.Reload == nil || rel.Reload.Error != "" || !slices.Equal(rel.Reload.Reasons, []dcm.ReloadReason{dcm.ReasonRuntimeError}) {
				t.Fatalf("reload %+v, want a successful one for runtime-error", rel.Reload)
			}
			if n := counter(t, h.metrics.Reloads, string(dcm.ReasonRuntimeError)); n != 1 {
				t.Errorf("dcm_reloads_total{reason=runtime-error} = %v, want 1", n)
			}
			calls := slices.DeleteFunc(after(h.calls(), from), func(c call) bool {
				return !slices.Contains([]string{"apply", "write", "observe", "reload"}, c.kind)
			})
			failed := slices.IndexFunc(calls, func(c call) bool { return c.err != nil })
			reload := slices.IndexFunc(calls, func(c call) bool { return c.kind == "reload" })
			if failed < 0 || reload < failed {
				t.Fatalf("calls %v: want the reload after the failure", kinds(calls))
			}
			observed := slices.ContainsFunc(calls[failed:reload], func(c call) bool { return c.kind == "observe" })
			if tt.observeFirst && !observed {
				t.Errorf("calls %v: HAProxy was not read back between the failure and the reload", kinds(calls))
			}
			if s, ok := serverOf(calls[reload].state, webBE, webA); !ok || s.Weight != 3 {
				t.Errorf("the reload rendered %s/%s as %+v, want weight 3", webBE, webA, s)
			}
			h.waitFor("the engine to hold the reloaded state", func() bool {
				s, ok := serverOf(h.actual(), webBE, webA)
				return ok && s.Weight == 3 && !s.Unobserved
			})
		})
	}
}

// TestFailedReloadRetriesWithBackoff: a refused reload is retried after
// RetryReloadAfter, doubling per failure (nextRetryDelay); a successful
// one clears the backoff, so the next failure waits the first delay again.
func TestFailedReloadRetriesWithBackoff(t *testing.T) {
	const first = 20 * time.Millisecond
	h := newHarness(t, Config{Caps: unpooled, ObserveEvery: never, IdlePollEvery: never, RetryReloadAfter: first}, web())
	type pending struct {
		delay time.Duration
		at    time.Time
	}
	var retries []pending // the retry state each reload found pending; guarded by h.e.mu
	h.d.reloadErr = func(n int, _ dcm.State) error {
		h.e.mu.Lock()
		if len(h.e.retry.reasons) > 0 {
			retries = append(retries, pending{h.e.retry.delay, h.e.retry.at})
		}
		h.e.mu.Unlock()
		if n <= 3 || n == 5 {
			return haproxy.ErrReloadRejected
		}
		return nil
	}
	h.start(true)
	h.waitReady()

	h.src.Set(web(withAPI)) // a new route without a pool: a reload
	h.waitCalls("reload", 4)
	h.waitEvent(dcm.EventReload, "the successful retry", func(ev dcm.Event) bool { return ev.Reload.Error == "" })
	h.e.mu.Lock()
	cleared := len(h.e.retry.reasons) == 0 && h.e.retry.delay == 0
	h.e.mu.Unlock()
	if !cleared {
		t.Error("a successful reload left the retry pending")
	}
	h.src.Set(web(withAPI, withoutShop)) // another reload: it fails once
	calls := h.waitCalls("reload", 6)

	h.e.mu.Lock()
	got := slices.Clone(retries)
	h.e.mu.Unlock()
	want := []time.Duration{first, 2 * first, 4 * first, first}
	if len(got) != len(want) {
		t.Fatalf("%d retries, want %d: %+v", len(got), len(want), got)
	}
	for i, p := range got {
		if p.delay != want[i] {
			t.Errorf("retry %d waited %v, want %v", i+1, p.delay, want[i])
		}
	}
	// Reloads 2-4 and 6 are retries: none came before it was due.
	for i, n := range []int{1, 2, 3, 5} {
		if start := calls[n].start; start.Before(got[i].at) {
			t.Errorf("reload %d started %v before its retry was due", n+1, got[i].at.Sub(start))
		}
	}
	if n := counter(t, h.metrics.ReloadFailures, string(dcm.ReasonRouteAdded)); n != 3 {
		t.Errorf("dcm_reload_failures_total{reason=route-added} = %v, want 3", n)
	}
	for _, ev := range h.eventsOf(dcm.EventReload) {
		if len(ev.Reload.Reasons) == 0 {
			t.Errorf("reload event without reasons: %s", ev.Message)
		}
	}
}

// TestReloadDeferredWhileRetryPending: while a failed reload waits for its
// retry, a change that needs a reload is not sent on its own; the retry
// carries it.
func TestReloadDeferredWhileRetryPending(t *testing.T) {
	const first = 300 * time.Millisecond // the window in which the change must be deferred
	h := newHarness(t, Config{Caps: unpooled, ObserveEvery: never, IdlePollEvery: never, RetryReloadAfter: first}, web())
	gate := make(chan struct{})
	var due time.Time
	h.d.reloadErr = func(n int, _ dcm.State) error {
		switch n {
		case 1:
			h.d.block(gate)
			return haproxy.ErrReloadRejected
		case 2:
			h.e.mu.Lock()
			due = h.e.retry.at
			h.e.mu.Unlock()
		}
		return nil
	}
	h.start(true)
	h.waitReady()
	h.src.Set(web(withAPI))
	h.waitFor("the first reload in flight", h.d.reloadInFlight)
	// A change arriving meanwhile, that needs a reload of its own.
	h.src.Set(web(withAPI, withoutShop))
	close(gate)
	h.waitFor("the change deferred", func() bool { return h.logged("reload deferred") || h.d.entered("reload") > 1 })
	if !h.logged("reload deferred") {
		t.Fatal("a reload was sent while the retry of the failed one was pending")
	}
	calls := h.waitCalls("reload", 2)
	h.e.mu.Lock()
	at := due
	h.e.mu.Unlock()
	if calls[1].start.Before(at) {
		t.Errorf("the second reload came %v before the retry was due", at.Sub(calls[1].start))
	}
	if _, ok := calls[1].state.Backend(shopBE); ok {
		t.Error("the retry rendered a route deleted while it waited")
	}
	if _, ok := calls[1].state.Backend(apiBE); !ok {
		t.Error("the retry lost the route it was for")
	}
}

// TestNoRuntimeCommandDuringReload: the loop sends nothing to HAProxy while a
// reload is in flight, however much happens meanwhile (Kubernetes changes,
// a manual reload, observation and idle timers due), and applies what
// happened once the reload is done.
func TestNoRuntimeCommandDuringReload(t *testing.T) {
	const tick = 5 * time.Millisecond
	h := newHarness(t, Config{Caps: unpooled, ObserveEvery: tick, IdlePollEvery: tick}, web())
	gate := make(chan struct{})
	h.d.reloadErr = func(n int, _ dcm.State) error {
		if n == 1 {
			h.d.block(gate)
		}
		return nil
	}
	h.start(true)
	h.waitReady()
	h.src.Set(web(withAPI))
	h.waitFor("the reload in flight", h.d.reloadInFlight)
	h.src.Set(web(withAPI, weightOfA(5)))
	h.e.RequestReload(dcm.ReasonManual)
	// Not synchronisation: the window in which a loop that does not wait
	// for its reload would act (twenty observation periods).
	time.Sleep(20 * tick)
	close(gate)

	h.waitEvent(dcm.EventReload, "the manual reload", func(ev dcm.Event) bool {
		return slices.Contains(ev.Reload.Reasons, dcm.ReasonManual)
	})
	// The change that came meanwhile reaches HAProxy after the reload: by
	// set weight, or rendered by the manual reload, whichever the loop took
	// first.
	brings := func(c call) bool {
		s, _ := serverOf(c.state, webBE, webA)
		return c.kind == "apply" && hasOp(c.ops, dcm.OpSetWeight, webA) || c.kind == "reload" && s.Weight == 5
	}
	h.waitFor("the weight applied", func() bool { return slices.ContainsFunc(h.calls(), brings) })
	if got := h.d.overlapping(); len(got) > 0 {
		t.Errorf("called while a reload was in flight: %v", got)
	}
	reloads := h.calls("reload")
	firstDone := reloads[0].end
	if c := h.calls()[slices.IndexFunc(h.calls(), brings)]; c.start.Before(firstDone) {
		t.Errorf("the change made during the reload was sent (%s) before the reload was done", c.kind)
	}
	if reloads[1].start.Before(firstDone) {
		t.Error("the manual reload started before the first was done")
	}
}

// TestBusyDelServerKeptAndRetried: a del server HAProxy refuses (a request
// reached the server after the read-back found it idle) keeps the server
// in maint in dcm's state, with no reload; the delete is sent again once a
// read-back reports the server idle.
func TestBusyDelServerKeptAndRetried(t *testing.T) {
	ref := webBE + "/" + webB
	// Every state written: the test reads the one right after the refusal.
	h := newHarness(t, Config{Caps: pooled, ObserveEvery: never, IdlePollEvery: 5 * time.Millisecond, WriteGap: -1}, web())
	h.d.refuseDel[ref] = 1
	h.d.busyAfterRefusal = 2
	h.start(true)
	h.waitReady()
	h.src.Set(web(withoutB))

	isDel := func(c call) bool { return c.kind == "apply" && hasOp(c.ops, dcm.OpDelServer, webB) }
	dels := func() int { return len(slices.DeleteFunc(h.calls(), func(c call) bool { return !isDel(c) })) }
	reloaded := func() bool { return len(h.calls("reload")) > 0 }
	h.waitFor("the refused del server", func() bool { return dels() >= 1 })
	refused := slices.IndexFunc(h.calls(), isDel)
	var busy *haproxy.BusyError
	if err := h.calls()[refused].err; !errors.As(err, &busy) {
		t.Fatalf("the first del server returned %v, want the fake's refusal", err)
	}
	// What the engine keeps after the refusal is what it writes to disk.
	h.waitFor("the state written after the refusal", func() bool {
		return slices.ContainsFunc(after(h.calls(), refused), func(c call) bool { return c.kind == "write" }) || reloaded()
	})
	if reloaded() {
		t.Fatal("a refused del server was repaired by a reload")
	}
	kept := after(h.calls(), refused)[slices.IndexFunc(after(h.calls(), refused), func(c call) bool { return c.kind == "write" })]
	if s, ok := serverOf(kept.state, webBE, webB); !ok || s.State != dcm.StateMaint {
		t.Fatalf("after the refusal dcm's state has %s as %+v (present %v), want it kept in maint", ref, s, ok)
	}
	h.waitFor("the del server sent again", func() bool { return dels() >= 2 || reloaded() })
	if reloaded() {
		t.Fatal("a refused del server was repaired by a reload")
	}
	h.waitFor("the server gone from dcm's state", func() bool {
		_, ok := serverOf(h.actual(), webBE, webB)
		return !ok
	})
	calls := h.calls()
	retried := refused + 1 + slices.IndexFunc(calls[refused+1:], isDel)
	// Between the two deletes HAProxy was read back; the retry followed
	// the first read-back that found the server idle, not a busy one.
	var lastRead *call
	busyReads := 0
	for i := refused + 1; i < retried; i++ {
		if calls[i].kind != "observe-backends" {
			continue
		}
		lastRead = &calls[i]
		if s := findServer(calls[i].obs, webBE, webB); s.Sessions > 0 {
			busyReads++
		}
	}
	if lastRead == nil || findServer(lastRead.obs, webBE, webB).Sessions != 0 {
		t.Errorf("the del was sent again without a read-back finding %s idle", ref)
	}
	if busyReads != 2 {
		t.Errorf("%d busy read-backs before the retry, want 2 (no del while busy)", busyReads)
	}
	if n := len(h.calls("reload")); n != 0 {
		t.Errorf("%d reloads for a refused del server, want none", n)
	}
	if evs := h.eventsOf(dcm.EventSyncError); len(evs) > 0 {
		t.Errorf("sync errors for a refused del server: %v", evs[0].Message)
	}
}

func findServer(obs map[string][]dcm.Server, proxy, name string) dcm.Server {
	i := slices.IndexFunc(obs[proxy], func(s dcm.Server) bool { return s.Name == name })
	if i < 0 {
		return dcm.Server{}
	}
	return obs[proxy][i]
}

// TestChangesApplyPromptlyAndCoalesce: a lone change is applied at once (no
// debounce, no timer); a burst that arrives during a sync is taken in one
// more sync, which applies the last state of the burst.
func TestChangesApplyPromptlyAndCoalesce(t *testing.T) {
	// promptly is far below ObserveEvery and IdlePollEvery: a change
	// applied this fast did not wait for them; it is generous for a
	// loaded machine under -race, where a sync of two routes takes
	// milliseconds.
	const promptly = time.Second
	const burst = 10
	h := newHarness(t, Config{Caps: pooled, ObserveEvery: never, IdlePollEvery: never}, web())
	gate := make(chan struct{})
	h.d.applyErr = func(n int, _ []dcm.Op) error {
		if n == 2 {
			h.d.block(gate)
		}
		return nil
	}
	h.start(true)
	h.waitReady()

	set := time.Now()
	h.src.Set(web(weightOfA(2)))
	lone := h.waitCalls("apply", 1)[0]
	if d := lone.start.Sub(set); d > promptly {
		t.Errorf("a lone change waited %v before it was applied", d)
	}

	before, _ := h.src.counts()
	h.src.Set(web(weightOfA(10)))
	h.waitFor("the first apply of the burst in flight", func() bool { return h.d.entered("apply") == 2 })
	for w := 11; w < 10+burst; w++ {
		h.src.Set(web(weightOfA(w)))
	}
	close(gate)
	last := 10 + burst - 1
	h.waitFor("the last state of the burst applied", func() bool {
		s, ok := serverOf(h.actual(), webBE, webA)
		return ok && s.Weight == last
	})
	syncs, _ := h.src.counts()
	if syncs -= before; syncs >= burst || syncs != 2 {
		t.Errorf("%d syncs for a burst of %d changes during a sync, want 2", syncs, burst)
	}
	for _, c := range h.calls("apply")[2:] {
		for _, o := range c.ops {
			if o.Kind == dcm.OpSetWeight && o.Weight != last {
				t.Errorf("applied an intermediate weight %d", o.Weight)
			}
		}
	}
	if p := plan.Compute(h.actual(), web(weightOfA(last)), pooled); !p.Empty() {
		t.Errorf("not converged: %v", p.Ops)
	}
}

// TestProcessEvents: a master restarted from the files is read back and
// what a file cannot hold (drain) restored at runtime; a master that died
// is reported as not running.
func TestProcessEvents(t *testing.T) {
	tests := []struct {
		name  string
		event func(d *fakeDriver)
		want  haproxy.ProcessEventType
		check func(t *testing.T, h *harness, from int)
	}{
		{
			name:  "restarted from the files",
			event: (*fakeDriver).restart,
			want:  haproxy.ProcessRestarted,
			check: func(t *testing.T, h *harness, from int) {
				h.waitFor("drain restored", func() bool {
					return slices.ContainsFunc(after(h.calls(), from), func(c call) bool {
						return c.kind == "apply" && slices.ContainsFunc(c.ops, func(o dcm.Op) bool {
							return o.Kind == dcm.OpSetState && o.Server == webB && o.State == dcm.StateDrain
						})
					})
				})
				calls := after(h.calls(), from)
				if i := slices.IndexFunc(calls, func(c call) bool { return c.kind == "observe" }); i < 0 ||
					i > slices.IndexFunc(calls, func(c call) bool { return c.kind == "apply" }) {
					t.Errorf("calls %v: want a full read-back before the repair", kinds(calls))
				}
				if snap := h.e.Snapshot(); !snap.HAProxy.Running || snap.HAProxy.PID != 101 {
					t.Errorf("HAProxy running %v pid %d, want running with the new worker 101", snap.HAProxy.Running, snap.HAProxy.PID)
				}
			},
		},
		{
			name: "exited",
			event: func(d *fakeDriver) {
				d.events <- haproxy.ProcessEvent{Type: haproxy.ProcessExited, PID: 100, Err: errors.New("signal: killed")}
			},
			want: haproxy.ProcessExited,
			check: func(t *testing.T, h *harness, _ int) {
				if h.e.Snapshot().HAProxy.Running {
					t.Error("HAProxy reported running after its master died")
				}
			},
		},
		{
			name:  "restart failed",
			event: func(d *fakeDriver) { d.events <- haproxy.ProcessEvent{Type: haproxy.ProcessRestartFailed, PID: 100} },
			want:  haproxy.ProcessRestartFailed,
			check: func(t *testing.T, h *harness, _ int) {
				if h.e.Snapshot().HAProxy.Running {
					t.Error("HAProxy reported running after its restart failed")
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, Config{Caps: pooled, ObserveEvery: never, IdlePollEvery: never}, web(bDrains))
			h.start(true)
			h.waitReady()
			// The start restored drain, which the configuration holds as maint.
			h.waitCalls("write", 1)
			from := len(h.calls())
			tt.event(h.d)
			h.waitEvent(dcm.EventHAProxy, "the process event", func(ev dcm.Event) bool { return ev.Reason == string(tt.want) })
			tt.check(t, h, from)
			if n := len(h.calls("reload")); n != 0 {
				t.Errorf("%d reloads, want none", n)
			}
		})
	}
}

// TestObservedDrift: the periodic read-back finds HAProxy changed behind
// dcm's back; a changed server is set back at runtime, a lost backend is
// brought back by a reload with reason drift.
func TestObservedDrift(t *testing.T) {
	tests := []struct {
		name   string
		tamper func(servers map[string][]dcm.Server)
		check  func(t *testing.T, h *harness)
	}{
		{
			name:   "a server's weight changed by hand",
			tamper: func(s map[string][]dcm.Server) { s[webBE][0].Weight = 7 },
			check: func(t *testing.T, h *harness) {
				h.waitFor("the weight set back", func() bool {
					return slices.ContainsFunc(h.calls("apply"), func(c call) bool {
						return slices.ContainsFunc(c.ops, func(o dcm.Op) bool { return o.Kind == dcm.OpSetWeight && o.Server == webA && o.Weight == 1 })
					})
				})
				if n := len(h.calls("reload")); n != 0 {
					t.Errorf("%d reloads for a weight HAProxy can set, want none", n)
				}
			},
		},
		{
			name:   "a backend lost",
			tamper: func(s map[string][]dcm.Server) { delete(s, shopBE) },
			check: func(t *testing.T, h *harness) {
				ev := h.waitEvent(dcm.EventReload, "the reload", nil)
				if !slices.Equal(ev.Reload.Reasons, []dcm.ReloadReason{dcm.ReasonDrift}) || ev.Reload.Error != "" {
					t.Errorf("reload %+v, want one for drift", ev.Reload)
				}
				if n := counter(t, h.metrics.Reloads, string(dcm.ReasonDrift)); n != 1 {
					t.Errorf("dcm_reloads_total{reason=drift} = %v, want 1", n)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, Config{Caps: pooled, ObserveEvery: 10 * time.Millisecond, IdlePollEvery: never}, web())
			h.start(true)
			h.waitReady()
			h.d.tamper(tt.tamper)
			h.waitEvent(dcm.EventObserved, "the drift reported", func(ev dcm.Event) bool { return ev.Reason == DriftReason })
			tt.check(t, h)
			if m := plainCounter(t, h.metrics.PredictionMismatch); m < 1 {
				t.Errorf("dcm_prediction_mismatch_total = %v, want the drift counted", m)
			}
			if n := plainCounter(t, h.metrics.ObservationPasses); n < 1 {
				t.Errorf("dcm_observation_passes_total = %v, want the pass that saw the drift counted", n)
			}
		})
	}
}

// TestReloadRequestsCoalesce: requests for a reload that queue up while one
// is in flight (clicks on the portal's button, failed writes) are one more
// reload that carries all their reasons, not one reload each.
func TestReloadRequestsCoalesce(t *testing.T) {
	h := newHarness(t, Config{Caps: pooled, ObserveEvery: never, IdlePollEvery: never}, web())
	gates := []chan struct{}{make(chan struct{}), make(chan struct{})}
	h.d.reloadErr = func(n int, _ dcm.State) error {
		if n <= len(gates) {
			h.d.block(gates[n-1])
		}
		return nil
	}
	h.start(true)
	h.waitReady()
	h.e.Reload("test")
	h.waitFor("the first reload in flight", h.d.reloadInFlight)
	for range 5 {
		h.e.Reload("test")
	}
	h.e.RequestReload(dcm.ReasonRuntimeError)
	close(gates[0])
	h.waitFor("the second reload in flight", func() bool { return h.d.entered("reload") == 2 && h.d.reloadInFlight() })
	// The loop took what was queued before it reloaded again.
	if n := len(h.e.reloadReq); n > 0 {
		t.Errorf("%d reload requests still queued behind the second reload", n)
	}
	close(gates[1])
	ev := h.waitEvent(dcm.EventReload, "the second reload", func(ev dcm.Event) bool { return ev.Reload.NewPID == 102 })
	if want := []dcm.ReloadReason{dcm.ReasonManual, dcm.ReasonRuntimeError}; !slices.Equal(ev.Reload.Reasons, want) {
		t.Errorf("the second reload was for %v, want %v", ev.Reload.Reasons, want)
	}
	if n := counter(t, h.metrics.Reloads, string(dcm.ReasonManual)); n != 2 {
		t.Errorf("dcm_reloads_total{reason=manual} = %v, want 2", n)
	}
}

// TestUpdatesCounted: every Kubernetes change is counted by what it took:
// nothing HAProxy sees, runtime commands, or a reload.
func TestUpdatesCounted(t *testing.T) {
	tests := []struct {
		name   string
		change dcm.Desired
		want   dcm.Updates
		label  string
	}{
		{name: "a change HAProxy does not see", change: web(), want: dcm.Updates{Noop: 1}, label: "noop"},
		{name: "a weight", change: web(weightOfA(4)), want: dcm.Updates{Dynamic: 1}, label: "dynamic"},
		{name: "a new route without a spare backend", change: web(withAPI), want: dcm.Updates{Reload: 1}, label: "reload"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, Config{Caps: unpooled, ObserveEvery: never, IdlePollEvery: never}, web())
			h.start(true)
			h.waitReady()
			h.src.Set(tt.change)
			h.waitFor("the update counted", func() bool { return h.e.Snapshot().Updates != dcm.Updates{} })
			if got := h.e.Snapshot().Updates; got != tt.want {
				t.Errorf("updates %+v, want %+v", got, tt.want)
			}
			if n := counter(t, h.metrics.Updates, tt.label); n != 1 {
				t.Errorf("dcm_updates_total{result=%s} = %v, want 1", tt.label, n)
			}
		})
	}
}

// TestReloadRestoresRuntimeState: a reload renders drain as maint and sets
// it back at runtime; when that fails the state stays as the reload left it
// and the next sync sends the same commands again.
func TestReloadRestoresRuntimeState(t *testing.T) {
	drains := func(c call) bool {
		return c.kind == "apply" && slices.ContainsFunc(c.ops, func(o dcm.Op) bool {
			return o.Kind == dcm.OpSetState && o.Server == webB && o.State == dcm.StateDrain
		})
	}
	tests := []struct {
		name string
		// failRestore fails the first set state after the reload.
		failRestore bool
		// blind fails the read-back after the reload: dcm's state is
		// then what it applied, and a later round finds nothing to do.
		blind bool
	}{
		{name: "restored"},
		{name: "restored, HAProxy not read back", blind: true},
		{name: "restoring refused, then sent again", failRestore: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, Config{Caps: pooled, ObserveEvery: never, IdlePollEvery: never}, web(bDrains))
			h.start(true)
			h.waitReady()
			h.waitFor("drain set after the start", func() bool { return slices.ContainsFunc(h.calls(), drains) })
			if tt.failRestore {
				h.d.mu.Lock()
				h.d.applyErr = func(n int, _ []dcm.Op) error {
					if n == 2 {
						return errors.New("set server state: unexpected reply")
					}
					return nil
				}
				h.d.mu.Unlock()
			}
			if tt.blind {
				h.d.mu.Lock()
				h.d.observeErr = func() error { return errors.New("show servers state: timeout") }
				h.d.mu.Unlock()
			}
			from := len(h.calls())
			h.e.Reload("test")
			h.waitCalls("reload", 1)
			if tt.failRestore {
				ev := h.waitEvent(dcm.EventSyncError, "the failed restore", nil)
				if ev.Reason != string(dcm.ReasonRuntimeError) {
					t.Errorf("sync error %q, want runtime-error", ev.Reason)
				}
				h.waitEvent(dcm.EventReload, "the reload", nil)
				if s, _ := serverOf(h.actual(), webBE, webB); s.State != dcm.StateMaint {
					t.Errorf("after the failed restore dcm has %s as %s, want maint as the reload left it", webB, s.State)
				}
				h.src.Set(web(bDrains)) // any later round
			}
			h.waitFor("drain restored", func() bool {
				s, _ := serverOf(h.actual(), webBE, webB)
				return s.State == dcm.StateDrain && slices.ContainsFunc(after(h.calls(), from), func(c call) bool { return drains(c) && c.err == nil })
			})
			if tt.blind {
				before := h.e.Snapshot().Updates
				h.src.Set(web(bDrains))
				h.waitFor("the next round", func() bool { return h.e.Snapshot().Updates != before })
				if n := len(slices.DeleteFunc(after(h.calls(), from), func(c call) bool { return !drains(c) })); n != 1 {
					t.Errorf("drain sent %d times after the reload, want once", n)
				}
			}
			if n := len(h.calls("reload")); n != 1 {
				t.Errorf("%d reloads, want 1", n)
			}
		})
	}
}

// TestOverrideSyncsAtOnce: an admin's change of a server is applied without
// waiting for Kubernetes or a timer.
func TestOverrideSyncsAtOnce(t *testing.T) {
	h := newHarness(t, Config{Caps: pooled, ObserveEvery: never, IdlePollEvery: never}, web())
	h.start(true)
	h.waitReady()
	if err := h.e.SetServerState("admin", webBE, webA, dcm.StateDrain); err != nil {
		t.Fatal(err)
	}
	apply := h.waitCalls("apply", 1)[0]
	if !slices.ContainsFunc(apply.ops, func(o dcm.Op) bool { return o.Kind == dcm.OpSetState && o.Server == webA && o.State == dcm.StateDrain }) {
		t.Errorf("applied %v, want %s drained", apply.ops, webA)
	}
}
