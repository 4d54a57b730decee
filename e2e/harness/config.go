package harness

import (
	"crypto/rand"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/dcm-router/dcm/internal/testkit"
	"github.com/dcm-router/dcm/system"
)

// environmentField says which options a test's stack cannot share with
// dcm's defaults: stacks run side by side and one after the other on one
// machine, so each gets free loopback ports and a work directory of its
// own; and it runs the demo cluster unless the test brings a real one.
// Each elects its status writer with a Lease of its own too: stacks of
// different tests that share the control plane are not replicas of one
// router (a test that wants replicas names one Lease for them).
func environmentField(name string) bool {
	switch name {
	case "Listen", "HTTPBind", "HTTPSBind", "WorkDir", "Demo", "LeaderElectionLease":
		return true
	}
	return false
}

// EffectiveConfig is the configuration Start runs: system.Defaults, the
// environment, then the test's Config. It is logged, naming what the test
// changed, and the test fails if anything else differs from the defaults.
func EffectiveConfig(tb testing.TB, o Options) system.Config {
	tb.Helper()
	env := system.Defaults()
	env.Listen, env.HTTPBind, env.HTTPSBind = "127.0.0.1:0", testkit.FreeAddr(tb), testkit.FreeAddr(tb)
	env.WorkDir = testkit.ShortDir(tb)
	env.LeaderElectionLease = "dcm-status-" + strings.ToLower(rand.Text()[:12])
	env.Demo = o.Kubernetes == nil && o.Source == nil && o.Cluster == nil
	cfg := env
	if o.Config != nil {
		o.Config(&cfg)
	}
	named := ConfigDiff(env, cfg)
	if extra := Unnamed(system.Defaults(), cfg, named); len(extra) > 0 {
		tb.Fatalf("dcm would run with %v unlike its defaults, and the test named none of them", extra)
	}
	tb.Logf("dcm runs its defaults (system.Defaults)%s", describe(cfg, named))
	return cfg
}

// Unnamed lists the fields where cfg differs from the defaults, other than
// the environment's and those named.
func Unnamed(defaults, cfg system.Config, named []string) []string {
	var out []string
	for _, f := range ConfigDiff(defaults, cfg) {
		if !environmentField(f) && !slices.Contains(named, f) {
			out = append(out, f)
		}
	}
	return out
}

// ConfigDiff lists, by field name in declaration order, where a and b
// differ.
func ConfigDiff(a, b system.Config) []string {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	var out []string
	for i := range va.NumField() {
		if !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			out = append(out, va.Type().Field(i).Name)
		}
	}
	return out
}

// describe is ", except Mode=slots Slots=1 (named by the test)", or "".
func describe(cfg system.Config, named []string) string {
	if len(named) == 0 {
		return ", nothing named by the test"
	}
	v := reflect.ValueOf(cfg)
	parts := make([]string, 0, len(named))
	for _, f := range named {
		parts = append(parts, fmt.Sprintf("%s=%v", f, v.FieldByName(f).Interface()))
	}
	return ", except " + strings.Join(parts, " ") + " (named by the test)"
}
