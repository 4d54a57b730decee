package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/haproxy"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/internal/testkit"
)

// httpsLoad keeps HTTPS requests flowing, each on a new connection (so
// each does a TLS handshake and sees the certificate served right then),
// and counts failures and the certificates seen.
type httpsLoad struct {
	mu      sync.Mutex
	ok      int
	fail    []string
	serials map[string]int
	stop    chan struct{}
	wg      sync.WaitGroup
}

func startHTTPSLoad(s *harness.Stack, host string, ca *testkit.CA, workers int) *httpsLoad {
	l := &httpsLoad{serials: map[string]int{}, stop: make(chan struct{})}
	for range workers {
		l.wg.Go(func() {
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				code, body, leaf, err := testkit.HTTPSGet(s.HTTPSAddr, host, "/", ca.Pool())
				l.mu.Lock()
				if err != nil || code != 200 || body != "shop" {
					l.fail = append(l.fail, fmt.Sprintf("%d %q %v", code, body, err))
				} else {
					l.ok++
					l.serials[leaf.SerialNumber.String()]++
				}
				l.mu.Unlock()
			}
		})
	}
	return l
}

// answersMore waits until the load has had n more answers (ok or not)
// than when called: it runs, and it runs over what came just before.
func (l *httpsLoad) answersMore(t *testing.T, n int) {
	t.Helper()
	count := func() int {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.ok + len(l.fail)
	}
	from := count()
	testkit.Eventually(t, fmt.Sprintf("%d more HTTPS answers under load", n), 10*time.Second, func() error {
		if got := count() - from; got < n {
			return fmt.Errorf("%d answers", got)
		}
		return nil
	})
}

func (l *httpsLoad) finish() (int, []string, map[string]int) {
	close(l.stop)
	l.wg.Wait()
	return l.ok, l.fail, l.serials
}

// TestEdgeCertRotation: an edge route added at runtime is served over TLS
// with its certificate (a real TLS client verifying against the test CA
// for the route's host, leaf checked by serial); the certificate is
// rotated under a concurrent HTTPS load — the new one is served, no
// request fails, the worker and the reload count stay; the route removed,
// its certificate leaves the crt-list and the host gets the default
// certificate. Files on disk follow each step.
func TestEdgeCertRotation(t *testing.T) {
	ca := testkit.NewCA(t)
	store := &testkit.CertStore{}
	app := startPod(t, "127.0.10.1", "app")
	shopPod := startPod(t, "127.0.10.2", "shop")
	base := desiredApp(app.endpoint(dcm.StateReady))
	src := harness.NewStaticSource(base)
	s := harness.Start(t, harness.Options{Source: src, Certs: store})
	pid, reloads := s.WorkerPID(), s.Reloads()
	steady := func(step string) {
		t.Helper()
		if got := s.WorkerPID(); got != pid {
			t.Fatalf("%s: worker %d, was %d", step, got, pid)
		}
		if got := s.Reloads(); got != reloads {
			t.Fatalf("%s: %v reloads, was %v", step, got, reloads)
		}
	}
	onDisk := func(name string) string {
		s.Engine.FlushFiles() // written behind the syncs
		b, err := os.ReadFile(filepath.Join(s.Dir, name))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return string(b)
	}
	serves := func(step string, leaf testkit.Leaf, within time.Duration) time.Duration {
		t.Helper()
		start := time.Now()
		s.Eventually(step+": shop.test serves serial "+leaf.Cert.SerialNumber.String(), within, func() error {
			code, body, got, err := testkit.HTTPSGet(s.HTTPSAddr, "shop.test", "/", ca.Pool())
			switch {
			case err != nil:
				return err
			case code != 200 || body != "shop":
				return fmt.Errorf("HTTP %d %q", code, body)
			case got.SerialNumber.Cmp(leaf.Cert.SerialNumber) != 0:
				return fmt.Errorf("serial %s", got.SerialNumber)
			}
			return nil
		})
		return time.Since(start)
	}

	leaf1 := ca.Leaf(t, "shop.test")
	shop := dcm.Route{Namespace: "test", Name: "shop", Source: dcm.SourceIngress, Object: "shop", Kind: dcm.KindEdge,
		Host: "shop.test", Path: "/", PathType: dcm.PathPrefix, Balance: dcm.BalanceRoundRobin,
		TLS: &dcm.TLSRef{Secret: "test/shop-tls", Version: store.Put("test/shop-tls", leaf1.PEM())}}
	src.Set(withRoutes(base, []dcm.Route{shop}, []pod{shopPod}))
	took := serves("added", leaf1, 5*time.Second)
	t.Logf("edge route added: served with its certificate after %v", took.Round(time.Millisecond))
	steady("added")
	if got := onDisk(haproxy.CrtListName); got != "certs/shop.test.pem [alpn h2,http/1.1] shop.test\n" {
		t.Fatalf("crt-list %q", got)
	}
	if fi, err := os.Stat(filepath.Join(s.Dir, haproxy.CertFile("shop.test"))); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("certificate file: %v %v", fi, err)
	}
	// HTTP still routes the host the same way (the maps are shared).
	answers(s, "shop.test", "/", "shop")

	load := startHTTPSLoad(s, "shop.test", ca, 3)
	load.answersMore(t, 30)
	leaf2 := ca.Leaf(t, "shop.test")
	rotated := shop
	rotated.TLS = &dcm.TLSRef{Secret: "test/shop-tls", Version: store.Put("test/shop-tls", leaf2.PEM())}
	src.Set(withRoutes(base, []dcm.Route{rotated}, []pod{shopPod}))
	took = serves("rotated", leaf2, 5*time.Second)
	load.answersMore(t, 30)
	ok, fail, serials := load.finish()
	t.Logf("rotation: new certificate served after %v; HTTPS load: %d requests, %d failed, serials seen %v", took.Round(time.Millisecond), ok, len(fail), serials)
	if len(fail) > 0 {
		t.Fatalf("%d of %d HTTPS requests failed during the rotation, e.g. %s", len(fail), ok+len(fail), fail[0])
	}
	if serials[leaf1.Cert.SerialNumber.String()] == 0 || serials[leaf2.Cert.SerialNumber.String()] == 0 || len(serials) != 2 {
		t.Fatalf("the load saw serials %v, want both certificates and nothing else", serials)
	}

	// Ten more rotations under the load, each timed from the change of the
	// desired state to the first handshake that gets the new certificate.
	load = startHTTPSLoad(s, "shop.test", ca, 3)
	var tooks []time.Duration
	for range 10 {
		leaf := ca.Leaf(t, "shop.test")
		r := shop
		r.TLS = &dcm.TLSRef{Secret: "test/shop-tls", Version: store.Put("test/shop-tls", leaf.PEM())}
		start := time.Now()
		src.Set(withRoutes(base, []dcm.Route{r}, []pod{shopPod}))
		for {
			got, err := testkit.ServedLeaf(s.HTTPSAddr, "shop.test", ca.Pool())
			if err == nil && got.SerialNumber.Cmp(leaf.Cert.SerialNumber) == 0 {
				break
			}
			if time.Since(start) > 5*time.Second {
				t.Fatalf("rotation not served within 5s: %v", err)
			}
		}
		tooks = append(tooks, time.Since(start))
		leaf2, rotated = leaf, r
	}
	ok, fail, serials = load.finish()
	slices.Sort(tooks)
	t.Logf("10 rotations: new certificate served after p50 %v, max %v; HTTPS load: %d requests, %d failed, %d certificates seen",
		tooks[len(tooks)/2].Round(100*time.Microsecond), tooks[len(tooks)-1].Round(100*time.Microsecond), ok, len(fail), len(serials))
	if len(fail) > 0 {
		t.Fatalf("%d of %d HTTPS requests failed during the rotations, e.g. %s", len(fail), ok+len(fail), fail[0])
	}
	steady("rotated")
	if !strings.Contains(onDisk(haproxy.CertFile("shop.test")), string(bytes.TrimSpace(leaf2.CertPEM))) {
		t.Fatal("the certificate file does not hold the new certificate")
	}
	// What dcm shows — snapshot, events, the files of /config — names the
	// certificate by version and never carries the key; the crt-list on
	// disk is what HAProxy runs.
	cfg, err := s.Engine.Config(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Drift) > 0 {
		t.Errorf("drift: %v", cfg.Drift)
	}
	events, _ := s.Engine.Events(0)
	shown, err := json.Marshal([]any{s.Engine.Snapshot(), events, cfg})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(shown), "PRIVATE KEY") || strings.Contains(string(shown), "BEGIN CERTIFICATE") {
		t.Fatal("a snapshot, an event or /config carries PEM")
	}
	if !strings.Contains(string(shown), `"op":"cert-update"`) || !strings.Contains(string(shown), "certs.list") {
		t.Errorf("the events lack the cert-update, or /config the crt-list")
	}

	src.Set(base)
	s.Eventually("shop.test gets the default certificate", 5*time.Second, func() error {
		leaf, err := testkit.ServedLeaf(s.HTTPSAddr, "shop.test", nil)
		if err != nil {
			return err
		}
		if leaf.Subject.CommonName != "dcm default certificate" {
			return fmt.Errorf("served %q", leaf.Subject.CommonName)
		}
		return nil
	})
	steady("removed")
	s.Eventually("the certificate leaves the disk", 5*time.Second, func() error {
		if got := onDisk(haproxy.CrtListName); got != "" {
			return fmt.Errorf("crt-list %q", got)
		}
		if _, err := os.Stat(filepath.Join(s.Dir, haproxy.CertFile("shop.test"))); !os.IsNotExist(err) {
			return fmt.Errorf("certificate file still there: %v", err)
		}
		return nil
	})
}

// TestRefusedCertificate: a certificate HAProxy refuses (its key belongs to
// another certificate: a source that skipped the kube layer's check) fails
// the rotation at commit ssl cert; the transaction is aborted and the old
// certificate keeps being served. dcm falls back to a runtime-error
// reload, which haproxy -c refuses, so the same worker keeps serving and
// the reload is retried; a valid certificate then converges.
func TestRefusedCertificate(t *testing.T) {
	ca := testkit.NewCA(t)
	store := &testkit.CertStore{}
	shopPod := startPod(t, "127.0.10.3", "shop")
	one, two, three := ca.Leaf(t, "shop.test"), ca.Leaf(t, "shop.test"), ca.Leaf(t, "shop.test")
	shop := func(version string) dcm.Desired {
		r := dcm.Route{Namespace: "test", Name: "shop", Source: dcm.SourceIngress, Object: "shop", Kind: dcm.KindEdge,
			Host: "shop.test", Path: "/", PathType: dcm.PathPrefix, Balance: dcm.BalanceRoundRobin,
			TLS: &dcm.TLSRef{Secret: "test/shop-tls", Version: version}}
		return withRoutes(dcm.Desired{}, []dcm.Route{r}, []pod{shopPod})
	}
	src := harness.NewStaticSource(shop(store.Put("test/shop-tls", one.PEM())))
	s := harness.Start(t, harness.Options{Source: src, Certs: store})
	serves := func(step string, want testkit.Leaf) {
		t.Helper()
		s.Eventually(step, 10*time.Second, func() error {
			code, _, leaf, err := testkit.HTTPSGet(s.HTTPSAddr, "shop.test", "/", ca.Pool())
			switch {
			case err != nil:
				return err
			case code != 200:
				return fmt.Errorf("HTTP %d", code)
			case leaf.SerialNumber.Cmp(want.Cert.SerialNumber) != 0:
				return fmt.Errorf("serial %s", leaf.SerialNumber)
			}
			return nil
		})
	}
	serves("start", one)
	pid := s.WorkerPID()

	src.Set(shop(store.Put("test/shop-tls", append(append([]byte{}, two.CertPEM...), one.KeyPEM...))))
	s.Eventually("the refused commit counted, the reload refused", 10*time.Second, func() error {
		if n := s.Counter("dcm_runtime_errors_total", "command", "commit ssl"); n < 1 {
			return fmt.Errorf("%v failed commits", n)
		}
		if n := s.Counter("dcm_reload_failures_total"); n < 1 {
			return fmt.Errorf("%v failed reloads", n)
		}
		return nil
	})
	serves("the old certificate still served", one)
	if got := s.WorkerPID(); got != pid {
		t.Fatalf("worker %d, was %d", got, pid)
	}
	// No transaction was left open: HAProxy would take the next set ssl
	// cert into it. The valid certificate converges (through the retried
	// reload, which now passes haproxy -c).
	src.Set(shop(store.Put("test/shop-tls", three.PEM())))
	serves("a valid certificate converges", three)
}
