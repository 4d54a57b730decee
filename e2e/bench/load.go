package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"
)

// targets is the set of routes the load generator may pick: routes that
// serve (added once their first pod answered), minus routes being deleted,
// which move to gone so a late answer for them can be told apart.
type targets struct {
	mu   sync.Mutex
	live []string
	idx  map[string]int
	gone map[string]bool
}

func newTargets(names []string) *targets {
	t := &targets{idx: map[string]int{}, gone: map[string]bool{}}
	for _, n := range names {
		t.add(n)
	}
	return t
}

func (t *targets) add(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.idx[name] = len(t.live)
	t.live = append(t.live, name)
}

// retire takes a route out of the load before it is deleted.
func (t *targets) retire(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i, ok := t.idx[name]
	if !ok {
		return
	}
	last := t.live[len(t.live)-1]
	t.live[i], t.idx[last] = last, i
	t.live = t.live[:len(t.live)-1]
	delete(t.idx, name)
	t.gone[name] = true
}

func (t *targets) pick(rng *rand.Rand) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.live[rng.IntN(len(t.live))]
}

func (t *targets) isGone(name string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.gone[name]
}

// loadStats counts what the load generator and the long-lived connections saw.
type loadStats struct {
	mu            sync.Mutex
	ok            int
	expected503   int // 503/404 for a route being deleted: what a client of a deleted route gets
	failed        int // any other non-2xx, or a connection error
	failReasons   map[string]int
	streamsDone   int // long-lived connections that lasted their whole life
	streamsCut    int // long-lived connections that ended early
	streamReasons map[string]int
}

func newLoadStats() *loadStats {
	return &loadStats{failReasons: map[string]int{}, streamReasons: map[string]int{}}
}

// reason shortens an error or status into a countable phrase.
func reason(code int, err error) string {
	if err != nil {
		s := err.Error()
		for _, k := range []string{"connection reset", "connection refused", "EOF", "timeout", "broken pipe", "deadline"} {
			if strings.Contains(s, k) {
				return k
			}
		}
		return s
	}
	return fmt.Sprintf("HTTP %d", code)
}

// runLoad sends rate requests per second to random live routes through
// HAProxy until ctx ends, on keep-alive connections as a browser or API
// client would.
func runLoad(ctx context.Context, addr string, rate int, tg *targets, st *loadStats, seed uint64) {
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 128}}
	defer client.CloseIdleConnections()
	rng := rand.New(rand.NewPCG(seed, 1))
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		name := tg.pick(rng)
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _, err := get(context.Background(), client, addr, host(name), "/")
			st.mu.Lock()
			defer st.mu.Unlock()
			switch {
			case err == nil && code/100 == 2:
				st.ok++
			case err == nil && (code == http.StatusServiceUnavailable || code == http.StatusNotFound) && tg.isGone(name):
				st.expected503++
			default:
				st.failed++
				st.failReasons[reason(code, err)]++
			}
		}()
	}
}

// get sends one request through HAProxy and returns the body's first line.
func get(ctx context.Context, client *http.Client, addr, host, path string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return 0, "", fmt.Errorf("request: %w", err)
	}
	req.Host = host
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("GET %s%s: %w", host, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, "", fmt.Errorf("GET %s%s body: %w", host, path, err)
	}
	return resp.StatusCode, strings.TrimSpace(string(b)), nil
}

// runStreams keeps n long-lived connections open through HAProxy to the
// stable routes — websocket-like users, each staying between minLife and
// maxLife and coming back at once — until ctx ends. One that ends before
// its life is over (HAProxy or the pod cut it) is counted as cut.
func runStreams(ctx context.Context, addr string, n int, stable []string, minLife, maxLife time.Duration, st *loadStats, seed uint64) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			for ctx.Err() == nil {
				life := minLife + time.Duration(rng.Int64N(int64(maxLife-minLife)+1))
				name := stable[i%len(stable)]
				err := stream(ctx, client, addr, host(name), life)
				if ctx.Err() != nil {
					return
				}
				st.mu.Lock()
				if err == nil {
					st.streamsDone++
				} else {
					st.streamsCut++
					st.streamReasons[reason(0, err)]++
				}
				st.mu.Unlock()
				if err != nil {
					time.Sleep(100 * time.Millisecond) // no hot loop if HAProxy refuses
				}
			}
		}()
	}
	wg.Wait()
}

var errCut = errors.New("stream ended before its end line")

func stream(ctx context.Context, client *http.Client, addr, host string, life time.Duration) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s/stream?s=%.1f", addr, life.Seconds()), nil)
	if err != nil {
		return fmt.Errorf("stream request: %w", err)
	}
	req.Host = host
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("stream: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("stream: HTTP %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if sc.Text() == "end" {
			return nil
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("stream: %w", err)
	}
	return errCut
}

// probe measures event → serving for the pods an event started: from the
// API write (written) until a request through HAProxy first reaches each
// pod, which the pod itself records. Meanwhile it sends requests for the
// route from three loops, so that round robin reaches a new server soon
// after HAProxy has it. Every probe request opens a new
// connection, as a new client would, so it reaches the worker that serves
// new connections (an old worker's keep-alive connection would still see the
// old configuration). A pod not reached within limit has no latency and
// counts in missed.
func probe(addr, host string, pods []*pod, written time.Time, limit time.Duration) (lat []time.Duration, missed int) {
	reached := func() bool {
		for _, p := range pods {
			if p.first.Load() == 0 {
				return false
			}
		}
		return true
	}
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			client := newProbeClient()
			for !reached() && time.Since(written) < limit {
				_, _, _ = get(context.Background(), client, addr, host, "/") // any answer: the pods say when they got one
				// 1 ms at first, backing off to 10 ms: the resolution stays
				// within ~5% of the latency, and the probes of a mode that
				// takes seconds do not steal the cores its reloads need.
				time.Sleep(min(time.Millisecond+time.Since(written)/20, 10*time.Millisecond))
			}
		})
	}
	wg.Wait()
	for _, p := range pods {
		if first := p.first.Load(); first != 0 {
			lat = append(lat, time.Unix(0, first).Sub(written))
		} else {
			missed++
		}
	}
	return lat, missed
}

// newProbeClient opens a connection per request.
func newProbeClient() *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
}
