package kube

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// DefaultRouterName is the name dcm gives itself in a Route's
// status.ingress when --router-name is not given.
const DefaultRouterName = "dcm"

// ElectionOptions make the status writers of several replicas elect one
// of them with a coordination.k8s.io Lease: every replica serves, only the
// leader writes Route and Ingress status, so that replicas never race each
// other's writes (and the API server sees one writer, not N).
type ElectionOptions struct {
	// Client reads and writes the Lease.
	Client kubernetes.Interface
	// Namespace and Name of the Lease (LeaseName derives it).
	Namespace, Name string
	// Identity names this replica in the Lease (Identity makes one).
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod are client-go's
	// (defaults 15s, 10s, 2s, as kube-controller-manager's).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// LeaseName is the Lease of the status writers of routerName: replicas of
// one router share it, routers of other names (other shards) elect their
// own leader, as each writes only its own entry of a Route's status.
func LeaseName(routerName string) string { return "dcm-status-" + routerName }

// Identity is this replica's name in the Lease: the pod's name
// ($POD_NAME, else the host name, which is the pod's in a cluster) and a
// random suffix, since two processes on one host (tests, a restart that
// overlaps its predecessor) must not take each other for the holder.
func Identity() string {
	name := os.Getenv("POD_NAME")
	if name == "" {
		name, _ = os.Hostname()
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go ≥ 1.24)
	return name + "_" + hex.EncodeToString(b)
}

// PodNamespace is the namespace dcm runs in: $POD_NAMESPACE, else the
// ServiceAccount's, else "" (not in a pod).
func PodNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// ElectLeader makes Run elect a leader among the replicas before this one
// writes any status; without it, the Source writes status at once. Call
// before Run. The error is client-go's refusal of the configuration.
func (s *Source) ElectLeader(o ElectionOptions) error {
	if o.LeaseDuration <= 0 {
		o.LeaseDuration = 15 * time.Second
	}
	if o.RenewDeadline <= 0 || o.RenewDeadline >= o.LeaseDuration {
		o.RenewDeadline = o.LeaseDuration * 2 / 3
	}
	if o.RetryPeriod <= 0 || o.RetryPeriod >= o.RenewDeadline {
		o.RetryPeriod = o.RenewDeadline / 5
	}
	lease := o.Namespace + "/" + o.Name
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name},
			Client:     o.Client.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: o.Identity},
		},
		Name:          o.Name,
		LeaseDuration: o.LeaseDuration, RenewDeadline: o.RenewDeadline, RetryPeriod: o.RetryPeriod,
		// A replica that stops (rollout, scale-in) hands over at once
		// instead of leaving the others to wait out the lease.
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			// client-go calls OnStartedLeading in a goroutine of its own,
			// with a context that ends when renewing stops: that goroutine
			// alone sets and clears leading, so a quick loss can never be
			// overtaken by a late start. Winning queues every object, since
			// what changed while another replica led (or nobody did) was
			// not written here.
			OnStartedLeading: func(term context.Context) {
				s.log.Info("leading: this replica writes status", "lease", lease, "identity", o.Identity)
				s.leading.Store(true)
				s.queueAllStatus()
				<-term.Done()
				s.leading.Store(false)
				s.log.Info("no longer leading: this replica stops writing status", "lease", lease)
			},
			// Required by client-go; leading is cleared above.
			OnStoppedLeading: func() {},
			OnNewLeader: func(id string) {
				if id != o.Identity {
					s.log.Info("status writer elected", "leader", id, "lease", lease)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("kube: leader election: %w", err)
	}
	s.election = le
	return nil
}

// Leading says whether this replica writes status now: it holds the
// Lease, or no election was asked for.
func (s *Source) Leading() bool { return s.leading.Load() }

// runElection campaigns for the Lease until ctx ends. Losing it (renewal
// failed: the API server unreachable, a long pause) only stops the
// writes: serving goes on, and the replica campaigns again.
func (s *Source) runElection(ctx context.Context) {
	for ctx.Err() == nil {
		s.election.Run(ctx) // returns when the lease is lost or ctx ends
	}
}

// queueAllStatus queues every Route and Ingress for a status check.
func (s *Source) queueAllStatus() {
	if s.rw.status != nil {
		for _, k := range s.routeKeys() {
			s.rw.status.Add(k)
		}
	}
	if s.is != nil {
		for _, k := range s.ingressKeys() {
			s.is.queue.Add(k)
		}
	}
	if s.gw.status != nil {
		for _, k := range s.gatewayStatusKeys() {
			s.gw.status.Add(k)
		}
	}
}
