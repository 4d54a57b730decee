//go:build soak

package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/haproxy"
	"github.com/dcm-router/dcm/e2e/kapitest"
	"github.com/dcm-router/dcm/e2e/podnet"
	"github.com/dcm-router/dcm/internal/testkit"
)

// soakNS is the namespace the soak's apps live in (the control plane is its own).
const soakNS = "soak"

// soakEventHistory is dcm's --event-history in the soak: a ring the churn
// fills within its first tenth.
const soakEventHistory = 200

// TestSoak is make soak: the dcm binary against the real control plane
// (e2e/kapi) and the test kubelet, for SOAK_DURATION (default 10m) of
// continuous churn — Deployments scaled out and in, pods deleted and
// replaced, Ingresses (with their Services and Deployments) added and
// deleted — under constant load through HAProxy. It fails on any failed
// request, on dcm's goroutines, RSS or open files growing from the start of
// the churn to its end, on HAProxy processes left over (old workers after
// the churn settled, any process after dcm exited), and on HAProxy's servers
// differing from the EndpointSlices at the end. It writes docs/soak.md.
// Built only with -tags soak, so go test ./... leaves it out.
func TestSoak(t *testing.T) {
	cfg := soakConfig(t)
	began := time.Now()
	ctx := context.Background()
	load0 := loadAvg()

	bin, err := kapitest.Binary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := kapitest.Start(ctx, bin, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	admin := cp.Client(t)
	pods, err := podnet.Setup()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := pods.Close(); err != nil {
			t.Error(err)
		}
	})
	t.Cleanup(pods.CloseOnSignal())
	t.Logf("pods in %s", pods)
	kctx, stopKubelet := context.WithCancel(ctx)
	kubelet, err := kapitest.StartKubelet(kctx, admin, kapitest.KubeletOptions{Pods: pods},
		slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})).With("part", "kubelet"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopKubelet(); kubelet.Wait() })
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: soakNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	script := MakeScript(cfg.Workload)
	apps := &soakApps{client: admin, replicas: map[string]int{}}
	for _, name := range script.Order {
		if err := apps.create(ctx, name, script.Initial[name]); err != nil {
			t.Fatal(err)
		}
	}

	d := startDCMBinary(t, cp.Kubeconfig)
	for _, name := range script.Order {
		if err := waitServed(d.httpAddr, name, 2*time.Minute); err != nil {
			t.Fatalf("initial route %s: %v", name, err)
		}
	}
	tg := newTargets(script.Order)
	stats := newLoadStats()
	loadCtx, stopLoad := context.WithCancel(ctx)
	var loadWG sync.WaitGroup
	loadWG.Go(func() { runLoad(loadCtx, d.httpAddr, cfg.LoadRate, tg, stats, cfg.Seed) })
	defer func() { stopLoad(); loadWG.Wait() }()

	rep := SoakReport{Config: cfg, Date: began, LoadBefore: load0, Command: os.Getenv("DCM_SOAK_CMD")}
	if rep.Command == "" {
		rep.Command = "go test -tags soak -run TestSoak ./e2e/bench/"
	}
	first, err := d.sample(0)
	if err != nil {
		t.Fatal(err)
	}
	rep.Samples = append(rep.Samples, first)
	start := time.Now()
	sampleCtx, stopSampling := context.WithCancel(ctx)
	var sampleWG sync.WaitGroup
	var sampleMu sync.Mutex
	sampleWG.Go(func() {
		tick := time.NewTicker(cfg.SampleEvery)
		defer tick.Stop()
		for {
			select {
			case <-sampleCtx.Done():
				return
			case <-tick.C:
			}
			if s, err := d.sample(time.Since(start)); err == nil {
				sampleMu.Lock()
				rep.Samples = append(rep.Samples, s)
				sampleMu.Unlock()
			} else {
				t.Logf("sample: %v", err)
			}
		}
	})

	rng := rand.New(rand.NewPCG(cfg.Seed, 2))
	var after sync.WaitGroup
	rep.Events = map[EventKind]int{}
	for _, ev := range script.Events {
		time.Sleep(time.Until(start.Add(ev.At)))
		rep.Events[ev.Kind]++
		var err error
		switch ev.Kind {
		case ScaleOut:
			err = apps.scale(ctx, ev.Route, apps.get(ev.Route)+ev.N)
		case ScaleIn:
			err = apps.scale(ctx, ev.Route, apps.get(ev.Route)-ev.N)
		case Replace:
			err = apps.deletePod(ctx, ev.Route, rng)
		case RouteAdd:
			err = apps.create(ctx, ev.Route, ev.N)
			route := ev.Route
			// A new route joins the load once it answers, as a user finds it
			// once DNS points at it.
			after.Go(func() {
				if err := waitServed(d.httpAddr, route, time.Minute); err != nil {
					t.Errorf("added route %s: %v", route, err)
					return
				}
				tg.add(route)
			})
		case RouteDelete:
			tg.retire(ev.Route)
			route := ev.Route
			after.Go(func() {
				time.Sleep(200 * time.Millisecond) // requests already picked finish first
				if err := apps.delete(ctx, route); err != nil {
					t.Errorf("delete route %s: %v", route, err)
				}
			})
		}
		if err != nil {
			t.Errorf("%s %s: %v", ev.Kind, ev.Route, err)
		}
	}
	after.Wait()
	rep.Churn = time.Since(start)
	// Terminations (preStop, graceful stop) and the last syncs settle.
	time.Sleep(cfg.Settle)
	stopSampling()
	sampleWG.Wait()
	end, err := d.sample(time.Since(start))
	if err != nil {
		t.Fatal(err)
	}
	rep.Samples = append(rep.Samples, end)
	stopLoad()
	loadWG.Wait()
	stats.mu.Lock()
	rep.OK, rep.Expected, rep.Failed, rep.FailReasons = stats.ok, stats.expected503, stats.failed, stats.failReasons
	stats.mu.Unlock()

	rep.Mismatch = d.compareSlices(t, admin)
	rep.Updates, rep.Reloads, rep.Commands = d.counters(t)
	rep.Seq = d.seq
	rep.LeftAfterExit = d.stop(t)
	rep.Elapsed = time.Since(began)
	rep.LoadAfter = loadAvg()
	rep.check(t)
	dir := "../../docs"
	if o := os.Getenv("DCM_SOAK_OUT"); o != "" {
		dir = o
	}
	if err := rep.Write(filepath.Join(dir, "soak.md")); err != nil {
		t.Fatal(err)
	}
	t.Log(rep.Summary())
}

// SoakConfig sizes the soak.
type SoakConfig struct {
	Workload
	LoadRate    int
	SampleEvery time.Duration
	Settle      time.Duration
}

func soakConfig(t *testing.T) SoakConfig {
	dur := 10 * time.Minute
	if s := os.Getenv("SOAK_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 10*time.Second {
			t.Fatalf("SOAK_DURATION=%q: want a duration of 10s or more", s)
		}
		dur = d
	}
	return SoakConfig{
		// Small routes, one event a second: the point is time and variety,
		// not size (the 2-core machine also runs the control plane, the
		// kubelet's pods and the load). Two pods at least: a replaced single
		// pod leaves its route without a ready endpoint until the new one
		// is ready, and dcm drains a terminating endpoint (kube-proxy falls
		// back to serving-terminating endpoints when none is ready), so that
		// route answers 503 meanwhile; docs/soak.md says so.
		Workload: Workload{Seed: 7, Routes: 8, MinEndpoints: 2, MaxEndpoints: 5, Stable: 2, Rate: 1, Duration: dur},
		LoadRate: 50, SampleEvery: 10 * time.Second, Settle: 10 * time.Second,
	}
}

// soakApps are the Deployments, Services and Ingresses of the churn.
type soakApps struct {
	client   kubernetes.Interface
	mu       sync.Mutex
	replicas map[string]int
}

func (a *soakApps) get(name string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.replicas[name]
}

func (a *soakApps) create(ctx context.Context, name string, replicas int) error {
	labels := map[string]string{"app": name}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: soakNS, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(replicas)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "local/pod",
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}},
			},
		},
	}
	if _, err := a.client.AppsV1().Deployments(soakNS).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create deployment %s: %w", name, err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: soakNS, Name: name}, Spec: corev1.ServiceSpec{Selector: labels,
		Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}}}
	if _, err := a.client.CoreV1().Services(soakNS).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create service %s: %w", name, err)
	}
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: soakNS, Name: name},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: host(name),
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
				Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix),
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
					Name: name, Port: networkingv1.ServiceBackendPort{Name: "http"}}},
			}}}}}}}}
	if _, err := a.client.NetworkingV1().Ingresses(soakNS).Create(ctx, ing, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create ingress %s: %w", name, err)
	}
	a.mu.Lock()
	a.replicas[name] = replicas
	a.mu.Unlock()
	return nil
}

func (a *soakApps) scale(ctx context.Context, name string, replicas int) error {
	s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Namespace: soakNS, Name: name}, Spec: autoscalingv1.ScaleSpec{Replicas: int32(replicas)}}
	if _, err := a.client.AppsV1().Deployments(soakNS).UpdateScale(ctx, name, s, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("scale %s to %d: %w", name, replicas, err)
	}
	a.mu.Lock()
	a.replicas[name] = replicas
	a.mu.Unlock()
	return nil
}

// deletePod deletes one of the route's pods that is not terminating yet;
// its ReplicaSet replaces it.
func (a *soakApps) deletePod(ctx context.Context, name string, rng *rand.Rand) error {
	pods, err := a.client.CoreV1().Pods(soakNS).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		return fmt.Errorf("list pods of %s: %w", name, err)
	}
	live := slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil })
	if len(live) == 0 {
		return nil // all being replaced already
	}
	victim := live[rng.IntN(len(live))].Name
	if err := a.client.CoreV1().Pods(soakNS).Delete(ctx, victim, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete pod %s: %w", victim, err)
	}
	return nil
}

// delete removes the route: the Ingress first (no new requests), then the
// pods (scale to zero: there is no garbage collector in the test control
// plane to delete a ReplicaSet's pods), then the Service and Deployment.
func (a *soakApps) delete(ctx context.Context, name string) error {
	if err := a.client.NetworkingV1().Ingresses(soakNS).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete ingress %s: %w", name, err)
	}
	if err := a.scale(ctx, name, 0); err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		pods, err := a.client.CoreV1().Pods(soakNS).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err == nil && len(pods.Items) == 0 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := a.client.CoreV1().Services(soakNS).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete service %s: %w", name, err)
	}
	if err := a.client.AppsV1().Deployments(soakNS).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete deployment %s: %w", name, err)
	}
	a.mu.Lock()
	delete(a.replicas, name)
	a.mu.Unlock()
	return nil
}

// waitServed waits until a route answers 200 through HAProxy.
func waitServed(addr, route string, limit time.Duration) error {
	client := newProbeClient()
	deadline := time.Now().Add(limit)
	var last string
	for time.Now().Before(deadline) {
		code, body, err := get(context.Background(), client, addr, host(route), "/")
		if err == nil && code == http.StatusOK {
			return nil
		}
		last = fmt.Sprintf("%d %s %v", code, body, err)
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("not served within %s (last: %s)", limit, last)
}

// dcmProcess is the dcm binary under soak.
type dcmProcess struct {
	cmd      *exec.Cmd
	exited   chan error
	dir      string
	httpAddr string
	portal   string
	token    string
	metrics  *http.Client
	// reloadReasons is dcm_reloads_total by reason at the last scrape;
	// seq is the hub's last event number at the last snapshot read.
	reloadReasons map[string]int
	seq           uint64
}

// startDCMBinary builds dcm and runs it as a user would against a cluster:
// --kubeconfig, one namespace, HAProxy on free ports.
func startDCMBinary(t *testing.T, kubeconfig string) *dcmProcess {
	t.Helper()
	testkit.HAProxy(t)
	bin := filepath.Join(t.TempDir(), "dcm")
	build := exec.Command("go", "build", "-o", bin, "../..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	d := &dcmProcess{dir: testkit.ShortDir(t), httpAddr: testkit.FreeAddr(t), portal: testkit.FreeAddr(t),
		token: "soak-" + strconv.FormatInt(time.Now().UnixNano(), 36), exited: make(chan error, 1),
		metrics: &http.Client{Timeout: 10 * time.Second}}
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(d.token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d.cmd = exec.Command(bin, "--kubeconfig", kubeconfig, "--namespace", soakNS, "--work-dir", d.dir,
		"--listen", d.portal, "--http-bind", d.httpAddr, "--https-bind", testkit.FreeAddr(t),
		"--auth-token-file", tokenFile, "--log-level", "warn",
		// A ring the churn fills within its first tenth: growth after the
		// warm sample is then a leak, not the event history filling up
		// (10,000 by default, a quarter full after ten minutes).
		"--event-history", strconv.Itoa(soakEventHistory))
	d.cmd.Stdout = testkit.Writer{TB: t}
	d.cmd.Stderr = testkit.Writer{TB: t}
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.exited <- d.cmd.Wait() }()
	t.Cleanup(func() { d.stop(t) })
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := d.metrics.Get("http://" + d.portal + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return d
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("dcm not healthy within a minute: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop sends SIGTERM, waits, and returns the HAProxy processes of dcm's
// work directory still alive a moment after dcm exited (there should be none).
func (d *dcmProcess) stop(t *testing.T) []string {
	if d.cmd.ProcessState != nil || d.cmd.Process == nil {
		return nil
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.exited:
		if err != nil {
			t.Errorf("dcm exited with %v after SIGTERM", err)
		}
	case <-time.After(20 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.exited
		t.Error("dcm did not exit within 20s of SIGTERM")
	}
	var left []string
	for range 20 { // a worker finishing its last connection is given two seconds
		left = haproxyOf(d.dir)
		if len(left) == 0 {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return left
}

// haproxyOf lists the HAProxy processes whose command line names dir (the
// work directory holds their config), as "pid ppid".
func haproxyOf(dir string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if !strings.HasSuffix(filepath.Base(args[0]), "haproxy") || !strings.Contains(string(cmdline), dir) {
			continue
		}
		st, err := readStat(pid)
		if err != nil {
			continue
		}
		out = append(out, fmt.Sprintf("%d %d", pid, st.ppid))
	}
	sort.Strings(out)
	return out
}

// SoakSample is dcm and its HAProxy at one moment.
type SoakSample struct {
	At         time.Duration
	Goroutines int
	RSSMB      float64
	HeapMB     float64 // Go heap in use
	FDs        int
	HAProxy    int // processes: master + workers
}

func (d *dcmProcess) sample(at time.Duration) (SoakSample, error) {
	s := SoakSample{At: at}
	m, err := d.scrape()
	if err != nil {
		return s, err
	}
	s.Goroutines = int(m["go_goroutines"])
	s.HeapMB = m["go_memstats_heap_inuse_bytes"] / (1 << 20)
	pid := d.cmd.Process.Pid
	_, rss, err := memKB(pid)
	if err != nil {
		return s, err
	}
	s.RSSMB = float64(rss) / 1024
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return s, fmt.Errorf("fds of dcm: %w", err)
	}
	s.FDs = len(fds)
	s.HAProxy = len(haproxyOf(d.dir))
	return s, nil
}

// scrape reads dcm's /metrics: series summed by name.
func (d *dcmProcess) scrape() (map[string]float64, error) {
	resp, err := d.metrics.Get("http://" + d.portal + "/metrics")
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	reasons := map[string]int{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		name, rest, _ := strings.Cut(line, " ")
		labels := ""
		if i := strings.IndexByte(name, '{'); i >= 0 {
			// Labels may hold spaces: the value is after the closing brace.
			j := strings.LastIndexByte(line, '}')
			name, labels, rest = line[:i], line[i+1:j], strings.TrimSpace(line[j+1:])
		}
		v, err := strconv.ParseFloat(strings.Fields(rest)[0], 64)
		if err != nil {
			continue
		}
		out[name] += v
		if name == "dcm_reloads_total" && v > 0 {
			reasons[strings.TrimSuffix(strings.TrimPrefix(labels, `reason="`), `"`)] = int(v)
		}
	}
	if sc.Err() == nil {
		d.reloadReasons = reasons
	}
	return out, sc.Err()
}

func (d *dcmProcess) counters(t *testing.T) (updates int, reloads map[string]int, commands int) {
	m, err := d.scrape()
	if err != nil {
		t.Errorf("final metrics: %v", err)
		return
	}
	return int(m["dcm_updates_total"]), d.reloadReasons, int(m["dcm_runtime_command_duration_seconds_count"])
}

// compareSlices checks that, per Service of the soak, HAProxy's servers
// (from dcm's snapshot API, which reads them back from HAProxy) are exactly
// the ready endpoints of its EndpointSlices: none missing, none extra, none
// twice. It returns the differences.
func (d *dcmProcess) compareSlices(t *testing.T, client kubernetes.Interface) []string {
	ctx := context.Background()
	want := map[string][]string{} // service → ready addr:port
	slicesList, err := client.DiscoveryV1().EndpointSlices(soakNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, sl := range slicesList.Items {
		svc := sl.Labels["kubernetes.io/service-name"]
		for _, ep := range sl.Endpoints {
			if ep.Conditions.Ready == nil || !*ep.Conditions.Ready {
				continue
			}
			for _, p := range sl.Ports {
				for _, a := range ep.Addresses {
					want[svc] = append(want[svc], fmt.Sprintf("%s:%d", a, *p.Port))
				}
			}
		}
	}
	got, err := d.readyServers()
	if err != nil {
		t.Fatal(err)
	}
	var diff []string
	for svc := range want {
		if _, ok := got[svc]; !ok {
			if _, routed := getIngress(ctx, client, svc); routed {
				diff = append(diff, fmt.Sprintf("%s: no backend, slices say %v", svc, want[svc]))
			}
		}
	}
	for svc, servers := range got {
		w := slices.Sorted(slices.Values(want[svc]))
		g := slices.Sorted(slices.Values(servers))
		if !slices.Equal(w, g) {
			diff = append(diff, fmt.Sprintf("%s: HAProxy %v, slices %v", svc, g, w))
		}
	}
	sort.Strings(diff)
	return diff
}

func getIngress(ctx context.Context, c kubernetes.Interface, name string) (*networkingv1.Ingress, bool) {
	ing, err := c.NetworkingV1().Ingresses(soakNS).Get(ctx, name, metav1.GetOptions{})
	return ing, err == nil
}

// readyServers reads HAProxy's servers in state ready straight from its
// admin socket, keyed by the Service their backend routes to (dcm's
// snapshot says which HAProxy proxy carries which route).
func (d *dcmProcess) readyServers() (map[string][]string, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+d.portal+"/api/v1/snapshot", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+d.token)
	resp, err := d.metrics.Do(req)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	defer resp.Body.Close()
	var snap dcm.Snapshot
	if err := json.NewDecoder(resp.Body).Decode(&snap); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	d.seq = snap.Seq
	proxyService := map[string]string{}
	for _, b := range snap.Backends {
		if !b.Retiring && len(b.Route.Services) == 1 {
			proxyService[b.ProxyName()] = b.Route.Services[0].Name
		}
	}
	text, err := adminCommand(filepath.Join(d.dir, "admin.sock"), "show servers state")
	if err != nil {
		return nil, err
	}
	states, err := haproxy.ParseServersState(text)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for svc := range maps.Values(proxyService) {
		out[svc] = nil // a routed Service with no ready server is compared too
	}
	for _, s := range states {
		svc, ok := proxyService[s.Backend]
		if ok && s.State == dcm.StateReady {
			out[svc] = append(out[svc], fmt.Sprintf("%s:%d", s.Addr, s.Port))
		}
	}
	return out, nil
}

// adminCommand sends one command on HAProxy's admin socket (non-interactive:
// HAProxy closes after the reply).
func adminCommand(socket, cmd string) (string, error) {
	conn, err := net.DialTimeout("unix", socket, 5*time.Second)
	if err != nil {
		return "", fmt.Errorf("admin socket: %w", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, cmd+"\n"); err != nil {
		return "", fmt.Errorf("%s: %w", cmd, err)
	}
	b, err := io.ReadAll(conn)
	if err != nil {
		return "", fmt.Errorf("%s: %w", cmd, err)
	}
	return string(b), nil
}
