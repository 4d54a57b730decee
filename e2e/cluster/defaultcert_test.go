package cluster

import (
	"bytes"
	"context"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/e2e/kapitest"
	"github.com/dcm-router/dcm/internal/testkit"
	"github.com/dcm-router/dcm/system"
)

// TestDefaultCertificateFromSecret: through the real API server, dcm started
// with --default-ssl-certificate serves that Secret's certificate (checked
// by serial) to an edge host without a certificate of its own, the Secret
// living in a namespace dcm serves no route from. The Secret is rotated
// under HTTPS load: every request succeeds, the new serial is served, the
// worker is the same and nothing reloaded; default.pem on disk is the new
// certificate.
func TestDefaultCertificateFromSecret(t *testing.T) {
	ns, certNS := kapitest.Namespace(t, env.admin), kapitest.Namespace(t, env.admin)
	host := "shop." + ns + ".test"
	edgeWithoutCert(t, ns, host)
	ctx := context.Background()
	ca := testkit.NewCA(t)
	wildcard := "*." + ns + ".test"
	leaf1, leaf2 := ca.Leaf(t, wildcard), ca.Leaf(t, wildcard)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: certNS, Name: "router-default"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: leaf1.CertPEM, corev1.TLSPrivateKeyKey: leaf1.KeyPEM}}
	if _, err := env.admin.CoreV1().Secrets(certNS).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	opts := dcmOptions(t, ns)
	base := opts.Config
	opts.Config = func(c *system.Config) { base(c); c.DefaultSSLCertificate = certNS + "/router-default" }
	s := harness.Start(t, opts)

	servesSerial := func(what string, want *big.Int) {
		t.Helper()
		s.Eventually(what, 15*time.Second, func() error {
			code, _, leaf, err := testkit.HTTPSGet(s.HTTPSAddr, host, "/", ca.Pool())
			if err != nil {
				return err
			}
			if code != 200 || leaf.SerialNumber.Cmp(want) != 0 {
				return fmt.Errorf("HTTP %d, serial %s, want %s", code, leaf.SerialNumber, want)
			}
			return nil
		})
	}
	servesSerial("the Secret's certificate served", leaf1.Cert.SerialNumber)
	pid, reloads := s.WorkerPID(), s.Reloads()

	load := startHTTPSLoad(s.HTTPSAddr, host, ca, 3000)
	secret.Data = map[string][]byte{corev1.TLSCertKey: leaf2.CertPEM, corev1.TLSPrivateKeyKey: leaf2.KeyPEM}
	if _, err := env.admin.CoreV1().Secrets(certNS).Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	load.waitFor(t, leaf2.Cert.SerialNumber, 15*time.Second)
	ok, fail, lastErr := load.finish()
	if fail != 0 || ok == 0 {
		t.Errorf("under rotation: %d ok, %d failed (last: %s)", ok, fail, lastErr)
	}
	servesSerial("the rotated certificate served", leaf2.Cert.SerialNumber)
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("worker %d → %d, reloads %v → %v", pid, s.WorkerPID(), reloads, s.Reloads())
	}
	s.Eventually("default.pem on disk is the rotated certificate", 15*time.Second, func() error {
		b, err := os.ReadFile(filepath.Join(s.Dir, "default.pem"))
		if err != nil {
			return err
		}
		if !bytes.Contains(b, bytes.TrimSpace(leaf2.CertPEM)) {
			return fmt.Errorf("default.pem is not the rotated certificate")
		}
		return nil
	})
}

// TestDefaultCertificateSecretLate: the Secret of --default-ssl-certificate
// missing when dcm starts: the self-signed certificate is served and dcm
// says why (its log's rejection of the Secret); once the Secret is created
// its certificate is served, at runtime, without a reload.
func TestDefaultCertificateSecretLate(t *testing.T) {
	ns := kapitest.Namespace(t, env.admin)
	host := "shop." + ns + ".test"
	edgeWithoutCert(t, ns, host)
	logs := &lockedBuffer{}
	opts := dcmOptions(t, ns)
	base := opts.Config
	opts.Config = func(c *system.Config) { base(c); c.DefaultSSLCertificate = ns + "/router-default" }
	opts.LogTo = logs
	s := harness.Start(t, opts)
	s.Eventually("the self-signed certificate served", 15*time.Second, func() error {
		leaf, err := testkit.ServedLeaf(s.HTTPSAddr, host, nil)
		if err != nil {
			return err
		}
		if leaf.Subject.CommonName != "dcm default certificate" {
			return fmt.Errorf("served %q", leaf.Subject.CommonName)
		}
		return nil
	})
	if want := "--default-ssl-certificate: no kubernetes.io/tls Secret " + ns + "/router-default: dcm's self-signed certificate is served"; !strings.Contains(logs.String(), want) {
		t.Errorf("the log does not say %q:\n%s", want, logs.String())
	}
	pid, reloads := s.WorkerPID(), s.Reloads()
	ca := testkit.NewCA(t)
	leaf := ca.Leaf(t, host)
	if _, err := env.admin.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "router-default"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: leaf.CertPEM, corev1.TLSPrivateKeyKey: leaf.KeyPEM}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Eventually("the Secret's certificate served", 15*time.Second, func() error {
		code, _, served, err := testkit.HTTPSGet(s.HTTPSAddr, host, "/", ca.Pool())
		if err != nil {
			return err
		}
		if code != 200 || served.SerialNumber.Cmp(leaf.Cert.SerialNumber) != 0 {
			return fmt.Errorf("HTTP %d, serial %s", code, served.SerialNumber)
		}
		return nil
	})
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("worker %d → %d, reloads %v → %v", pid, s.WorkerPID(), reloads, s.Reloads())
	}
}

// edgeWithoutCert serves host as an edge route whose own Secret does not
// exist: the default certificate serves it.
func edgeWithoutCert(t *testing.T, ns, host string) {
	t.Helper()
	createApp(t, ns, "shop", 1, host, "/")
	ctx := context.Background()
	ing, err := env.admin.NetworkingV1().Ingresses(ns).Get(ctx, "shop", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{host}, SecretName: "no-such-tls"}}
	if _, err := env.admin.NetworkingV1().Ingresses(ns).Update(ctx, ing, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// httpsLoad is a bounded loop of HTTPS requests, each on a fresh TLS
// connection, that records the serials it was served.
type httpsLoad struct {
	mu       sync.Mutex
	ok, fail int
	lastErr  string
	serials  map[string]bool
	stop     chan struct{}
	done     chan struct{}
}

func startHTTPSLoad(addr, host string, ca *testkit.CA, max int) *httpsLoad {
	l := &httpsLoad{serials: map[string]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for range max {
			select {
			case <-l.stop:
				return
			default:
			}
			code, _, leaf, err := testkit.HTTPSGet(addr, host, "/", ca.Pool())
			l.mu.Lock()
			if err != nil || code != 200 {
				l.fail++
				l.lastErr = fmt.Sprintf("%d %v", code, err)
			} else {
				l.ok++
				l.serials[leaf.SerialNumber.String()] = true
			}
			l.mu.Unlock()
			time.Sleep(2 * time.Millisecond)
		}
	}()
	return l
}

// waitFor waits until the load was served serial (or ran out).
func (l *httpsLoad) waitFor(t *testing.T, serial *big.Int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		l.mu.Lock()
		seen := l.serials[serial.String()]
		l.mu.Unlock()
		if seen {
			return
		}
		select {
		case <-l.done:
			t.Fatalf("the load ended before serial %s was served", serial)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("serial %s not served within %s", serial, timeout)
}

func (l *httpsLoad) finish() (ok, fail int, lastErr string) {
	close(l.stop)
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ok, l.fail, l.lastErr
}
