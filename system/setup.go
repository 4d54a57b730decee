package system

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/dcm-router/dcm/dcm/haproxy"
	"github.com/dcm-router/dcm/dcm/kube"
)

// NewLogger is dcm's log: text on stderr from level up.
func NewLogger(level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l})), nil
}

// clusterConfig is the client configuration of the real cluster: the
// kubeconfig named or in $KUBECONFIG, else the in-cluster one; nil when
// there is none, and dcm runs the demo.
func clusterConfig(kubeconfig string) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig != "" || os.Getenv("KUBECONFIG") != "" {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = kubeconfig
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	} else {
		cfg, err = rest.InClusterConfig()
		if errors.Is(err, rest.ErrNotInCluster) {
			return nil, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes config: %w", err)
	}
	return cfg, nil
}

// clients are dcm's typed and dynamic clients (OpenShift Routes are read
// as unstructured objects) for cfg, which is left as it is.
func clients(cfg *rest.Config) (kubernetes.Interface, dynamic.Interface, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "dcm"
	// client-go's default of 5 requests a second is for command-line tools.
	cfg.QPS, cfg.Burst = 50, 100
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("kubernetes dynamic client: %w", err)
	}
	return client, dyn, nil
}

// eventsClient writes dcm's Kubernetes Events, with a rate limit of its
// own: client-go's broadcaster folds repeats into series, but each object
// and reason still makes a write, and however many objects a change turns
// bad (a restart, a host taken over) those writes must neither flood the
// API server nor queue before the watches and status writes of clients.
func eventsClient(cfg *rest.Config) (kubernetes.Interface, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "dcm-events"
	cfg.QPS, cfg.Burst = 5, 25
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes events client: %w", err)
	}
	return client, nil
}

func workDir(dir string) (string, error) {
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("--work-dir not set and no user cache dir: %w", err)
		}
		dir = filepath.Join(base, "dcm")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("--work-dir: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("--work-dir: %w", err)
	}
	return dir, nil
}

func readCookieSecret(file string) (string, error) {
	if file == "" {
		return DefaultCookieSecret, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("--cookie-secret-file: %w", err)
	}
	secret := strings.TrimSpace(string(b))
	if secret == "" {
		return "", fmt.Errorf("--cookie-secret-file: %s is empty", file)
	}
	return secret, nil
}

func readBackendCA(file string) ([]byte, error) {
	if file == "" {
		return nil, nil
	}
	ca, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--default-backend-ca-file: %w", err)
	}
	if _, err := kube.ParseCA(ca); err != nil {
		return nil, fmt.Errorf("--default-backend-ca-file %s: %w", file, err)
	}
	return ca, nil
}

// observers calls each non-nil observer in turn.
func observers(all ...haproxy.Observer) haproxy.Observer {
	return func(command string, d time.Duration, err error) {
		for _, o := range all {
			if o != nil {
				o(command, d, err)
			}
		}
	}
}

func ignoreClosed(err error) error {
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// gatewayClient reads and writes the Gateway API's objects, with the rate
// of dcm's other clients.
func gatewayClient(cfg *rest.Config) (gwclient.Interface, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "dcm"
	cfg.QPS, cfg.Burst = 50, 100
	c, err := gwclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("gateway API client: %w", err)
	}
	return c, nil
}
