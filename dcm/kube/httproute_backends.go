package kube

import (
	"fmt"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dcm-router/dcm/dcm"
)

// ruleBackends resolves a rule's backendRefs into its Services. A ref
// that does not resolve (unknown kind, another namespace without a
// ReferenceGrant, no such Service) sets the rule's refReason and gets no
// traffic; a rule none of whose refs resolves — or that has none and
// does not redirect — is unresolved: HAProxy answers 500.
func (in gwInput) ruleBackends(kind string, r *gwv1.HTTPRoute, field string, rule gwv1.HTTPRouteRule, rl *gwRule, out *gwOutput) error {
	fail := func(reason, msg string) {
		if rl.refReason == "" {
			rl.refReason, rl.refMsg = reason, msg
		}
	}
	for j, b := range rule.BackendRefs {
		f := fmt.Sprintf("%s.backendRefs[%d]", field, j)
		if len(b.Filters) > 0 {
			return fmt.Errorf("%s.filters: filters on a backendRef are not supported", f)
		}
		if (b.Group != nil && *b.Group != "") || (b.Kind != nil && *b.Kind != KindService) {
			fail(string(gwv1.RouteReasonInvalidKind), f+": only core Services are supported")
			continue
		}
		ns := r.Namespace
		if b.Namespace != nil && *b.Namespace != "" {
			ns = string(*b.Namespace)
		}
		name := string(b.Name)
		if b.Port == nil {
			return fmt.Errorf("%s.port: a Service backendRef needs a port", f)
		}
		if err := dcm.ValidateDNSLabel(f+".name", name); err != nil {
			return err
		}
		if !in.grants.allow(grantRef{group: gatewayGroup, kind: kind, namespace: r.Namespace},
			grantRef{group: "", kind: KindService, namespace: ns, name: name}) {
			fail(string(gwv1.RouteReasonRefNotPermitted), f+": Service "+ns+"/"+name+" is in another namespace and no ReferenceGrant allows it")
			continue
		}
		out.services[ns+"/"+name] = true
		if !in.service(ns, name) {
			fail(string(gwv1.RouteReasonBackendNotFound), f+": Service "+ns+"/"+name+" not found")
			continue
		}
		ref := dcm.ServiceRef{Name: name, Port: portText(b.Port), Weight: weightOf(b.Weight)}
		if ns != r.Namespace {
			ref.Namespace = ns
		}
		if err := addService(rl, ref, f); err != nil {
			return err
		}
	}
	if len(rl.services) > dcm.MaxServices {
		return fmt.Errorf("%s.backendRefs: more than %d Services", field, dcm.MaxServices)
	}
	scaleWeights(rl.services)
	redirects := rl.filters != nil && rl.filters.Redirect != nil
	rl.unresolved = len(rl.services) == 0 && !redirects
	return nil
}

// addService adds a Service to a rule, adding up the weights of a
// Service listed twice on the same port; on two ports it is refused (one
// backend serves one port of a Service).
func addService(rl *gwRule, ref dcm.ServiceRef, field string) error {
	for i, s := range rl.services {
		if s.Name == ref.Name && s.Namespace == ref.Namespace {
			if s.Port != ref.Port {
				return fmt.Errorf("%s: Service %s on two ports in one rule is not supported", field, ref.Name)
			}
			rl.services[i].Weight += ref.Weight
			return nil
		}
	}
	rl.services = append(rl.services, ref)
	return nil
}

// scaleWeights brings backendRef weights (up to 1,000,000) into HAProxy's
// 0..256, keeping their ratios as well as integers can and a non-zero
// weight non-zero.
func scaleWeights(svcs []dcm.ServiceRef) {
	top := 0
	for _, s := range svcs {
		top = max(top, s.Weight)
	}
	if top <= dcm.MaxWeight {
		return
	}
	for i, s := range svcs {
		if s.Weight > 0 {
			svcs[i].Weight = max(1, s.Weight*dcm.MaxWeight/top)
		}
	}
}
