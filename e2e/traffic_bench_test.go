package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dcm-router/dcm/e2e/bench"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/system"
)

// BenchmarkTrafficMetrics1000Routes times a scrape of /metrics with the
// per-route traffic series of 1,000 routes, and reports the series and
// what one read of HAProxy's show stat (in the engine's own goroutine,
// never in a scrape) costs, with the real binary.
func BenchmarkTrafficMetrics1000Routes(b *testing.B) { benchTrafficMetrics(b, 1000) }

// BenchmarkTrafficMetrics10000Routes is the same at 10,000 routes.
func BenchmarkTrafficMetrics10000Routes(b *testing.B) { benchTrafficMetrics(b, 10000) }

func benchTrafficMetrics(b *testing.B, routes int) {
	// dcm's own --traffic-interval (15s): the first pass runs when dcm is
	// ready, and scrapes are timed against what dcm ships, not against a
	// pass every second competing for the two cores.
	// One endpoint per route on loopback where nothing listens (health
	// checks are off: nothing is sent there).
	k := bench.NewKubeCluster(routes, 1, 8080, func(r, _ int) string {
		return fmt.Sprintf("127.%d.%d.1", 120+r/250, r%250)
	})
	s := harness.Start(b, harness.Options{Source: k.Source(b), ReadyWithin: 3 * time.Minute,
		Config: func(c *system.Config) { c.ObserveEvery = benchObserveEvery() }})

	// What the traffic goroutine does each interval: one show stat of
	// every backend with the worker's pid (the parse included).
	start := time.Now()
	const reads = 5
	for range reads {
		if _, err := s.Driver.ReadTraffic(context.Background(), false); err != nil {
			b.Fatal(err)
		}
	}
	read := time.Since(start) / reads
	var series int
	s.Eventually("the traffic series of every route", time.Minute, func() error {
		body, err := scrape(s.PortalURL + "/metrics")
		if err != nil {
			return err
		}
		n, per := countSeries(body)
		if per < routes {
			return fmt.Errorf("%d routes have series", per)
		}
		series = n
		return nil
	})
	b.ResetTimer()
	size := 0
	for range b.N {
		body, err := scrape(s.PortalURL + "/metrics")
		if err != nil {
			b.Fatal(err)
		}
		size = len(body)
	}
	b.StopTimer()
	b.ReportMetric(float64(series), "route-series")
	b.ReportMetric(float64(read.Microseconds())/1000, "showstat-read-ms")
	b.ReportMetric(float64(size)/1024, "scrape-KiB")
	// The whole pass of the traffic goroutine: the read, the fold into
	// the routes' totals and building the samples.
	mfs, err := s.Registry.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "dcm_traffic_read_duration_seconds" {
			h := mf.GetMetric()[0].GetHistogram()
			b.ReportMetric(h.GetSampleSum()/float64(max(1, h.GetSampleCount()))*1000, "pass-ms")
		}
	}
}

func scrape(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var sb strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		sb.WriteString(sc.Text())
		sb.WriteByte('\n')
	}
	return sb.String(), sc.Err()
}

// countSeries counts the dcm_route_* samples and the routes with a
// requests series.
func countSeries(body string) (series, routes int) {
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "dcm_route_") {
			series++
			if strings.HasPrefix(line, "dcm_route_requests_total{") {
				routes++
			}
		}
	}
	return series, routes
}
