package gwconformance

import (
	"os"
	"strings"
	"testing"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/conformance"
	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
)

// The environment make conformance (e2e/gwenv) hands the run.
const (
	envKubeconfig = "KUBECONFIG"
	envReport     = "CONFORMANCE_REPORT"   // where the suite writes its report
	envRunTest    = "CONFORMANCE_RUN_TEST" // one test's ShortName, for debugging
	// envUsable and envUnusable are an address of dcm's --gateway-addresses
	// and one outside it, for GatewayStaticAddresses (make conformance's
	// driver sets them from the pool it gives dcm).
	envUsable   = "CONFORMANCE_USABLE_ADDRESS"
	envUnusable = "CONFORMANCE_UNUSABLE_ADDRESS"
	envVersion  = "DCM_VERSION" // dcm's git commit
)

// TestConformance runs the Gateway API conformance suite against the
// cluster of $KUBECONFIG, where dcm serves the GatewayClass "dcm". The
// suite decides what passes: this only passes it dcm's claims (profiles,
// features) and who dcm is for its report.
func TestConformance(t *testing.T) {
	if os.Getenv(envKubeconfig) == "" {
		t.Skip("no cluster: KUBECONFIG is unset; make conformance starts one with dcm and runs this test against it")
	}
	opts := conformance.DefaultOptions(t)
	opts.GatewayClassName = GatewayClassName
	opts.ConformanceProfiles = Profiles
	opts.SupportedFeatures = SupportedFeatures
	opts.ReportOutputPath = os.Getenv(envReport)
	opts.RunTest = os.Getenv(envRunTest)
	ipType := gwv1.IPAddressType
	for _, a := range []struct {
		env  string
		into *[]gwv1.GatewaySpecAddress
	}{{envUsable, &opts.UsableNetworkAddresses}, {envUnusable, &opts.UnusableNetworkAddresses}} {
		if v := os.Getenv(a.env); v != "" {
			*a.into = []gwv1.GatewaySpecAddress{{Type: &ipType, Value: v}}
		}
	}
	opts.Implementation = confv1.Implementation{
		Organization: "dcm-router",
		Project:      "dcm",
		URL:          "https://github.com/dcm-router/dcm",
		Version:      version(),
		Contact:      []string{"https://github.com/dcm-router/dcm/issues"},
	}
	conformance.RunConformanceWithOptions(t, opts)
}

// version is dcm's commit as make conformance passes it; the suite refuses
// a report whose implementation has no version.
func version() string {
	if v := strings.TrimSpace(os.Getenv(envVersion)); v != "" {
		return v
	}
	return "unknown"
}
