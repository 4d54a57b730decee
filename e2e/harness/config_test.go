package harness

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/system"
)

// TestStartRunsShippedDefaults: a stack runs what dcm runs with no flags,
// but for its environment (ports, work directory, the demo, its Lease); what a test
// names is the only other difference, and the engine runs with the
// capabilities main derives from that configuration.
func TestStartRunsShippedDefaults(t *testing.T) {
	environment := []string{"HTTPBind", "HTTPSBind", "WorkDir", "Listen", "Demo", "LeaderElectionLease"}
	tests := []struct {
		name   string
		config func(*system.Config)
		named  []string
		caps   dcm.Caps
	}{
		{name: "defaults", named: nil,
			caps: dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 10, StickyPool: 10, RuntimeCerts: true}},
		{name: "slots named", config: func(c *system.Config) { c.Mode, c.Slots = dcm.ModeSlots, 1 }, named: []string{"Mode", "Slots"},
			caps: dcm.Caps{Mode: dcm.ModeSlots, AddServer: true, Slots: 1}},
		{name: "observation named", config: func(c *system.Config) { c.ObserveEvery = time.Second }, named: []string{"ObserveEvery"},
			caps: dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 10, StickyPool: 10, RuntimeCerts: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Start(t, Options{Config: tt.config})
			got := ConfigDiff(system.Defaults(), s.System.Config())
			want := append(slices.Clone(environment), tt.named...)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("the running dcm differs from its defaults in %v, want %v", got, want)
			}
			if caps := s.Engine.Snapshot().Caps; !reflect.DeepEqual(caps, tt.caps) {
				t.Errorf("engine caps %+v, want %+v", caps, tt.caps)
			}
		})
	}
}

// TestUnnamed: a difference from the defaults that is neither the
// environment's nor named by the test is what Start refuses.
func TestUnnamed(t *testing.T) {
	d := system.Defaults()
	changed := func(f func(*system.Config)) system.Config {
		c := d
		f(&c)
		return c
	}
	tests := []struct {
		name  string
		cfg   system.Config
		named []string
		want  []string
	}{
		{"defaults", d, nil, nil},
		{"environment", changed(func(c *system.Config) { c.HTTPBind, c.WorkDir, c.Demo = "127.0.0.1:1", "/tmp/x", true }), nil, nil},
		{"named", changed(func(c *system.Config) { c.PoolSize = 2 }), []string{"PoolSize"}, nil},
		{"a harness default", changed(func(c *system.Config) { c.IdlePollEvery = 50 * time.Millisecond }), nil, []string{"IdlePollEvery"}},
		{"one named, one not", changed(func(c *system.Config) { c.PoolSize, c.ObserveEvery = 2, time.Second }), []string{"PoolSize"}, []string{"ObserveEvery"}},
	}
	for _, tt := range tests {
		if got := Unnamed(d, tt.cfg, tt.named); !slices.Equal(got, tt.want) {
			t.Errorf("%s: Unnamed = %v, want %v", tt.name, got, tt.want)
		}
	}
}
