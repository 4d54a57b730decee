package system

import (
	"context"
	"net/http"
	"time"

	"github.com/spf13/pflag"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/kube"
	"github.com/dcm-router/dcm/server/fleet"
)

// fleetFlags are the flags of the fleet view (server/fleet).
func fleetFlags(fs *pflag.FlagSet, c *Config) {
	fs.StringSliceVar(&c.Peers, "peers", c.Peers, "portals of every dcm replica (http(s)://host:port, comma-separated; the same list on each, the replica's own is recognised by --listen) for the portal's fleet view; read at start")
	fs.StringVar(&c.PeerService, "peer-service", c.PeerService, "Service (namespace/name[:port-name]) in front of the dcm replicas: each ready endpoint of its EndpointSlices is a replica's portal for the fleet view, the pod named $POD_NAME (else the host name) is this one (default: none)")
}

// validateFleet checks --peers and --peer-service.
func (c Config) validateFleet() error {
	if _, err := fleet.ParseStatic(c.Peers, "127.0.0.1:1", func(string) bool { return false }); err != nil {
		return err
	}
	if c.PeerService != "" {
		ns, name, _, err := kube.ParsePeerService(c.PeerService)
		if err != nil {
			return err
		}
		if err := dcm.ValidateDNSLabel("--peer-service namespace", ns); err != nil {
			return err
		}
		if err := dcm.ValidateDNSLabel("--peer-service name", name); err != nil {
			return err
		}
	}
	return nil
}

// peers joins the static list and the Service's endpoints.
type peers struct {
	static fleet.Static
	slices *kube.PeerSlices // nil without --peer-service
}

func (p peers) Peers() []fleet.Peer {
	out := append([]fleet.Peer(nil), p.static...)
	if p.slices != nil {
		for _, k := range p.slices.Peers() {
			out = append(out, fleet.Peer{Name: k.Name, URL: k.URL, Self: k.Self})
		}
	}
	return out
}

// wireFleet makes the fleet collector when --peers or --peer-service
// names the replicas (nil otherwise: the view lists this one alone).
func (s *System) wireFleet() error {
	if len(s.cfg.Peers) == 0 && s.cfg.PeerService == "" {
		return nil
	}
	static, err := fleet.ParseStatic(s.cfg.Peers, s.PortalAddr(), fleet.LocalAddress)
	if err != nil {
		return err
	}
	p := peers{static: static}
	if s.cfg.PeerService != "" {
		if s.client == nil {
			s.log.Warn("--peer-service needs Kubernetes: the fleet view lists --peers only")
		} else {
			ns, name, port, _ := kube.ParsePeerService(s.cfg.PeerService)
			p.slices = kube.NewPeerSlices(s.client, ns, name, port, kube.SelfPod())
			s.peerSlices = p.slices
		}
	}
	client := &http.Client{Timeout: fleet.DefaultTimeout, Transport: &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: time.Minute}}
	s.fleet = fleet.New(p, s.engine.Status, "http://"+s.PortalAddr(), client)
	return nil
}

// runPeerSlices watches the peer Service until ctx ends.
func (s *System) runPeerSlices(ctx context.Context) error { return s.peerSlices.Run(ctx) }
