package bench

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func processCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// byLabel sums a counter's or a histogram's sample count per value of one label.
func byLabel(reg prometheus.Gatherer, name, label string) (map[string]float64, error) {
	mfs, err := reg.Gather()
	if err != nil {
		return nil, fmt.Errorf("gather: %w", err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			key := ""
			for _, lp := range m.GetLabel() {
				if lp.GetName() == label {
					key = lp.GetValue()
				}
			}
			switch {
			case m.GetCounter() != nil:
				out[key] += m.GetCounter().GetValue()
			case m.GetHistogram() != nil:
				out[key] += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out, nil
}

func delta(after, before map[string]float64) map[string]int {
	out := map[string]int{}
	for k, v := range after {
		if d := int(v - before[k]); d > 0 {
			out[k] = d
		}
	}
	return out
}

// counters are what RunMode reads just before and just after the churn,
// to count what happened in between.
type counters struct {
	reloads  map[string]float64 // dcm_reloads_total by reason
	reloaded map[string]float64 // dcm_reload_duration_seconds samples
	commands map[string]float64 // dcm_runtime_command_duration_seconds samples by command
	haproxy  haproxySample
}

func readCounters(t *testing.T, reg *prometheus.Registry, master int) counters {
	var c counters
	var err error
	if c.reloads, err = byLabel(reg, "dcm_reloads_total", "reason"); err != nil {
		t.Fatal(err)
	}
	if c.reloaded, err = byLabel(reg, "dcm_reload_duration_seconds", ""); err != nil {
		t.Fatal(err)
	}
	if c.commands, err = byLabel(reg, "dcm_runtime_command_duration_seconds", "command"); err != nil {
		t.Fatal(err)
	}
	if c.haproxy, err = sampleHAProxy(master); err != nil {
		t.Fatal(err)
	}
	return c
}

// countChurn fills in the reloads, the runtime commands and HAProxy's CPU
// of the churn from the counters around it.
func (r *Result) countChurn(before, after counters) {
	r.HAProxyCPU = float64(after.haproxy.cpuTicks-before.haproxy.cpuTicks) / clockTick
	r.ReloadsDone = int(after.reloaded[""] - before.reloaded[""])
	r.Reloads = delta(after.reloads, before.reloads)
	r.ByVerb = delta(after.commands, before.commands)
	for verb, n := range r.ByVerb {
		r.Commands += n
		if len(verb) < 4 || verb[:4] != "show" {
			r.Changes += n
		}
	}
}

// sampleFrom samples HAProxy's memory and old workers every so often,
// offsets counted from start, until the function it returns is called;
// that returns the samples.
func sampleFrom(ctx context.Context, master int, every time.Duration, start time.Time) (stop func() []Sample) {
	sampleCtx, stopSampling := context.WithCancel(ctx)
	var sampleWG sync.WaitGroup
	var samples []Sample
	sampleWG.Go(func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			if hs, err := sampleHAProxy(master); err == nil {
				samples = append(samples, Sample{At: time.Since(start), PSSMB: float64(hs.pssKB) / 1024, OldWorkers: hs.oldWorkers})
			}
			select {
			case <-sampleCtx.Done():
				return
			case <-tick.C:
			}
		}
	})
	return func() []Sample {
		stopSampling()
		sampleWG.Wait()
		return samples
	}
}
