package server

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
)

// BenchmarkFeedFanOut: 1,000 feed clients on loopback, connected to the
// real server and hub; each iteration publishes one event and waits until
// every client has read it. Reported: fan-out latency (publish → the last
// client has it) and delivery latency (publish → one client has it) as
// p50/p99/max, and the process RSS with every client connected — server
// and clients share the process, so it counts both ends of each socket.
// The default queue and a small one are compared: the hub allocates each
// subscriber's whole queue of events up front.
//
//	go test -run '^$' -bench FeedFanOut -benchtime 50x ./server/
func BenchmarkFeedFanOut(b *testing.B) {
	for _, queue := range []int{0, 64} {
		name := "queue=default"
		if queue > 0 {
			name = fmt.Sprintf("queue=%d", queue)
		}
		b.Run(name, func(b *testing.B) { benchFanOut(b, 1000, queue) })
	}
}

func benchFanOut(b *testing.B, clients, queue int) {
	raiseFileLimit(b, uint64(2*clients+256)) // both ends of every connection live here
	s := startFeedServer(b, feedConfig{queue: queue})
	debug.FreeOSMemory()
	rssIdle := rssBytes(b)

	// arrived[c][k] is when client c read the k-th event published.
	arrived := make([][]time.Time, clients)
	var readers sync.WaitGroup
	var pending atomic.Int64 // deliveries of the current event still to come
	complete := make(chan struct{}, 1)
	dials := make(chan struct{}, 64) // concurrent handshakes
	var dialErr atomic.Value
	var connected sync.WaitGroup
	for c := range clients {
		arrived[c] = make([]time.Time, 0, 64)
		connected.Add(1)
		dials <- struct{}{}
		go func() {
			ws, _, err := s.dialRaw("", dialOpts{})
			<-dials
			if err != nil {
				dialErr.Store(err)
				connected.Done()
				return
			}
			var m struct {
				Type string `json:"type"`
				Seq  uint64 `json:"seq"`
			}
			// hello, snapshot
			for range 2 {
				if err := ws.ReadJSON(&m); err != nil {
					dialErr.Store(err)
					connected.Done()
					return
				}
			}
			connected.Done()
			readers.Go(func() {
				defer ws.Close()
				for {
					if err := ws.ReadJSON(&m); err != nil {
						return
					}
					if m.Type != dcm.FeedTypeEvent {
						continue
					}
					arrived[c] = append(arrived[c], time.Now())
					if pending.Add(-1) == 0 {
						complete <- struct{}{}
					}
				}
			})
		}()
	}
	connected.Wait()
	if err, _ := dialErr.Load().(error); err != nil {
		b.Fatalf("connecting %d clients: %v", clients, err)
	}
	s.waitSubscribers(b, clients)
	debug.FreeOSMemory()
	rssConnected := rssBytes(b)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	goroutines := runtime.NumGoroutine()

	var published []time.Time
	for b.Loop() {
		pending.Store(int64(clients))
		published = append(published, time.Now())
		s.eng.hub.Publish(tick())
		select {
		case <-complete:
		case <-time.After(30 * time.Second):
			b.Fatalf("event %d: %d clients still waiting after 30s", len(published), pending.Load())
		}
	}
	b.StopTimer()
	if n := counterValue(s.dropped); n != 0 {
		b.Fatalf("%v clients were dropped", n)
	}
	var fanout, delivery []time.Duration
	for k, at := range published {
		var last time.Duration
		for c := range clients {
			d := arrived[c][k].Sub(at)
			delivery = append(delivery, d)
			last = max(last, d)
		}
		fanout = append(fanout, last)
	}
	report := func(name string, ds []time.Duration) {
		slices.Sort(ds)
		q := func(p float64) float64 { return float64(ds[int(p*float64(len(ds)-1))]) / 1e6 }
		b.ReportMetric(q(0.50), name+"-p50-ms")
		b.ReportMetric(q(0.99), name+"-p99-ms")
		b.ReportMetric(q(1), name+"-max-ms")
	}
	report("fanout", fanout)
	report("delivery", delivery)
	b.ReportMetric(float64(rssConnected)/(1<<20), "rss-MB")
	b.ReportMetric((float64(rssConnected)-float64(rssIdle))/float64(clients)/1024, "rss-KB/client")
	b.ReportMetric(float64(ms.HeapInuse+ms.StackInuse)/(1<<20), "heap+stacks-MB")
	b.ReportMetric(float64(goroutines), "goroutines")
	b.ReportMetric(float64(clients), "clients")
	s.shutdown()
	readers.Wait()
}

// raiseFileLimit lifts the soft RLIMIT_NOFILE to need (within the hard limit).
func raiseFileLimit(b *testing.B, need uint64) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		b.Fatalf("getrlimit: %v", err)
	}
	if lim.Cur >= need {
		return
	}
	if lim.Max < need {
		b.Fatalf("RLIMIT_NOFILE hard limit %d < %d file descriptors needed", lim.Max, need)
	}
	lim.Cur = need
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		b.Fatalf("setrlimit: %v", err)
	}
}

// rssBytes reads VmRSS from /proc/self/status.
func rssBytes(b *testing.B) uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Fatalf("RSS: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				b.Fatalf("VmRSS %q: %v", v, err)
			}
			return kb << 10
		}
	}
	b.Fatal(fmt.Errorf("no VmRSS in /proc/self/status: %w", sc.Err()))
	return 0
}
