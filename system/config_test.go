package system

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/haproxy"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		change  func(*Config)
		wantErr string
	}{
		{"defaults", func(*Config) {}, ""},
		{"slots", func(c *Config) { c.Mode, c.Slots = dcm.ModeSlots, 1 }, ""},
		{"no slots", func(c *Config) { c.Mode, c.Slots = dcm.ModeSlots, 0 }, "--slots"},
		{"unknown mode", func(c *Config) { c.Mode = "fast" }, "unknown mode"},
		{"pool", func(c *Config) { c.PoolSize = -1 }, "--pool-size"},
		{"sticky pool", func(c *Config) { c.StickyPoolSize = 10001 }, "--sticky-pool-size"},
		{"gateway pool", func(c *Config) { c.GatewayPoolSize = -1 }, "--gateway-pool-size"},
		{"history", func(c *Config) { c.EventHistory = 0 }, "--event-history"},
		{"access log", func(c *Config) { c.AccessLog = "syslog://127.0.0.1:514" }, ""},
		{"access log unknown", func(c *Config) { c.AccessLog = "on" }, "--access-log"},
		{"access log no port", func(c *Config) { c.AccessLog = "syslog://127.0.0.1" }, "--access-log"},
		{"redirect port", func(c *Config) { c.HTTPSRedirectPort = 70000 }, "--https-redirect-port"},
		{"subdomain", func(c *Config) { c.RouteSubdomain = "Apps;x" }, "--route-subdomain"},
		{"selectors", func(c *Config) { c.RouteSelector, c.NamespaceSelector = "shard=internal", "router in (a,b)" }, ""},
		{"route selector", func(c *Config) { c.RouteSelector = "shard==a==b" }, "--route-selector"},
		{"namespace selector", func(c *Config) { c.NamespaceSelector = "a b" }, "--namespace-selector"},
		{"no observation", func(c *Config) { c.ObserveEvery = 0 }, "ObserveEvery"},
		{"negative retry", func(c *Config) { c.RetryReloadAfter = -time.Second }, "RetryReloadAfter"},
		{"default certificate", func(c *Config) { c.DefaultSSLCertificate = "openshift-ingress/router-certs-default" }, ""},
		{"default certificate without namespace", func(c *Config) { c.DefaultSSLCertificate = "router-certs" }, "--default-ssl-certificate"},
		{"default certificate of a route", func(c *Config) { c.DefaultSSLCertificate = "route:ns/name" }, "--default-ssl-certificate"},
		{"default certificate hostile", func(c *Config) { c.DefaultSSLCertificate = "ns/a\nshow info" }, "--default-ssl-certificate"},
		{"default certificate without https", func(c *Config) { c.DefaultSSLCertificate, c.HTTPSBind = "ns/def", "" }, "--https-bind"},
		{"router name", func(c *Config) { c.RouterName, c.RouterCanonicalHostname = "internal", "apps.example.com" }, ""},
		{"empty router name", func(c *Config) { c.RouterName = "" }, "--router-name"},
		{"router name hostile", func(c *Config) { c.RouterName = "a b\nc" }, "--router-name"},
		{"canonical hostname", func(c *Config) { c.RouterCanonicalHostname = "Apps_X" }, "--router-canonical-hostname"},
		{"publish service", func(c *Config) { c.PublishService = "dcm-system/dcm" }, ""},
		{"publish service without namespace", func(c *Config) { c.PublishService = "dcm" }, "--publish-service"},
		{"publish address", func(c *Config) { c.PublishAddresses = []string{"192.0.2.1", "lb.example.com"} }, ""},
		{"publish address hostile", func(c *Config) { c.PublishAddresses = []string{"a b"} }, "--publish-address"},
		{"lease name", func(c *Config) { c.LeaderElectionLease = "Bad_Name" }, "--leader-election-lease"},
		{"renew beyond lease", func(c *Config) { c.RenewDeadline = 20 * time.Second }, "--leader-election-renew-deadline"},
		{"no election, durations unchecked", func(c *Config) { c.LeaderElect, c.LeaseDuration = false, 0 }, ""},
		{"peers", func(c *Config) { c.Peers = []string{"http://127.0.0.1:8080", "https://dcm-1.example:8080"} }, ""},
		{"peer without port", func(c *Config) { c.Peers = []string{"http://dcm-1"} }, "--peers"},
		{"peer with a path", func(c *Config) { c.Peers = []string{"http://dcm-1:8080/x"} }, "--peers"},
		{"peer service", func(c *Config) { c.PeerService = "dcm-system/dcm:api" }, ""},
		{"peer service without namespace", func(c *Config) { c.PeerService = "dcm" }, "--peer-service"},
		{"peer service hostile", func(c *Config) { c.PeerService = "dcm-system/Dcm_X" }, "--peer-service"},
	}
	for _, tt := range tests {
		c := Defaults()
		tt.change(&c)
		err := c.Validate()
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%s: Validate() = %v, want an error containing %q", tt.name, err, tt.wantErr)
		}
	}
}

// TestCaps: what each mode gets on Debian's 2.6, as the engine is given it.
func TestCaps(t *testing.T) {
	v26 := haproxy.Version{Major: 2, Minor: 6, Patch: 12}
	gw := dcm.GatewayBinds{HTTPPorts: []int{80}, HTTPSPorts: []int{443}}
	for i := range 16 {
		gw.Addresses = append(gw.Addresses, fmt.Sprintf("127.0.20.%d", i))
	}
	tests := []struct {
		name   string
		change func(*Config)
		want   dcm.Caps
	}{
		{"defaults", func(*Config) {}, dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 10, StickyPool: 10, RuntimeCerts: true}},
		{"no pool, no sticky pool", func(c *Config) { c.PoolSize = 0 }, dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, RuntimeCerts: true}},
		{"gateway spares", func(c *Config) { c.GatewayAddresses = []string{"127.0.20.0/28"} },
			dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 10, StickyPool: 10, GatewayPool: 64, RuntimeCerts: true, Gateway: gw}},
		{"gateway, no pool", func(c *Config) { c.GatewayAddresses, c.PoolSize = []string{"127.0.20.0/28"}, 0 },
			dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, RuntimeCerts: true, Gateway: gw}},
		{"slots", func(c *Config) { c.Mode = dcm.ModeSlots }, dcm.Caps{Mode: dcm.ModeSlots, AddServer: true, Slots: 8}},
		{"reload", func(c *Config) { c.Mode = dcm.ModeReload }, dcm.Caps{Mode: dcm.ModeReload, AddServer: true}},
	}
	for _, tt := range tests {
		c := Defaults()
		tt.change(&c)
		if got := c.caps(v26); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: caps %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

// TestLease: where the status writers' Lease is, and its name.
func TestLease(t *testing.T) {
	if _, err := os.Stat("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil {
		t.Skip("running in a pod: its namespace would win")
	}
	tests := []struct {
		name      string
		change    func(*Config)
		podNS     string
		wantNS    string
		wantLease string
	}{
		{"defaults outside a pod", func(*Config) {}, "", "dcm-system", "dcm-status-dcm"},
		{"the pod's namespace", func(*Config) {}, "ingress", "ingress", "dcm-status-dcm"},
		{"the flag wins", func(c *Config) { c.LeaderElectionNamespace = "ops" }, "ingress", "ops", "dcm-status-dcm"},
		{"derived from the router name", func(c *Config) { c.RouterName = "internal" }, "", "dcm-system", "dcm-status-internal"},
		{"named", func(c *Config) { c.LeaderElectionLease = "mine" }, "", "dcm-system", "mine"},
		{"no election", func(c *Config) { c.LeaderElect = false }, "ingress", "", "dcm-status-dcm"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("POD_NAMESPACE", tt.podNS)
			c := Defaults()
			tt.change(&c)
			if got := c.leaseNamespace(); got != tt.wantNS {
				t.Errorf("leaseNamespace() = %q, want %q", got, tt.wantNS)
			}
			if got := c.leaseName(); got != tt.wantLease {
				t.Errorf("leaseName() = %q, want %q", got, tt.wantLease)
			}
		})
	}
}
