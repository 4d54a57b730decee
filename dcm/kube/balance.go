package kube

import "github.com/dcm-router/dcm/dcm"

// tcpBalanceDefault gives a passthrough route without a balance annotation
// OpenShift's default for TCP routes (ROUTER_TCP_BALANCE_SCHEME, source):
// a client keeps its pod, which no cookie can do for a passed-through
// connection.
func tcpBalanceDefault(ann map[string]string, name string, balance *string, passthrough bool) {
	if _, set := ann[name]; !set && passthrough {
		*balance = dcm.DefaultBalance(dcm.KindPassthrough)
	}
}
