// Package kapitest runs the control plane of e2e/kapi (embedded etcd, the
// real kube-apiserver with RBAC, the real endpointslice, deployment and
// replicaset controllers) for a test package, with a test kubelet whose
// pods listen in the package's own pod network (e2e/podnet), and gives each
// test its own namespace.
package kapitest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/dcm-router/dcm/e2e/podnet"
)

// Binary builds the control plane with e2e/kapi/build.sh (as make kapi
// does) and returns its path. go build is incremental: about a second when
// nothing changed, ten minutes on a cold two-core machine the first time.
func Binary(ctx context.Context) (string, error) {
	root, err := moduleRoot(ctx)
	if err != nil {
		return "", err
	}
	script := filepath.Join(root, "e2e", "kapi", "build.sh")
	cmd := exec.CommandContext(ctx, script)
	// build.sh runs go: go test puts its own GOROOT/bin first in PATH.
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("build the control plane (%s): %w\n%s", script, err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// ControlPlane is a running kapi.
type ControlPlane struct {
	Bin        string
	Dir        string
	Host       string
	Kubeconfig string
	// Admin is the control plane's admin (system:masters) client config.
	Admin *rest.Config
	cmd   *exec.Cmd
	done  chan error
}

// Start runs kapi on dir (kept across Stop/Start, so a restart finds the
// same data, port and credentials) and waits until it is ready.
func Start(ctx context.Context, bin, dir string) (*ControlPlane, error) {
	cp := &ControlPlane{Bin: bin, Dir: dir}
	return cp, cp.start(ctx)
}

func (cp *ControlPlane) start(ctx context.Context) error {
	cmd := exec.Command(cp.Bin, "-dir", cp.Dir, "-keep")
	// A test binary that dies must not leave a control plane behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	started := time.Now()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start kapi: %w", err)
	}
	cp.cmd, cp.done = cmd, make(chan error, 1)
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "READY ") {
				ready <- line
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() { cp.done <- cmd.Wait() }()
	select {
	case line := <-ready:
		f := strings.Fields(line)
		cp.Host = f[1]
		cp.Kubeconfig = strings.TrimPrefix(f[2], "kubeconfig=")
	case err := <-cp.done:
		return fmt.Errorf("kapi exited before it was ready (log: %s): %v", filepath.Join(cp.Dir, "kapi.log"), err)
	case <-time.After(90 * time.Second):
		_ = cp.Stop()
		return errors.New("kapi not ready within 90s")
	case <-ctx.Done():
		_ = cp.Stop()
		return ctx.Err()
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.Kubeconfig)
	if err != nil {
		return err
	}
	// client-go's default 5 QPS would make tests wait on the client, not on dcm.
	cfg.QPS, cfg.Burst = 1000, 2000
	cp.Admin = cfg
	fmt.Fprintf(os.Stderr, "kapi: control plane ready at %s in %s\n", cp.Host, time.Since(started).Round(10*time.Millisecond))
	return nil
}

// Stop sends SIGTERM and waits, bounded; SIGKILL after ten seconds.
func (cp *ControlPlane) Stop() error {
	if cp.cmd == nil {
		return nil
	}
	_ = cp.cmd.Process.Signal(syscall.SIGTERM)
	var err error
	select {
	case err = <-cp.done:
	case <-time.After(10 * time.Second):
		_ = cp.cmd.Process.Kill()
		err = <-cp.done
	}
	cp.cmd = nil
	return err
}

// Restart stops the control plane and starts it again on the same data.
func (cp *ControlPlane) Restart(ctx context.Context) error {
	_ = cp.Stop()
	return cp.start(ctx)
}

// Client is an admin clientset.
func (cp *ControlPlane) Client(tb testing.TB) kubernetes.Interface {
	tb.Helper()
	c, err := kubernetes.NewForConfig(cp.Admin)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// Main is a TestMain: it sets up the pods' network (e2e/podnet) and builds
// and starts one control plane for the test package, runs setup (which may
// start what the tests share and returns how to stop it), runs the tests,
// then always stops everything it started. SIGINT or SIGTERM tears the
// pods' network down before the signal ends the process; a harder end
// (kill -9, the test timeout's panic) leaves it to the next run to sweep.
func Main(m *testing.M, setup func(ctx context.Context, cp *ControlPlane, pods *podnet.Network) (stop func(), err error)) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	pods, err := podnet.Setup()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := pods.Close(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	defer pods.CloseOnSignal()()
	fmt.Fprintf(os.Stderr, "kapitest: pods in %s\n", pods)
	bin, err := Binary(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "kapi")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	cp, err := Start(ctx, bin, dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cp.Stop()
	stop, err := setup(ctx, cp, pods)
	if err != nil {
		fmt.Fprintln(os.Stderr, "setup:", err)
		return 1
	}
	defer stop()
	return m.Run()
}

// Namespace creates a namespace for one test. There is no namespace
// controller to empty it afterwards, so each test gets a fresh name.
func Namespace(tb testing.TB, client kubernetes.Interface) string {
	tb.Helper()
	name := strings.ToLower(tb.Name())
	name = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, name)
	if len(name) > 50 {
		name = name[:50]
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: strings.Trim(name, "-") + "-"}}
	created, err := client.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{})
	if err != nil {
		tb.Fatalf("create namespace: %v", err)
	}
	return created.Name
}

// moduleRoot is the directory of dcm's go.mod, found by go itself from the
// test's working directory: the source path the binary was built from is
// not there to read under -trimpath, which make test uses so that a fresh
// clone reuses the build cache.
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("locate dcm's module: go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("locate dcm's module: go env GOMOD names no go.mod")
	}
	return filepath.Dir(mod), nil
}
