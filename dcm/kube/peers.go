package kube

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Peer is one dcm replica's portal, found in the EndpointSlices of a
// Service in front of the replicas (--peer-service).
type Peer struct {
	Name string // the pod's name, else the address
	URL  string // http://address:port
	Self bool   // the pod is this replica's
}

// PeerSlices lists the ready endpoints of one Service's EndpointSlices as
// dcm replicas: every ready endpoint is a replica's portal.
type PeerSlices struct {
	factory informers.SharedInformerFactory
	lister  cache.Indexer
	synced  cache.InformerSynced
	service string
	port    string
	self    string
}

// NewPeerSlices watches the EndpointSlices of namespace/service; port
// names the portal's port in the Service ("" takes its only port); self is
// this replica's pod name (SelfPod).
func NewPeerSlices(client kubernetes.Interface, namespace, service, port, self string) *PeerSlices {
	f := informers.NewSharedInformerFactoryWithOptions(client, 10*time.Minute, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = labels.Set{discoveryv1.LabelServiceName: service}.String()
		}))
	inf := f.Discovery().V1().EndpointSlices().Informer()
	return &PeerSlices{factory: f, lister: inf.GetIndexer(), synced: inf.HasSynced, service: service, port: port, self: self}
}

// Run watches until ctx ends.
func (p *PeerSlices) Run(ctx context.Context) error {
	p.factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), p.synced) {
		return ctx.Err()
	}
	<-ctx.Done()
	p.factory.Shutdown()
	return nil
}

// Peers are the ready endpoints now, sorted by name.
func (p *PeerSlices) Peers() []Peer {
	var out []Peer
	seen := map[string]bool{}
	for _, obj := range p.lister.List() {
		s, ok := obj.(*discoveryv1.EndpointSlice)
		if !ok {
			continue
		}
		port, ok := portalPort(s, p.port)
		if !ok {
			continue
		}
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready || len(ep.Addresses) == 0 {
				continue
			}
			addr := ep.Addresses[0]
			u := "http://" + net.JoinHostPort(addr, strconv.Itoa(int(port)))
			if seen[u] {
				continue
			}
			seen[u] = true
			name := addr
			if ep.TargetRef != nil && ep.TargetRef.Kind == "Pod" {
				name = ep.TargetRef.Name
			}
			out = append(out, Peer{Name: name, URL: u, Self: p.self != "" && name == p.self})
		}
	}
	slices.SortFunc(out, func(a, b Peer) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// portalPort is the slice's port named name (the only one for "").
func portalPort(s *discoveryv1.EndpointSlice, name string) (int32, bool) {
	if name == "" && len(s.Ports) == 1 && s.Ports[0].Port != nil {
		return *s.Ports[0].Port, true
	}
	for _, p := range s.Ports {
		if p.Name != nil && *p.Name == name && p.Port != nil {
			return *p.Port, true
		}
	}
	return 0, false
}

// SelfPod is this replica's pod name: $POD_NAME, else the host name
// (which is the pod's in a cluster).
func SelfPod() string {
	if name := os.Getenv("POD_NAME"); name != "" {
		return name
	}
	name, _ := os.Hostname()
	return name
}

// ParsePeerService reads --peer-service: namespace/name[:port-name].
func ParsePeerService(v string) (namespace, name, port string, err error) {
	rest, port, _ := strings.Cut(v, ":")
	namespace, name, ok := strings.Cut(rest, "/")
	if !ok || namespace == "" || name == "" {
		return "", "", "", fmt.Errorf("--peer-service %q: want namespace/name[:port-name]", v)
	}
	return namespace, name, port, nil
}
