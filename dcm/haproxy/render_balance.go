package haproxy

import (
	"bytes"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/routing"
)

// backendBalance is the balance algorithm of a backend: its route's, or
// for a free spare its pool kind's.
func backendBalance(b dcm.Backend) string {
	if b.Route.Name != "" {
		return b.Route.BalanceOf()
	}
	k, ok := routing.SpareKind(b.ProxyName())
	if !ok || k == routing.PoolSticky {
		return dcm.BalanceRoundRobin
	}
	return routing.PoolBalance(k)
}

// renderBalance renders the algorithm, with hash-type consistent where it
// hashes: add server needs it (dcm.HashConsistent).
func renderBalance(w *bytes.Buffer, balance string) {
	w.WriteString("    balance " + balance + "\n")
	if dcm.HashConsistent(balance) {
		w.WriteString("    hash-type consistent\n")
	}
}
