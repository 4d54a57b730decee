package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
)

// TestBinaryDemo runs dcm as make run does (built binary, --demo) and uses
// only what a user has: the printed banner, curl-like requests through
// HAProxy, the bearer-token API and the metrics endpoint.
func TestBinaryDemo(t *testing.T) {
	testkit.HAProxy(t)
	bin := filepath.Join(t.TempDir(), "dcm")
	build := exec.Command("go", "build", "-o", bin, "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := testkit.ShortDir(t)
	httpAddr := testkit.FreeAddr(t)
	cmd := exec.Command(bin, "--demo", "--work-dir", dir, "--listen", "127.0.0.1:0", "--http-bind", httpAddr, "--https-bind", testkit.FreeAddr(t),
		"--demo-readiness-delay", "100ms", "--demo-prestop-delay", "200ms")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = testkit.Writer{TB: t}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			t.Error("dcm did not exit within 15s of SIGTERM")
		}
	})

	banner := readBanner(t, stdout)
	portal := match(t, banner, `portal:\s+http://(\S+)/`)
	token := match(t, banner, `admin token:\s+(\S+)`)
	if !strings.Contains(banner, "curl -H 'Host: web.demo.localhost' http://"+httpAddr+"/") {
		t.Errorf("the banner lacks the curl line through HAProxy:\n%s", banner)
	}

	get := func(host, url string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	if code, body := get("web.demo.localhost", "http://"+httpAddr+"/"); code != 200 || !strings.HasPrefix(body, "web-") {
		t.Fatalf("through HAProxy: %d %q", code, body)
	}
	if code, _ := get("", "http://"+portal+"/api/v1/snapshot"); code != http.StatusUnauthorized {
		t.Errorf("snapshot without a token: HTTP %d, want 401", code)
	}

	api := func(method, path, body string) (int, []byte) {
		req, _ := http.NewRequest(method, "http://"+portal+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	if code, b := api(http.MethodPost, "/api/v1/scale", `{"namespace":"demo","kind":"Deployment","name":"web","replicas":5}`); code != http.StatusAccepted {
		t.Fatalf("scale: HTTP %d %s", code, b)
	}
	var snap dcm.Snapshot
	testkit.Eventually(t, "web's 5 servers ready after the scale", 15*time.Second, func() error {
		code, b := api(http.MethodGet, "/api/v1/snapshot", "")
		snap = dcm.Snapshot{}
		if code != 200 || json.Unmarshal(b, &snap) != nil {
			t.Fatalf("snapshot: HTTP %d %s", code, b)
		}
		ready := 0
		for _, be := range snap.Backends {
			if be.Name == webBE {
				for _, s := range be.Servers {
					if s.State == dcm.StateReady {
						ready++
					}
				}
			}
		}
		if ready != 5 {
			return fmt.Errorf("%d ready servers", ready)
		}
		return nil
	})
	if snap.HAProxy.Reloads != 0 || snap.HAProxy.PID == 0 || snap.HAProxy.Version == "" {
		t.Errorf("snapshot HAProxy info: %+v", snap.HAProxy)
	}
	pods := map[string]bool{}
	for range 30 {
		_, body := get("web.demo.localhost", "http://"+httpAddr+"/")
		pods[body] = true
	}
	if len(pods) != 5 {
		t.Errorf("30 requests reached %d pods, want 5: %v", len(pods), pods)
	}
	// The global maxconn goes down at runtime, and haproxy.cfg says so.
	if code, b := api(http.MethodPost, "/api/v1/maxconn", `{"maxconn":2000}`); code != http.StatusAccepted {
		t.Fatalf("maxconn: HTTP %d %s", code, b)
	}
	if cfg, err := os.ReadFile(filepath.Join(dir, "haproxy.cfg")); err != nil || !strings.Contains(string(cfg), "\n    maxconn 2000\n") {
		t.Errorf("haproxy.cfg after POST /api/v1/maxconn 2000 (err %v) lacks maxconn 2000", err)
	}
	_, metrics := get("", "http://"+portal+"/metrics")
	for _, want := range []string{`dcm_updates_total{result="dynamic"}`, "dcm_event_to_applied_seconds_bucket", `dcm_runtime_command_duration_seconds_count{command="add server"}`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(metrics, "dcm_reloads_total{") {
		t.Error("the demo reloaded HAProxy")
	}

	// SIGTERM stops dcm and its HAProxy.
	master := readPID(t, dir)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("dcm exited with %v after SIGTERM", err)
		}
		exited <- err
	case <-time.After(15 * time.Second):
		t.Fatal("dcm did not stop within 15s")
	}
	if syscall.Kill(master, 0) == nil {
		t.Errorf("HAProxy master %d still runs after dcm stopped", master)
	}
}

func readBanner(t *testing.T, r io.Reader) string {
	t.Helper()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var b strings.Builder
	timeout := time.After(60 * time.Second)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("dcm stopped before printing its banner:\n%s", b.String())
			}
			b.WriteString(line + "\n")
			if strings.Contains(line, "scale web to 5") {
				go io.Copy(io.Discard, r)
				return b.String()
			}
		case <-timeout:
			t.Fatalf("no banner within 60s:\n%s", b.String())
		}
	}
}

func match(t *testing.T, s, re string) string {
	t.Helper()
	m := regexp.MustCompile(re).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no %s in:\n%s", re, s)
	}
	return m[1]
}

// readPID finds the HAProxy master dcm started, by its command line.
func readPID(t *testing.T, dir string) int {
	t.Helper()
	out, err := exec.Command("pgrep", "-f", "haproxy -W -S "+dir).Output()
	if err != nil {
		t.Fatalf("no HAProxy master running for %s: %v", dir, err)
	}
	var pid int
	if _, err := fmt.Sscan(strings.Fields(string(out))[0], &pid); err != nil {
		t.Fatal(err)
	}
	return pid
}
