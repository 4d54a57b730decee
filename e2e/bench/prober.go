package bench

import (
	"context"
	"crypto/x509"
	"sync"
	"testing"
	"time"

	"github.com/dcm-router/dcm/internal/testkit"
)

// prober times, in the background, how long the churn's changes take to be
// served through HAProxy, into res: new pods (Latencies, ProbeTimeouts) and
// rotated certificates (CertLatencies, CertTimeouts). wg counts its probes.
type prober struct {
	t                   *testing.T
	mode                string
	httpAddr, httpsAddr string
	ca                  *x509.CertPool
	limit               time.Duration

	wg  sync.WaitGroup
	mu  sync.Mutex // guards res's fields above
	res *Result
}

// measure times the pods written at written until each gets a request for
// host; then, if set, runs once any of them answers (a new route joins the
// load).
func (p *prober) measure(host string, pods []*pod, written time.Time, then func()) {
	p.wg.Go(func() {
		lat, missed := probe(p.httpAddr, host, pods, written, p.limit)
		p.mu.Lock()
		defer p.mu.Unlock()
		p.res.Latencies = append(p.res.Latencies, lat...)
		p.res.ProbeTimeouts += missed
		if missed > 0 {
			p.t.Logf("%s: %s: %d new pods got no request within %s", p.mode, host, missed, p.limit)
		}
	})
	if then != nil {
		p.wg.Go(func() {
			// A new route joins the load once any of its pods answers.
			client := newProbeClient()
			for time.Since(written) < p.limit {
				if code, _, err := get(context.Background(), client, p.httpAddr, host, "/"); err == nil && code == 200 {
					then()
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
}

// measureCert times a certificate written at written until a TLS handshake
// for host gets it.
func (p *prober) measureCert(host string, leaf testkit.Leaf, written time.Time) {
	p.wg.Go(func() {
		for time.Since(written) < p.limit {
			got, err := testkit.ServedLeaf(p.httpsAddr, host, p.ca)
			if err == nil && got.SerialNumber.Cmp(leaf.Cert.SerialNumber) == 0 {
				p.mu.Lock()
				p.res.CertLatencies = append(p.res.CertLatencies, time.Since(written))
				p.mu.Unlock()
				return
			}
			time.Sleep(min(time.Millisecond+time.Since(written)/20, 10*time.Millisecond))
		}
		p.mu.Lock()
		p.res.CertTimeouts++
		p.mu.Unlock()
		p.t.Logf("%s: %s: the new certificate was not served within %s", p.mode, host, p.limit)
	})
}
