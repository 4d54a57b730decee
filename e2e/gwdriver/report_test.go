package gwdriver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A report as the suite writes it (sigs.k8s.io/yaml of its
// ConformanceReport: Statistics' fields have no JSON tags).
const sampleReport = `apiVersion: gateway.networking.k8s.io/v1
date: "2026-12-04T23:10:00Z"
gatewayAPIChannel: standard
gatewayAPIVersion: v1.6.3
implementation:
  contact:
  - https://github.com/dcm-router/dcm/issues
  organization: dcm-router
  project: dcm
  url: https://github.com/dcm-router/dcm
  version: abc1234
kind: ConformanceReport
mode: default
profiles:
- core:
    failedTests:
    - HTTPRouteSimpleSameNamespace
    result: failure
    statistics:
      Failed: 1
      Passed: 30
      Skipped: 2
  name: GATEWAY-HTTP
  summary: Core tests failed with 1 test failures.
`

func TestReadReport(t *testing.T) {
	path := filepath.Join(t.TempDir(), "report.yaml")
	if err := os.WriteFile(path, []byte(sampleReport), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := ReadReport(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Profiles) != 1 || r.GatewayAPIVersion != "v1.6.3" || r.Implementation.Version != "abc1234" {
		t.Fatalf("report %+v", r)
	}
	s := r.Profiles[0].Core.Statistics
	if s.Passed != 30 || s.Failed != 1 || s.Skipped != 2 || r.Profiles[0].Extended != nil {
		t.Errorf("statistics %+v", r.Profiles[0])
	}
	var b strings.Builder
	r.WriteSummary(&b)
	for _, want := range []string{"GATEWAY-HTTP", "passed  30  failed   1  skipped   2", "failed: HTTPRouteSimpleSameNamespace", "dcm abc1234"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}

func TestReportFailures(t *testing.T) {
	pass := func(n int) Status {
		var s Status
		s.Result, s.Statistics.Passed = "success", n
		return s
	}
	failed := pass(30)
	failed.Result, failed.Statistics.Failed, failed.FailedTests = "failure", 1, []string{"GatewayHTTPListenerIsolation"}
	ext := pass(15)
	for _, tc := range []struct {
		name string
		r    Report
		want []string
	}{
		{"no profile", Report{}, []string{"the report has no profile results"}},
		{"all pass", Report{Profiles: []ProfileReport{{Name: "GATEWAY-HTTP", Core: pass(36), Extended: &ext}}}, nil},
		{"extended fails", Report{Profiles: []ProfileReport{{Name: "GATEWAY-HTTP", Core: pass(36), Extended: &failed}}},
			[]string{"GATEWAY-HTTP extended: 1 failed (GatewayHTTPListenerIsolation)"}},
		{"core fails", Report{Profiles: []ProfileReport{{Name: "GATEWAY-HTTP", Core: failed}}},
			[]string{"GATEWAY-HTTP core: 1 failed (GatewayHTTPListenerIsolation)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.r.Failures()
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("failures %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseCounter(t *testing.T) {
	const metrics = `# HELP dcm_reloads_total HAProxy reloads by reason.
# TYPE dcm_reloads_total counter
dcm_reloads_total{reason="new-backend"} 2
dcm_reloads_total{reason="certificate"} 1
dcm_reloads_total_other 7
dcm_reload_duration_seconds_count 3
`
	c, err := ParseCounter(strings.NewReader(metrics), "dcm_reloads_total", "reason")
	if err != nil {
		t.Fatal(err)
	}
	if c.Total() != 3 || c["new-backend"] != 2 || c.String() != "certificate=1, new-backend=2" {
		t.Errorf("counts %v", c)
	}
	if d := c.Minus(Counts{"new-backend": 2}); d.String() != "certificate=1" {
		t.Errorf("minus %v", d)
	}
}

func TestGatewayFlags(t *testing.T) {
	got := strings.Join(DefaultGateway.Flags(), " ")
	want := "--gateway-controller-name=dcm-router.io/gateway-controller --gateway-addresses=127.0.20.0/28 --gateway-http-ports=80,8080,8090 --gateway-https-ports=443,8443"
	if got != want {
		t.Errorf("flags %s\nwant %s", got, want)
	}
}

// TestGatewayStaticAddresses: the usable address is the pool's last, the
// unusable one just past it.
func TestGatewayStaticAddresses(t *testing.T) {
	for _, tc := range []struct{ pool, usable, unusable string }{
		{"127.0.20.0/28", "127.0.20.15", "127.0.20.16"},
		{"127.0.20.8/30", "127.0.20.11", "127.0.20.12"},
		{"127.0.20.9/30", "127.0.20.11", "127.0.20.12"},
		{"not a prefix", "", ""},
	} {
		if u, n := gatewayStaticAddresses(tc.pool); u != tc.usable || n != tc.unusable {
			t.Errorf("%s: %s, %s; want %s, %s", tc.pool, u, n, tc.usable, tc.unusable)
		}
	}
}
