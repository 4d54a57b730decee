package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/dcm-router/dcm/e2e/bench"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/system"
)

// BenchmarkEventToHAProxy1000Routes: one endpoint of one of 1,000 routes
// (10 endpoints each) changes; measured from the informer seeing the change
// to HAProxy acknowledging the runtime command, with the real binary.
func BenchmarkEventToHAProxy1000Routes(b *testing.B) { benchEventToHAProxy(b, 1000) }

// BenchmarkEventToHAProxy10000Routes is the same at 10,000 routes: the cost
// of one change must not grow with the cluster (issue 18's goal).
func BenchmarkEventToHAProxy10000Routes(b *testing.B) { benchEventToHAProxy(b, 10000) }

// benchEventToHAProxy runs bench.KubeCluster's measurement, which make
// bench's scale section (e2e/bench's TestScale) shares, at one size.
func benchEventToHAProxy(b *testing.B, routes int) {
	const endpoints = 10
	// Loopback (127.120–127.159 for 10,000 routes), where nothing listens:
	// HAProxy is never handed an address outside the host, and with health
	// checks off nothing is sent there.
	k := bench.NewKubeCluster(routes, endpoints, 8080, func(r, e int) string {
		return fmt.Sprintf("127.%d.%d.%d", 120+r/250, r%250, e+1)
	})
	src := k.Source(b)
	s := harness.Start(b, harness.Options{Source: src, Config: func(c *system.Config) { c.ObserveEvery = benchObserveEvery() }})
	pid := s.WorkerPID()

	b.ResetTimer()
	latencies, err := k.EventToHAProxy(context.Background(), s.Engine, src, routes, b.N)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if s.WorkerPID() != pid {
		b.Error("HAProxy reloaded during the benchmark")
	}
	slices.Sort(latencies)
	if len(latencies) == 0 {
		b.Fatal("no latency measured")
	}
	q := func(p float64) float64 {
		return float64(latencies[min(len(latencies)-1, int(p*float64(len(latencies))))].Microseconds()) / 1000
	}
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(float64(latencies[len(latencies)-1].Microseconds())/1000, "max-ms")
}

func benchObserveEvery() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("DCM_BENCH_OBSERVE")); err == nil {
		return d
	}
	return 10 * time.Second // the production default
}
