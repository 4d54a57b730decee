package system

import (
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
	tests := []struct {
		name   string
		change func(*Config)
		want   dcm.Caps
	}{
		{"defaults", func(*Config) {}, dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 10, StickyPool: 10, RuntimeCerts: true}},
		{"no pool, no sticky pool", func(c *Config) { c.PoolSize = 0 }, dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, RuntimeCerts: true}},
		{"slots", func(c *Config) { c.Mode = dcm.ModeSlots }, dcm.Caps{Mode: dcm.ModeSlots, AddServer: true, Slots: 8}},
		{"reload", func(c *Config) { c.Mode = dcm.ModeReload }, dcm.Caps{Mode: dcm.ModeReload, AddServer: true}},
	}
	for _, tt := range tests {
		c := Defaults()
		tt.change(&c)
		if got := c.caps(v26); got != tt.want {
			t.Errorf("%s: caps %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
