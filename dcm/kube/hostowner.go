package kube

import (
	"fmt"

	"github.com/dcm-router/dcm/dcm"
)

// hostClaimed refuses st when one of its hosts belongs to another
// namespace: that of the oldest object served on it, which resolve has
// put in taken under the host's owner identity. Namespace B cannot put
// /admin under namespace A's host; B's objects take over once A's are
// gone. OpenShift's router does the same (HostAlreadyClaimed). Without
// owner identities (--allow-cross-namespace-hosts) nothing is refused.
func hostClaimed(st *ingressState, taken map[identity]*ingressState) *dcm.Rejection {
	for _, id := range st.ids {
		owner, ok := taken[id]
		if !id.owner || !ok || owner.ref.Namespace == st.ref.Namespace {
			continue
		}
		return &dcm.Rejection{Object: st.ref, Reason: dcm.RejectHostClaimed,
			Message: fmt.Sprintf("%s belongs to namespace %s, whose %s %s/%s is older", id, owner.ref.Namespace,
				owner.ref.Kind, owner.ref.Namespace, owner.ref.Name)}
	}
	return nil
}
