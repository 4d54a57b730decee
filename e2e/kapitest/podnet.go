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
// (this needs root, as CI has) and returns how to remove what it added.
func EnsurePodNetwork() (remove func(), err error) {
	out, err := exec.Command("ip", "route", "show", "table", "local", PodNetwork.String()).Output()
	if err != nil {
		return nil, fmt.Errorf("ip route (Debian's iproute2) is needed to route the pod network: %w", err)
	}
	if strings.Contains(string(out), PodNetwork.String()) {
		return func() {}, nil
	}
	if b, err := exec.Command("ip", "route", "add", "local", PodNetwork.String(), "dev", "lo").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("route the test pod network %s to this host (ip route add local %s dev lo; needs root): %w: %s",
			PodNetwork, PodNetwork, err, b)
	}
	return func() {
		_ = exec.Command("ip", "route", "del", "local", PodNetwork.String(), "dev", "lo").Run()
	}, nil
}
