package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// farmPort is the port of every pod of the scale section.
const farmPort = 18090

// PodFarmEnv, set to a number of listeners, makes TestPodFarmProcess the
// scale section's pods (ServePodFarm); unset, it skips.
const PodFarmEnv = "DCM_BENCH_POD_FARM"

// podFarm is the scale section's pods: a few real HTTP servers on loopback
// addresses of their own, which the endpoints of every route share (HAProxy's
// servers of many routes point at the same listeners), so that 100,000
// endpoints need no 100,000 sockets. Each answers "<host> <its address>" and
// records when a request for a host first reached it.
//
// They run in a process of their own (the test binary again, running
// TestPodFarmProcess), as pods do: dcm's memory is the bench process's,
// and the connections HAProxy keeps to the pods (a goroutine and 8 KB of
// buffers each, 5,000 of them at 10,000 routes: 39 MB of stacks, 37 MB of
// heap) are no part of it. The bench asks the farm over a control address
// when a host was first requested and how many connections each listener
// accepted.
type podFarm struct {
	tb      testing.TB
	port    int32
	addrs   []string
	control string
	client  *http.Client
}

// farmHello is the line the farm process prints once it listens.
type farmHello struct {
	Control string   `json:"control"`
	Addrs   []string `json:"addrs"`
	Err     string   `json:"err,omitempty"`
}

const farmHelloPrefix = "podfarm "

// startPodFarm starts the farm process with n listeners; it stops when
// the test ends (its standard input closes).
func startPodFarm(tb testing.TB, n int) *podFarm {
	cmd := exec.Command(os.Args[0], "-test.run=^TestPodFarmProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), PodFarmEnv+"="+strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("pod farm: %v", err)
	}
	tb.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	out := bufio.NewScanner(stdout)
	var hello farmHello
	for out.Scan() {
		if line, ok := strings.CutPrefix(out.Text(), farmHelloPrefix); ok {
			if err := json.Unmarshal([]byte(line), &hello); err != nil {
				tb.Fatalf("pod farm: %q: %v", line, err)
			}
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }() // the test's own output, to its end
	switch {
	case hello.Err != "":
		tb.Fatalf("pod farm: %s", hello.Err)
	case hello.Control == "":
		tb.Fatalf("pod farm: exited before it listened (%v)", out.Err())
	}
	return &podFarm{tb: tb, port: farmPort, addrs: hello.Addrs, control: "http://" + hello.Control,
		client: &http.Client{Timeout: 10 * time.Second}}
}

// ask sends a control request; "" and false when the farm did not answer
// with 200.
func (f *podFarm) ask(method, path string) (string, bool) {
	req, err := http.NewRequest(method, f.control+path, nil)
	if err != nil {
		f.tb.Errorf("pod farm: %v", err)
		return "", false
	}
	resp, err := f.client.Do(req)
	if err != nil {
		f.tb.Errorf("pod farm: %v", err)
		return "", false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		f.tb.Errorf("pod farm: %v", err)
	}
	return string(b), resp.StatusCode == http.StatusOK
}

// reset forgets the first requests, for a new cluster.
func (f *podFarm) reset() { f.ask(http.MethodPost, "/reset") }

// firstRequest is when a request for host first reached a pod.
func (f *podFarm) firstRequest(host string) (time.Time, bool) {
	body, ok := f.ask(http.MethodGet, "/first?host="+url.QueryEscape(host))
	if !ok {
		return time.Time{}, false
	}
	ns, err := strconv.ParseInt(body, 10, 64)
	if err != nil {
		f.tb.Errorf("pod farm: first request of %s: %q", host, body)
		return time.Time{}, false
	}
	return time.Unix(0, ns), true
}

// conns counts the connections each listener accepted so far.
func (f *podFarm) conns() []int {
	body, _ := f.ask(http.MethodGet, "/conns")
	var out []int
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		f.tb.Errorf("pod farm: connections: %q: %v", body, err)
	}
	return out
}

// farm is the pods' side: the listeners and what they record.
type farm struct {
	mu    sync.Mutex
	first map[string]time.Time // host → its first request
	conns []atomic.Int64       // connections accepted, by listener
}

// ServePodFarm is the farm process: it listens on n addresses of
// 127.230.0.0/16 (far from the 127.0.x.y, 127.120–159 and 127.200+ other
// tests and benchmarks use; an address someone else holds is skipped) and
// on a control address, says both on out (a farmHello line), and serves
// until in ends.
func ServePodFarm(n int, in io.Reader, out io.Writer) error {
	f := &farm{first: map[string]time.Time{}, conns: make([]atomic.Int64, n)}
	var srvs []*http.Server
	defer func() {
		for _, s := range srvs {
			_ = s.Close()
		}
	}()
	var addrs []string
	for i := 0; len(addrs) < n && i < 4*n; i++ {
		addr := fmt.Sprintf("127.230.%d.%d", i/250, i%250+1)
		ln, err := net.Listen("tcp", net.JoinHostPort(addr, strconv.Itoa(farmPort)))
		if err != nil {
			continue
		}
		conns := &f.conns[len(addrs)]
		srv := &http.Server{Handler: http.HandlerFunc(f.serve), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 30 * time.Second,
			ConnState: func(_ net.Conn, st http.ConnState) {
				if st == http.StateNew {
					conns.Add(1)
				}
			}}
		go func() { _ = srv.Serve(ln) }() // ErrServerClosed once closed
		addrs = append(addrs, addr)
		srvs = append(srvs, srv)
	}
	hello := farmHello{Addrs: addrs}
	if len(addrs) < n {
		hello.Err = fmt.Sprintf("%d of %d loopback addresses could be bound on port %d", len(addrs), n, farmPort)
	}
	var ln net.Listener
	if hello.Err == "" {
		var err error
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			hello.Err = err.Error()
		} else {
			hello.Control = ln.Addr().String()
			ctl := &http.Server{Handler: f.controlHandler(), ReadHeaderTimeout: 10 * time.Second}
			srvs = append(srvs, ctl)
			go func() { _ = ctl.Serve(ln) }()
		}
	}
	line, _ := json.Marshal(hello)
	if _, err := fmt.Fprintf(out, "%s%s\n", farmHelloPrefix, line); err != nil {
		return err
	}
	if hello.Err != "" {
		return fmt.Errorf("pod farm: %s", hello.Err)
	}
	_, err := io.Copy(io.Discard, in)
	return err
}

func (f *farm) serve(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	f.mu.Lock()
	if _, ok := f.first[r.Host]; !ok {
		f.first[r.Host] = now
	}
	f.mu.Unlock()
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	ip := ""
	if local != nil {
		ip, _, _ = net.SplitHostPort(local.String())
	}
	_, _ = io.WriteString(w, r.Host+" "+ip+"\n")
}

func (f *farm) controlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /reset", func(http.ResponseWriter, *http.Request) {
		f.mu.Lock()
		f.first = map[string]time.Time{}
		f.mu.Unlock()
	})
	mux.HandleFunc("GET /first", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		t, ok := f.first[r.URL.Query().Get("host")]
		f.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, strconv.FormatInt(t.UnixNano(), 10))
	})
	mux.HandleFunc("GET /conns", func(w http.ResponseWriter, _ *http.Request) {
		counts := make([]int64, len(f.conns))
		for i := range f.conns {
			counts[i] = f.conns[i].Load()
		}
		_ = json.NewEncoder(w).Encode(counts)
	})
	return mux
}
