//go:build conformance

package gwdriver

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/dcm-router/dcm/e2e/kapitest"
	"github.com/dcm-router/dcm/e2e/podnet"
	"github.com/dcm-router/dcm/internal/testkit"
)

// What make conformance hands the run (each has a fallback for a plain
// go test -tags conformance ./e2e/gwdriver/).
const (
	envDCMBin   = "DCM_BIN"               // the dcm binary (default: built here)
	envSuiteBin = "CONFORMANCE_SUITE_BIN" // the suite's test binary (default: built here)
	envReport   = "CONFORMANCE_REPORT"    // where the suite writes its report
	envUsable   = "CONFORMANCE_USABLE_ADDRESS"
	envUnusable = "CONFORMANCE_UNUSABLE_ADDRESS"
	envRunTest  = "CONFORMANCE_RUN_TEST" // one test's ShortName
	envLogDir   = "CONFORMANCE_LOG_DIR"  // dcm's and the kubelet's logs
	envVersion  = "DCM_VERSION"          // dcm's commit, for the report
	// envSuiteFlags are more of the suite's own flags, space separated, for
	// a debugging run: -debug, -timeout-config-overrides=GWCMustBeAccepted:20…
	envSuiteFlags = "CONFORMANCE_SUITE_FLAGS"
	suiteTimeout  = 3 * time.Hour
)

// TestConformance is make conformance: a fresh control plane with the
// Gateway API CRDs and the GatewayClass "dcm", the test kubelet serving the
// suite's pods, the dcm binary as shipped (its Gateway flags added), then
// the Gateway API conformance suite (e2e/gwconformance, unmodified) against
// them. It prints the report's results per profile, dcm's reloads during
// the suite and the HAProxy workers seen, and fails when the suite does.
func TestConformance(t *testing.T) {
	ctx := context.Background()
	root := moduleRoot(t)
	suiteDir := filepath.Join(root, "e2e", "gwconformance")
	dcmBin := binary(t, envDCMBin, func(out string) []string { return []string{"build", "-o", out, root} }, root)
	gw := DefaultGateway
	missing, err := MissingFlags(ctx, dcmBin, gw.Flags())
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 {
		t.Fatalf("dcm (%s) has no %s: this build of dcm does not serve Gateways yet (issue 20), so the suite cannot run against it",
			dcmBin, strings.Join(missing, ", "))
	}
	suiteBin := binary(t, envSuiteBin, func(out string) []string { return []string{"test", "-c", "-o", out, "."} }, suiteDir)
	gwDir, err := GatewayAPIDir(ctx, suiteDir)
	if err != nil {
		t.Fatal(err)
	}
	logDir := os.Getenv(envLogDir)
	if logDir == "" {
		logDir = t.TempDir()
	}
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}

	report := os.Getenv(envReport)
	if report == "" {
		report = filepath.Join(logDir, "report.yaml")
	}
	if report, err = filepath.Abs(report); err != nil {
		t.Fatal(err)
	}

	cp := controlPlane(t, ctx)
	dyn, err := dynamic.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	crds, err := ApplyCRDs(ctx, dyn, filepath.Join(gwDir, "config", "crd", "standard"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("conformance: %d Gateway API CRDs from %s\n", len(crds), gwDir)
	if err := CreateGatewayClass(ctx, dyn, GatewayClassName, gw.ControllerName); err != nil {
		t.Fatal(err)
	}
	// deploy/ creates dcm's namespace, where its leader-election Lease lives.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "dcm-system"}}
	if _, err := cp.Client(t).CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	startKubelet(t, ctx, cp, logDir)

	d := startDCM(t, ctx, dcmBin, cp.Kubeconfig, gw, logDir)
	before, err := d.Reloads(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wctx, stopWatch := context.WithCancel(ctx)
	workers := WatchHAProxy(wctx, d.Pid(), 200*time.Millisecond)
	t.Cleanup(func() { stopWatch(); workers.Wait() })

	// A report left by an earlier run must not pass for this one's.
	if err := os.Remove(report); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	began := time.Now()
	suiteErr := runSuite(ctx, suiteBin, suiteDir, cp.Kubeconfig, report, root)
	took := time.Since(began).Round(time.Second)
	after, err := d.Reloads(ctx)
	if err != nil {
		t.Error(err)
	}
	stopWatch()
	workers.Wait()
	masters, seen := workers.Seen()

	fmt.Printf("\n== conformance summary (suite ran %s)\n", took)
	r, err := ReadReport(report)
	if err != nil {
		fmt.Printf("  %v\n", err)
		t.Error(err)
	} else {
		r.WriteSummary(os.Stdout)
		fmt.Printf("  report: %s\n", report)
	}
	delta := after.Minus(before)
	fmt.Printf("  dcm reloads during the suite: %g (%s); before it: %g\n", delta.Total(), delta, before.Total())
	fmt.Printf("  HAProxy masters (and configuration checks) seen %v, workers seen %v: %d worker change(s)\n", masters, seen, max(len(seen)-1, 0))
	fmt.Printf("  logs: %s\n", logDir)
	// The gate: every claimed test passes, and dcm kept HAProxy in step
	// without a reload over the whole suite (issue 20).
	if err == nil {
		for _, f := range r.Failures() {
			t.Errorf("claimed conformance tests failed: %s", f)
		}
	}
	if delta.Total() > 0 {
		t.Errorf("dcm reloaded HAProxy %g time(s) during the suite (%s): the goal is none", delta.Total(), delta)
	}
	// Workers, not masters: dcm's configuration checks (haproxy -c) are
	// short-lived children of dcm too, while a reload, whoever asked for
	// it, always shows as a new worker.
	if len(seen) > 1 {
		t.Errorf("HAProxy's worker changed during the suite: workers %v (one expected; masters and checks seen %v)", seen, masters)
	}
	if suiteErr != nil {
		t.Fatalf("the conformance suite failed (%v): its output above says where", suiteErr)
	}
}

// binary is the path env names, else what go builds with args (given the
// output path) in dir.
func binary(t *testing.T, env string, args func(out string) []string, dir string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	out := filepath.Join(t.TempDir(), filepath.Base(dir))
	cmd := exec.Command("go", args(out)...)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args(out), " "), err, b)
	}
	return out
}

// controlPlane starts a fresh kapi (no namespace controller or garbage
// collector: a new data directory each run) and stops it at the end.
func controlPlane(t *testing.T, ctx context.Context) *kapitest.ControlPlane {
	t.Helper()
	bin, err := kapitest.Binary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := kapitest.Start(ctx, bin, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	return cp
}

// startKubelet sets up the pods' network and runs the test kubelet on it;
// both go at the end, and the network also on SIGINT or SIGTERM.
func startKubelet(t *testing.T, ctx context.Context, cp *kapitest.ControlPlane, logDir string) {
	t.Helper()
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
	log, err := os.Create(filepath.Join(logDir, "kubelet.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	kctx, stop := context.WithCancel(ctx)
	k, err := kapitest.StartKubelet(kctx, cp.Client(t), kapitest.KubeletOptions{Pods: pods},
		slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelInfo})))
	if err != nil {
		stop()
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(); k.Wait() })
	fmt.Printf("conformance: pods in %s\n", pods)
}

// startDCM runs the dcm binary against the control plane: its defaults but
// the addresses of this run and the Gateway flags.
func startDCM(t *testing.T, ctx context.Context, bin, kubeconfig string, gw Gateway, logDir string) *DCM {
	t.Helper()
	testkit.HAProxy(t)
	workDir, portal := testkit.ShortDir(t), testkit.FreeAddr(t)
	args := append([]string{"--kubeconfig=" + kubeconfig, "--work-dir=" + workDir, "--listen=" + portal,
		"--http-bind=" + testkit.FreeAddr(t), "--https-bind=" + testkit.FreeAddr(t)}, gw.Flags()...)
	log, err := os.Create(filepath.Join(logDir, "dcm.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	d, err := StartDCM(ctx, bin, portal, workDir, args, log)
	if err != nil {
		t.Fatalf("%v (log: %s)", err, log.Name())
	}
	t.Cleanup(func() {
		if err := d.Stop(); err != nil {
			t.Errorf("stop dcm: %v", err)
		}
	})
	fmt.Printf("conformance: dcm %s, portal http://%s, log %s\n", strings.Join(args, " "), portal, log.Name())
	return d
}

// runSuite runs the suite's test binary in its module's directory with the
// cluster's kubeconfig, its output on ours.
func runSuite(ctx context.Context, bin, dir, kubeconfig, report, root string) error {
	args := append([]string{"-test.v", "-test.count=1", "-test.run=^TestConformance$",
		"-test.timeout=" + suiteTimeout.String()}, strings.Fields(os.Getenv(envSuiteFlags))...)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	version := os.Getenv(envVersion)
	if version == "" {
		out, _ := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output()
		version = strings.TrimSpace(string(out))
	}
	usable, unusable := gatewayStaticAddresses(DefaultGateway.Addresses)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, envReport+"="+report, envVersion+"="+version,
		envUsable+"="+usable, envUnusable+"="+unusable)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd.Run()
}

// moduleRoot is dcm's module directory, found by go from the test's
// working directory (the source path is not there under -trimpath).
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}
