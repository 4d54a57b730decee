package kapitest

import (
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
)

// PodNetwork is where the test kubelet's pods live. The API server refuses
// loopback addresses in EndpointSlices, so pods cannot use 127.x.y.z as the
// demo does; instead the whole range is routed to the local host (like
// 127.0.0.0/8 is), which lets each pod listen on its own address.
var PodNetwork = netip.MustParsePrefix("10.244.0.0/16")

// EnsurePodNetwork adds the local route for PodNetwork when it is missing
// (this needs root, as CI has). The route stays: test binaries run in
// parallel (go test ./... runs packages side by side, and make soak may run
// next to them), and one removing the route when it ends would cut the pods
// of another that found it in place. It sends only 10.244.0.0/16, a range
// the tests own, to the loopback device.
func EnsurePodNetwork() error {
	out, err := exec.Command("ip", "route", "show", "table", "local", PodNetwork.String()).Output()
	if err != nil {
		return fmt.Errorf("ip route (Debian's iproute2) is needed to route the pod network: %w", err)
	}
	if strings.Contains(string(out), PodNetwork.String()) {
		return nil
	}
	if b, err := exec.Command("ip", "route", "add", "local", PodNetwork.String(), "dev", "lo").CombinedOutput(); err != nil {
		// Another test binary may have added it meanwhile.
		if strings.Contains(string(b), "File exists") {
			return nil
		}
		return fmt.Errorf("route the test pod network %s to this host (ip route add local %s dev lo; needs root): %w: %s",
			PodNetwork, PodNetwork, err, b)
	}
	return nil
}
