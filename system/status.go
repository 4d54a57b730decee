package system

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/dcm-router/dcm/dcm/kube"
)

// validateStatus checks the flags of status writes.
func (c Config) validateStatus() error {
	if errs := validation.IsDNS1123Label(c.RouterName); len(errs) > 0 {
		// It names the Lease too, and OpenShift's routers spell it so.
		return fmt.Errorf("--router-name %q: %s", c.RouterName, strings.Join(errs, "; "))
	}
	if c.RouterCanonicalHostname != "" {
		if errs := validation.IsDNS1123Subdomain(c.RouterCanonicalHostname); len(errs) > 0 {
			return fmt.Errorf("--router-canonical-hostname %q: %s", c.RouterCanonicalHostname, strings.Join(errs, "; "))
		}
	}
	if c.PublishService != "" {
		ns, name, ok := strings.Cut(c.PublishService, "/")
		if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return fmt.Errorf("--publish-service %q: want namespace/name of a Service", c.PublishService)
		}
	}
	for _, a := range c.PublishAddresses {
		if a == "" || strings.ContainsAny(a, " /") {
			return fmt.Errorf("--publish-address %q: want an IP address or a host name", a)
		}
	}
	if c.LeaderElectionLease != "" {
		if errs := validation.IsDNS1123Subdomain(c.LeaderElectionLease); len(errs) > 0 {
			return fmt.Errorf("--leader-election-lease %q: %s", c.LeaderElectionLease, strings.Join(errs, "; "))
		}
	}
	if c.LeaderElect && !(c.LeaderElectRetryPeriod > 0 && c.LeaderElectRetryPeriod < c.RenewDeadline && c.RenewDeadline < c.LeaseDuration) {
		return fmt.Errorf("--leader-election-retry-period %s < --leader-election-renew-deadline %s < --leader-election-lease-duration %s does not hold",
			c.LeaderElectRetryPeriod, c.RenewDeadline, c.LeaseDuration)
	}
	return nil
}

// leaseNamespace is where the Lease is: the flag's, the pod's, else
// deploy/'s namespace; "" without an election.
func (c Config) leaseNamespace() string {
	switch {
	case !c.LeaderElect:
		return ""
	case c.LeaderElectionNamespace != "":
		return c.LeaderElectionNamespace
	case kube.PodNamespace() != "":
		return kube.PodNamespace()
	}
	return "dcm-system"
}

// leaseName is the Lease's name: the flag's, else derived from the
// router name.
func (c Config) leaseName() string {
	if c.LeaderElectionLease != "" {
		return c.LeaderElectionLease
	}
	return kube.LeaseName(c.RouterName)
}

// wireStatus sets up the status writers of src against a real cluster:
// Ingress status when something is published, and the leader election.
// writeStatus is false when dcm may not hold the Lease: then no replica
// can know it writes alone, so this one writes nothing.
func (s *System) wireStatus(src *kube.Source) error {
	if s.cfg.PublishService != "" || len(s.cfg.PublishAddresses) > 0 {
		src.WriteIngressStatus(kube.IngressStatusOptions{Client: s.client, Service: s.cfg.PublishService, Addresses: s.cfg.PublishAddresses})
	}
	if !s.cfg.LeaderElect {
		return nil
	}
	return src.ElectLeader(kube.ElectionOptions{Client: s.client, Namespace: s.cfg.leaseNamespace(), Name: s.cfg.leaseName(),
		Identity: kube.Identity(), LeaseDuration: s.cfg.LeaseDuration, RenewDeadline: s.cfg.RenewDeadline,
		RetryPeriod: s.cfg.LeaderElectRetryPeriod})
}
