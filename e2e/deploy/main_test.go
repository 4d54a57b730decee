// Package deploy proves deploy/ as a user applies it: kubectl apply -k
// deploy/ against the real API server of the test control plane (e2e/kapi),
// then the dcm container's arguments read back from the Deployment and
// parsed as dcm's own command line. It has a control plane of its own, not
// e2e/cluster's, whose TestMain creates deploy/'s objects for dcm to run
// on and whose tests would lose them when this one cleans up. No kubelet
// runs: the Deployment's pod is never meant to start here.
package deploy

import (
	"context"
	"os"
	"testing"

	"github.com/dcm-router/dcm/e2e/kapitest"
	"github.com/dcm-router/dcm/e2e/podnet"
)

// env is the package's control plane.
var env struct {
	cp *kapitest.ControlPlane
}

func TestMain(m *testing.M) {
	os.Exit(kapitest.Main(m, func(_ context.Context, cp *kapitest.ControlPlane, _ *podnet.Network) (func(), error) {
		env.cp = cp
		return func() {}, nil
	}))
}
