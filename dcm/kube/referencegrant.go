package kube

import (
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// grantRef is one side of a cross-namespace reference: the kind of
// object (its API group, "" for core), its namespace and, for the target,
// its name.
type grantRef struct {
	group, kind, namespace, name string
}

// referenceGrants answers whether a ReferenceGrant in the target's
// namespace lets an object of one namespace refer to it. A reference
// within one namespace needs none.
type referenceGrants []*gwv1.ReferenceGrant

func (g referenceGrants) allow(from, to grantRef) bool {
	if from.namespace == to.namespace {
		return true
	}
	for _, rg := range g {
		if rg.Namespace != to.namespace || !grantFrom(rg, from) {
			continue
		}
		for _, t := range rg.Spec.To {
			if string(t.Group) == to.group && string(t.Kind) == to.kind && (t.Name == nil || string(*t.Name) == to.name) {
				return true
			}
		}
	}
	return false
}

func grantFrom(rg *gwv1.ReferenceGrant, from grantRef) bool {
	for _, f := range rg.Spec.From {
		if string(f.Group) == from.group && string(f.Kind) == from.kind && string(f.Namespace) == from.namespace {
			return true
		}
	}
	return false
}
