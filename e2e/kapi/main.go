// Command kapi is a real Kubernetes control plane for dcm's end-to-end
// tests: embedded etcd and the real kube-apiserver (RBAC on) in one process,
// plus the real endpointslice, deployment and replicaset controllers. There
// is no kubelet and no scheduler; the tests bring their own kubelet.
//
// It lives in a nested module so that k8s.io/kubernetes' dependency graph
// stays out of dcm's go.mod. It prints "READY <url> kubeconfig=<path>" once
// /readyz answers, and stops on SIGTERM or SIGINT.
//
// Everything that must survive a restart on the same -dir is kept there: the
// etcd data, the serving certificate, the service-account signing key, the
// port and the admin token — so clients (dcm with a ServiceAccount token
// among them) reconnect after a restart without new credentials.
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"
	"k8s.io/kubernetes/pkg/controller/deployment"
	"k8s.io/kubernetes/pkg/controller/endpointslice"
	"k8s.io/kubernetes/pkg/controller/replicaset"
)

func main() {
	dir := flag.String("dir", "", "data directory (etcd, certificates, keys, kubeconfig); created if missing")
	keep := flag.Bool("keep", false, "keep -dir on exit, so that a restart finds the same data")
	controllers := flag.String("controllers", "endpointslice,deployment,replicaset", "controllers to run in-process (comma separated; empty for none)")
	logFile := flag.String("log", "", "file for the apiserver's own log (default: <dir>/kapi.log)")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "kapi: -dir is required")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, *dir, *keep, *controllers, *logFile); err != nil {
		fmt.Fprintln(os.Stderr, "kapi:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, dir string, keep bool, controllers, logFile string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := os.Chdir(dir); err != nil {
		return err
	}
	if !keep {
		defer os.RemoveAll(dir)
	}
	if logFile == "" {
		logFile = filepath.Join(dir, "kapi.log")
	}
	if err := quietKlog(logFile); err != nil {
		return err
	}

	etcd, err := startEtcd(dir, logFile)
	if err != nil {
		return err
	}
	defer closeBounded(etcd)

	ln, port, err := listen(dir)
	if err != nil {
		return err
	}
	token, tokens, saKey, err := credentials(dir)
	if err != nil {
		return err
	}
	serve, loopback, err := apiServer(ctx, dir, ln, port, tokens, saKey)
	if err != nil {
		return err
	}
	serveCtx, cancelServe := context.WithCancel(context.Background())
	defer cancelServe()
	runErr := make(chan error, 1)
	go func() { runErr <- serve(serveCtx) }()

	host := "https://127.0.0.1:" + strconv.Itoa(port)
	kubeconfig := filepath.Join(dir, "admin.kubeconfig")
	if err := waitReady(ctx, host, token, runErr); err != nil {
		return err
	}
	if err := writeKubeconfig(kubeconfig, host, token); err != nil {
		return err
	}
	ctrlCtx, cancelCtrl := context.WithCancel(ctx)
	defer cancelCtrl()
	if err := startControllers(ctrlCtx, loopback, controllers); err != nil {
		return err
	}
	fmt.Printf("READY %s kubeconfig=%s\n", host, kubeconfig)

	select {
	case <-ctx.Done():
	case err := <-runErr:
		return fmt.Errorf("apiserver stopped: %w", err)
	}
	cancelCtrl()
	cancelServe()
	// The apiserver waits up to its request timeout (60 s) for open watches;
	// the data is throw-away or kept on disk, so a bounded wait is enough.
	select {
	case <-runErr:
	case <-time.After(3 * time.Second):
	}
	return nil
}

// credentials are the admin's token, also written to the apiserver's token
// file (tokens), and the ServiceAccount signing key (saKey): both kept in
// dir, so that a restart accepts the tokens it handed out before.
func credentials(dir string) (token, tokens, saKey string, err error) {
	b, err := persistent(filepath.Join(dir, "admin-token"), func() ([]byte, error) {
		b := make([]byte, 24)
		_, err := rand.Read(b)
		return []byte(hex.EncodeToString(b)), err
	})
	if err != nil {
		return "", "", "", err
	}
	tokens = filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(string(b)+`,kapi-admin,kapi-admin,"system:masters"`+"\n"), 0o600); err != nil {
		return "", "", "", err
	}
	saKey, err = serviceAccountKey(dir)
	if err != nil {
		return "", "", "", err
	}
	return string(b), tokens, saKey, nil
}

// apiServer builds the kube-apiserver serving on ln; it returns the
// function that runs it until its context ends, and the loopback client
// configuration of the in-process controllers.
func apiServer(ctx context.Context, dir string, ln net.Listener, port int, tokens, saKey string) (run func(context.Context) error, loopback *rest.Config, err error) {
	completed, err := apiServerOptions(ctx, dir, ln, port, tokens, saKey)
	if err != nil {
		return nil, nil, err
	}
	config, err := app.NewConfig(completed)
	if err != nil {
		return nil, nil, fmt.Errorf("apiserver config: %w", err)
	}
	cc, err := config.Complete()
	if err != nil {
		return nil, nil, fmt.Errorf("apiserver config: %w", err)
	}
	server, err := app.CreateServerChain(cc)
	if err != nil {
		return nil, nil, fmt.Errorf("apiserver: %w", err)
	}
	prepared, err := server.PrepareRun()
	if err != nil {
		return nil, nil, fmt.Errorf("apiserver: %w", err)
	}
	return prepared.Run, server.GenericAPIServer.LoopbackClientConfig, nil
}

// apiServerOptions are kube-apiserver's flags for a test control plane:
// etcd on its socket, RBAC, the token file and the ServiceAccount key, on
// the listener already open.
func apiServerOptions(ctx context.Context, dir string, ln net.Listener, port int, tokens, saKey string) (options.CompletedOptions, error) {
	s := options.NewServerRunOptions()
	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	for _, f := range s.Flags().FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse([]string{
		"--etcd-servers=unix://etcd.sock",
		"--bind-address=127.0.0.1",
		"--cert-dir=" + filepath.Join(dir, "certs"),
		// /24 runs out after 253 Services.
		"--service-cluster-ip-range=10.0.0.0/16",
		// 127.0.0.1 is not a valid Endpoints address for the kubernetes Service.
		"--endpoint-reconciler-type=none",
		"--authorization-mode=RBAC",
		"--token-auth-file=" + tokens,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + saKey,
		"--service-account-signing-key-file=" + saKey,
		// No ServiceAccount controller runs, so no "default" ServiceAccount exists for Pods.
		"--disable-admission-plugins=ServiceAccount",
	}); err != nil {
		return options.CompletedOptions{}, fmt.Errorf("apiserver flags: %w", err)
	}
	s.SecureServing.Listener = ln
	s.SecureServing.BindPort = port
	if err := s.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
		return options.CompletedOptions{}, err
	}
	rest.SetDefaultWarningHandler(rest.NoWarnings{})
	completed, err := s.Complete(ctx)
	if err != nil {
		return options.CompletedOptions{}, fmt.Errorf("complete options: %w", err)
	}
	if errs := completed.Validate(); len(errs) > 0 {
		return options.CompletedOptions{}, fmt.Errorf("validate options: %w", errors.Join(errs...))
	}
	if completed.InformerName == nil {
		if completed.InformerName, err = cache.NewInformerName("kube-apiserver"); err != nil {
			return options.CompletedOptions{}, err
		}
	}
	return completed, nil
}

// quietKlog sends the apiserver's hundreds of startup lines to a file.
func quietKlog(path string) error {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	return fs.Parse([]string{"-logtostderr=false", "-alsologtostderr=false", "-stderrthreshold=FATAL", "-log_file=" + path, "-v=0"})
}

// closeBounded closes etcd, but does not wait more than two seconds for
// clients that linger: with fsync off, the data is already where a restart
// reads it, whether or not Close finished.
func closeBounded(e *embed.Etcd) {
	done := make(chan struct{})
	go func() { e.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
	}
}

func startEtcd(dir, logFile string) (*embed.Etcd, error) {
	cfg := embed.NewConfig()
	cfg.Name = "kapi"
	cfg.Dir = filepath.Join(dir, "etcd")
	// Unix sockets rather than free-port picking, which races. etcd takes the
	// socket from the URL's host part, so the names are relative to the
	// working directory, which run set to dir.
	client := url.URL{Scheme: "unix", Host: "etcd.sock"}
	peer := url.URL{Scheme: "unix", Host: "peer.sock"}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "error"
	cfg.LogOutputs = []string{logFile}
	cfg.UnsafeNoFsync = true // test data: speed over durability
	for _, s := range []string{"etcd.sock", "peer.sock"} {
		_ = os.Remove(filepath.Join(dir, s)) // left by a killed predecessor
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case <-time.After(30 * time.Second):
		e.Close()
		return nil, errors.New("etcd not ready within 30s")
	}
}

// listen opens the apiserver's port: the one of a previous run on this
// -dir if there was one (so clients reconnect), else a free one.
func listen(dir string) (net.Listener, int, error) {
	portFile := filepath.Join(dir, "port")
	addr := "127.0.0.1:0"
	if b, err := os.ReadFile(portFile); err == nil {
		addr = "127.0.0.1:" + strings.TrimSpace(string(b))
	}
	var ln net.Listener
	var err error
	for range 50 { // the previous process may still hold the port for a moment
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("listen on %s: %w", addr, err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	if err := os.WriteFile(portFile, []byte(strconv.Itoa(port)), 0o600); err != nil {
		return nil, 0, err
	}
	return ln, port, nil
}

// persistent reads a file, creating it with make the first time.
func persistent(path string, make func() ([]byte, error)) ([]byte, error) {
	if b, err := os.ReadFile(path); err == nil {
		return b, nil
	}
	b, err := make()
	if err != nil {
		return nil, err
	}
	return b, os.WriteFile(path, b, 0o600)
}

func serviceAccountKey(dir string) (string, error) {
	path := filepath.Join(dir, "sa.key")
	_, err := persistent(path, func() ([]byte, error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		der, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return nil, err
		}
		return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
	})
	return path, err
}

func waitReady(ctx context.Context, host, token string, runErr <-chan error) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, host+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-runErr:
			return fmt.Errorf("apiserver stopped before it was ready: %w", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return errors.New("apiserver not ready within 60s")
}

// writeKubeconfig writes the admin kubeconfig atomically. The serving
// certificate is self-signed for a test: clients skip its verification.
func writeKubeconfig(path, host, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kapi"] = &clientcmdapi.Cluster{Server: host, InsecureSkipTLSVerify: true}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["kapi"] = &clientcmdapi.Context{Cluster: "kapi", AuthInfo: "admin"}
	cfg.CurrentContext = "kapi"
	tmp := path + ".tmp"
	if err := clientcmd.WriteToFile(*cfg, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// startControllers runs the real controllers of kube-controller-manager
// that dcm's tests need, on the apiserver's loopback client.
func startControllers(ctx context.Context, loopback *rest.Config, names string) error {
	if strings.TrimSpace(names) == "" {
		return nil
	}
	cfg := rest.CopyConfig(loopback)
	cfg.QPS, cfg.Burst = 500, 1000
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	f := informers.NewSharedInformerFactory(client, 0)
	var runs []func()
	for _, name := range strings.Split(names, ",") {
		switch strings.TrimSpace(name) {
		case "endpointslice":
			c := endpointslice.NewController(ctx, f.Core().V1().Pods(), f.Core().V1().Services(), f.Core().V1().Nodes(),
				f.Discovery().V1().EndpointSlices(), 100, client, 100*time.Millisecond)
			runs = append(runs, func() { c.Run(ctx, 2) })
		case "deployment":
			c, err := deployment.NewDeploymentController(ctx, f.Apps().V1().Deployments(), f.Apps().V1().ReplicaSets(), f.Core().V1().Pods(), client)
			if err != nil {
				return fmt.Errorf("deployment controller: %w", err)
			}
			runs = append(runs, func() { c.Run(ctx, 2) })
		case "replicaset":
			c := replicaset.NewReplicaSetController(ctx, f.Apps().V1().ReplicaSets(), f.Core().V1().Pods(), client, 500)
			runs = append(runs, func() { c.Run(ctx, 2) })
		default:
			return fmt.Errorf("unknown controller %q", name)
		}
	}
	f.Start(ctx.Done())
	for _, r := range runs {
		go r()
	}
	return nil
}
