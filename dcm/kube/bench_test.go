package kube

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
)

// BenchmarkSliceSync10k measures the Source's part of a full resync at
// issue 18's scale: 10,000 Ingresses, Services and slices of 10 endpoints in
// the caches, and each op one slice changed (its first endpoint's readiness
// flipped, as the scale bench's resync does) and its Service key synced.
// The services are taken in turn, as the resync writes them; the engine's
// Desired snapshot is taken every 100 syncs, about as often as it batches.
func BenchmarkSliceSync10k(b *testing.B) {
	s, cl := newTestSource(b, Options{}, nil)
	const n = 10000
	names := make([]string, n)
	versions := make([][2]*discoveryv1.EndpointSlice, n)
	for i := range n {
		name := fmt.Sprintf("app-%05d", i)
		names[i] = name
		_ = cl.ing.Add(testIngress(name, name+".example.com", time.Now(), httpPath("/", prefix, svcBackend(name, "http"))))
		_ = cl.svc.Add(testService(name))
		for v := range 2 {
			var eps []epSpec
			for j := range 10 {
				e := ready(fmt.Sprintf("%s-7d9f8c6b5-%05d", name, j), fmt.Sprintf("10.%d.%d.%d", i/256, i%256, j+1))
				if j == 0 && v == 1 {
					e.ready = ptr(false)
				}
				eps = append(eps, e)
			}
			versions[i][v] = testSlice(name, name+"-abcde", eps...)
		}
		_ = cl.eps.Add(versions[i][0])
	}
	if err := s.initial(); err != nil {
		b.Fatal(err)
	}
	if d, _ := s.Desired(); len(d.Backends) != n {
		b.Fatalf("%d backends", len(d.Backends))
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU(b)
	ops := 0
	for i := 0; b.Loop(); i++ {
		ops++
		svc := i % n
		_ = cl.eps.Update(versions[svc][(i/n+1)%2])
		if err := s.sync("service/demo/"+names[svc], time.Now()); err != nil {
			b.Fatal(err)
		}
		if i%100 == 99 {
			if d, _ := s.Desired(); len(d.Backends) != n {
				b.Fatal("lost backends")
			}
		}
	}
	// CPU time rather than wall time: on a shared machine the load
	// inflates the one far more than the other.
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(ops), "cpu-ns/op")
}

// processCPU is the user and system time this process has used.
func processCPU(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
