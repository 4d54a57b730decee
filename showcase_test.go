package main

import (
	"bytes"
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dcm-router/dcm/internal/testkit"
)

// printedLine is one curl line of the banner, read back into what it asks.
type printedLine struct {
	kind, host, addr string // addr: where curl connects
	https            bool
}

var (
	httpsLine = regexp.MustCompile(`^  (\w+):\s+curl -k --resolve ([^:]+):(\d+):(\S+) https://`)
	httpLine  = regexp.MustCompile(`^  (\w+):\s+.*curl .*-H 'Host: ([^']+)' http://(\S+)/`)
)

func parseBanner(banner string) map[string]printedLine {
	out := map[string]printedLine{}
	for _, l := range strings.Split(banner, "\n") {
		if m := httpsLine.FindStringSubmatch(l); m != nil {
			out[m[1]] = printedLine{kind: m[1], host: m[2], addr: m[4] + ":" + m[3], https: true}
		} else if m := httpLine.FindStringSubmatch(l); m != nil {
			out[m[1]] = printedLine{kind: m[1], host: m[2], addr: m[3]}
		}
	}
	return out
}

// TestDemoShowcase runs dcm as make run does (the demo, the real HAProxy)
// and asks each curl line of the banner what it promises, through HAProxy:
// every kind of route answers from the right pods with the right
// certificate, the canary splits about 80/20 and the sticky route sticks.
func TestDemoShowcase(t *testing.T) {
	bin := testkit.HAProxy(t)
	httpAddr, httpsAddr := testkit.FreeAddr(t), testkit.FreeAddr(t)
	cfg, err := parseFlags([]string{"--demo", "--haproxy-bin", bin, "--work-dir", testkit.ShortDir(t), "--listen", "127.0.0.1:0",
		"--http-bind", httpAddr, "--https-bind", httpsAddr, "--demo-readiness-delay", "100ms", "--demo-prestop-delay", "100ms"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var out syncBuffer
	go func() { done <- run(ctx, cfg, &out) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("dcm did not stop within 20s")
		}
	})
	testkit.Eventually(t, "the banner", 30*time.Second, func() error {
		if !strings.Contains(out.String(), "scale web to 5") {
			return fmt.Errorf("banner so far: %q", out.String())
		}
		return nil
	})
	lines := parseBanner(out.String())
	for _, kind := range []string{"http", "edge", "passthrough", "reencrypt", "canary", "sticky", "route"} {
		l, ok := lines[kind]
		if !ok {
			t.Errorf("the banner has no curl line for %s:\n%s", kind, out.String())
			continue
		}
		want := map[bool]string{false: httpAddr, true: httpsAddr}[l.https]
		if l.addr != want {
			t.Errorf("%s: curl goes to %s, HAProxy listens on %s", kind, l.addr, want)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	t.Run("http", func(t *testing.T) { wantPod(t, lines["http"], "web-") })
	t.Run("route", func(t *testing.T) { wantPod(t, lines["route"], "shop-") })
	t.Run("edge", func(t *testing.T) {
		leaf := wantPod(t, lines["edge"], "web-")
		// The Secret's certificate: self-signed for the host, not dcm's default.
		if !slices.Equal(leaf.DNSNames, []string{lines["edge"].host}) || leaf.Issuer.CommonName != lines["edge"].host {
			t.Errorf("edge served %v issued by %q, want the Secret's for %s", leaf.DNSNames, leaf.Issuer.CommonName, lines["edge"].host)
		}
	})
	t.Run("passthrough", func(t *testing.T) {
		leaf := wantPod(t, lines["passthrough"], "tls-echo-")
		// The pod's own certificate, which HAProxy has no copy of.
		if !slices.Contains(leaf.DNSNames, lines["passthrough"].host) || leaf.Issuer.CommonName != "dcm demo CA" {
			t.Errorf("passthrough served %v issued by %q, want the pod's", leaf.DNSNames, leaf.Issuer.CommonName)
		}
	})
	t.Run("reencrypt", func(t *testing.T) {
		leaf := wantPod(t, lines["reencrypt"], "tls-echo-")
		if !slices.Equal(leaf.DNSNames, []string{lines["reencrypt"].host}) {
			t.Errorf("reencrypt served %v, want the Secret's for %s", leaf.DNSNames, lines["reencrypt"].host)
		}
	})
	t.Run("whatif", func(t *testing.T) { offersRotation(t, out.String(), lines["edge"].host) })
	t.Run("canary", func(t *testing.T) { canarySplit(t, lines["canary"]) })
	t.Run("sticky", func(t *testing.T) { sticks(t, lines["sticky"]) })
}

// wantPod waits, bounded, for the line's route to answer 200 from a pod
// named prefix… and returns the certificate it was served (nil over HTTP).
func wantPod(t *testing.T, l printedLine, prefix string) *x509.Certificate {
	t.Helper()
	var leaf *x509.Certificate
	testkit.Eventually(t, l.kind+" answers from "+prefix, 15*time.Second, func() error {
		var code int
		var body string
		var err error
		if l.https {
			code, body, leaf, err = testkit.InsecureHTTPSGet(l.addr, l.host, "/")
		} else {
			code, body, err = get(http.DefaultClient, l)
		}
		switch {
		case err != nil:
			return err
		case code != http.StatusOK || !strings.HasPrefix(body, prefix):
			return fmt.Errorf("HTTP %d %q", code, body)
		}
		return nil
	})
	return leaf
}

func get(c *http.Client, l printedLine) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+l.addr+"/", nil)
	if err != nil {
		return 0, "", err
	}
	req.Host = l.host
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b)), err
}

// canarySplit: 200 requests, the primary's share within 65–95 % (80 %
// weighted; round robin keeps it close).
func canarySplit(t *testing.T, l printedLine) {
	wantPod(t, l, "") // both services' servers are in by the time the banner prints
	c := &http.Client{Timeout: 5 * time.Second}
	counts := map[string]int{}
	for range 200 {
		code, body, err := get(c, l)
		if err != nil || code != http.StatusOK {
			t.Fatalf("canary: HTTP %d %q %v", code, body, err)
		}
		counts[strings.SplitN(body, "-", 2)[0]]++
	}
	if share := counts["web"] * 100 / 200; share < 65 || share > 95 || counts["web"]+counts["canary"] != 200 {
		t.Errorf("canary split %v, want web about 80 %% (65–95)", counts)
	}
}

// sticks: with the cookie of the first answer, ten more land on its pod.
func sticks(t *testing.T, l printedLine) {
	wantPod(t, l, "web-")
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Timeout: 5 * time.Second, Jar: jar}
	_, first, err := get(c, l)
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if _, body, err := get(c, l); err != nil || body != first {
			t.Fatalf("sticky: %q %v after %q", body, err, first)
		}
	}
}

// offersRotation: the what-if page offers the edge route's certificate to
// rotate.
func offersRotation(t *testing.T, banner, host string) {
	portal := regexp.MustCompile(`portal:\s+http://(\S+)/`).FindStringSubmatch(banner)
	token := regexp.MustCompile(`admin token:\s+(\S+)`).FindStringSubmatch(banner)
	if portal == nil || token == nil {
		t.Fatalf("no portal or token in the banner:\n%s", banner)
	}
	req, err := http.NewRequest(http.MethodGet, "http://"+portal[1]+"/whatif", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token[1])
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	page, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/whatif: HTTP %d %v", resp.StatusCode, err)
	}
	sel := regexp.MustCompile(`(?s)<select id="wi-cert".*?</select>`).Find(page)
	if !bytes.Contains(sel, []byte(host)) {
		t.Errorf("the what-if page offers no certificate of %s to rotate: %s", host, sel)
	}
}
