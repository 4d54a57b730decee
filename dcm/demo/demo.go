// Package demo is dcm's embedded default when no cluster is configured: an
// in-memory Kubernetes API (client-go's fake clientset, used as a real
// in-process store with watches) and a workload simulator that plays the
// deployment and replicaset controllers, the kubelet and the endpointslice
// controller at once. Its pods are real HTTP servers on distinct loopback
// addresses, so an HAProxy driven by dcm really routes to them, and dcm/kube
// watches this clientset exactly as it would watch a real cluster.
package demo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/dcm-router/dcm/dcm/demo/localpod"
)

// Defaults of Options.
const (
	DefaultReadinessDelay   = 500 * time.Millisecond
	DefaultPreStopDelay     = time.Second
	DefaultTerminationGrace = 30 * time.Second
	DefaultAddrPrefix       = "127.0."
	DefaultPodPort          = 8080
)

// Options configures the demo cluster. Zero values take the defaults.
type Options struct {
	// Apps are the workloads the cluster starts with. nil means DefaultApps();
	// an empty, non-nil slice starts an empty cluster.
	Apps []App
	// ReadinessDelay is how long a listening pod waits before it turns Ready.
	ReadinessDelay time.Duration
	// PreStopDelay is how long a terminating pod keeps accepting new
	// connections (a preStop sleep, while endpoint removal propagates).
	PreStopDelay time.Duration
	// TerminationGrace bounds the whole termination of a pod (preStop plus
	// waiting for in-flight requests), as terminationGracePeriodSeconds does.
	TerminationGrace time.Duration
	// AddrPrefix holds the first two octets of the pods' addresses, with a
	// trailing dot: pods get AddrPrefix+"x.y" with x from 1 and y in 1..254.
	AddrPrefix string
	// PodPort is the port every pod listens on (the "http" container port).
	PodPort int
	// Showcase adds one route of every kind beside DefaultApps (whose "web"
	// and "shop" Services it routes to): edge, passthrough and reencrypt
	// Ingresses with certificates generated at start, pods that serve TLS,
	// an 80/20 canary, a sticky route, and an OpenShift Route that Dynamic
	// serves. Examples lists them.
	Showcase bool
	// Seed makes pod names and template hashes' random parts reproducible;
	// 0 seeds from the clock.
	Seed uint64
}

// App is one workload of the demo: a Deployment, a Service in front of it and
// an Ingress rule routing host+path (Prefix) to the Service's "http" port.
type App struct {
	Namespace string
	Name      string
	Host      string
	Path      string
	Replicas  int32
}

// DefaultApps are three apps in namespace "demo": two hosts, and a second app
// under /api of the shop host so that path routing shows.
func DefaultApps() []App {
	return []App{
		{Namespace: "demo", Name: "web", Host: "web.demo.localhost", Path: "/", Replicas: 2},
		{Namespace: "demo", Name: "shop", Host: "shop.demo.localhost", Path: "/", Replicas: 2},
		{Namespace: "demo", Name: "api", Host: "shop.demo.localhost", Path: "/api", Replicas: 1},
	}
}

// PodInfo is what the simulator knows about one of its pods.
type PodInfo struct {
	Namespace string
	Name      string
	// App is the Deployment the pod belongs to.
	App string
	// IP is empty until the pod's server listens; Addr is IP:port.
	IP   string
	Addr string
	// Phase is Pending until the server listens, then Running.
	Phase string
	// Ready is the pod's Ready condition. It stays true while a terminating
	// pod still serves, which is what EndpointSlices call "serving".
	Ready       bool
	Terminating bool
	Created     time.Time
	// InFlight counts the requests the pod's server is handling now.
	InFlight int
}

// Cluster is the in-memory cluster and its simulator.
type Cluster struct {
	client  *fake.Clientset
	dyn     dynamic.Interface // serves the showcase's OpenShift Route; nil without one
	sim     *simulator
	log     *slog.Logger
	started atomic.Bool
}

// New builds the cluster and stores the apps' objects (Namespaces,
// Deployments, Services, Ingresses); pods appear once Run starts.
func New(opts Options, logger *slog.Logger) (*Cluster, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	names := newNameGen(opts.Seed)
	client := fake.NewClientset()
	installReactors(client, names)

	logger = logger.With("component", "demo")
	c := &Cluster{client: client, log: logger}
	c.sim, err = newSimulator(client, opts, names, logger)
	if err != nil {
		return nil, err
	}
	// A fake clientset never blocks or times out, so no caller context is
	// needed to seed it.
	if err := seed(context.Background(), client, opts); err != nil {
		return nil, fmt.Errorf("seed demo cluster: %w", err)
	}
	if opts.Showcase {
		if c.dyn, err = seedShowcase(context.Background(), client, opts, len(opts.Apps)); err != nil {
			return nil, fmt.Errorf("seed demo showcase: %w", err)
		}
	}
	return c, nil
}

// Client is the clientset to hand to dcm/kube (and to tests that act on the
// cluster as a user would).
func (c *Cluster) Client() kubernetes.Interface { return c.client }

// Dynamic is the dynamic client serving the cluster's OpenShift Routes (the
// client's discovery lists them then), nil when the cluster has none.
func (c *Cluster) Dynamic() dynamic.Interface { return c.dyn }

// Run runs the simulator until ctx is done, then stops every pod server
// (in-flight requests get a few seconds) and returns. It may be called once.
// Objects in the clientset are no longer maintained after Run returns.
func (c *Cluster) Run(ctx context.Context) error {
	if !c.started.CompareAndSwap(false, true) {
		return errors.New("demo: Run called twice")
	}
	return c.sim.run(ctx)
}

// Pods lists the simulator's pods, sorted by name; an empty namespace or app
// matches any.
func (c *Cluster) Pods(namespace, app string) []PodInfo {
	return c.sim.podInfos(namespace, app)
}

// Scale sets a Deployment's replicas through the scale subresource, the way
// dcm/kube and kubectl scale do.
func (c *Cluster) Scale(ctx context.Context, namespace, name string, replicas int32) error {
	deployments := c.client.AppsV1().Deployments(namespace)
	sc, err := deployments.GetScale(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get scale of deployment %s/%s: %w", namespace, name, err)
	}
	sc = &autoscalingv1.Scale{ObjectMeta: sc.ObjectMeta, Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}
	if _, err := deployments.UpdateScale(ctx, name, sc, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("scale deployment %s/%s to %d: %w", namespace, name, replicas, err)
	}
	return nil
}

func (o Options) withDefaults() (Options, error) {
	if o.Apps == nil {
		o.Apps = DefaultApps()
	}
	if o.ReadinessDelay == 0 {
		o.ReadinessDelay = DefaultReadinessDelay
	}
	if o.PreStopDelay == 0 {
		o.PreStopDelay = DefaultPreStopDelay
	}
	if o.TerminationGrace == 0 {
		o.TerminationGrace = DefaultTerminationGrace
	}
	if o.AddrPrefix == "" {
		o.AddrPrefix = DefaultAddrPrefix
	}
	if o.PodPort == 0 {
		o.PodPort = DefaultPodPort
	}
	if o.ReadinessDelay < 0 || o.PreStopDelay < 0 || o.TerminationGrace < 0 {
		return o, errors.New("demo options: delays must not be negative")
	}
	if o.PodPort < 1 || o.PodPort > math.MaxUint16 {
		return o, fmt.Errorf("demo options: pod port %d out of range", o.PodPort)
	}
	if _, err := localpod.ParsePrefix(o.AddrPrefix); err != nil {
		return o, fmt.Errorf("demo options: %w", err)
	}
	seen := map[string]bool{}
	for i, a := range o.Apps {
		if err := a.validate(); err != nil {
			return o, fmt.Errorf("demo options: apps[%d]: %w", i, err)
		}
		key := a.Namespace + "/" + a.Name
		if seen[key] {
			return o, fmt.Errorf("demo options: apps[%d]: duplicate app %s", i, key)
		}
		seen[key] = true
	}
	o.Apps = slices.Clone(o.Apps)
	return o, nil
}

func (a App) validate() error {
	if errs := validation.IsDNS1123Label(a.Namespace); len(errs) > 0 {
		return fmt.Errorf("namespace %q: %s", a.Namespace, strings.Join(errs, "; "))
	}
	// The app name becomes a Service name, which must be a DNS-1035 label.
	if errs := validation.IsDNS1035Label(a.Name); len(errs) > 0 {
		return fmt.Errorf("name %q: %s", a.Name, strings.Join(errs, "; "))
	}
	if a.Host != "" {
		if errs := validation.IsDNS1123Subdomain(a.Host); len(errs) > 0 {
			return fmt.Errorf("host %q: %s", a.Host, strings.Join(errs, "; "))
		}
	}
	if !strings.HasPrefix(a.Path, "/") {
		return fmt.Errorf("path %q: must start with /", a.Path)
	}
	if a.Replicas < 0 {
		return fmt.Errorf("replicas %d: must not be negative", a.Replicas)
	}
	return nil
}
