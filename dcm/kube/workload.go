package kube

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/dcm-router/dcm/dcm"
)

// Workload finds the workload behind a Service for the what-if planner: the
// dcm.io/workload annotation, else the pattern of its pods' names (all
// <x>-<hash>-<suffix> → Deployment x, all <x>-<ordinal> → StatefulSet x),
// else nil. An invalid annotation is an error (and no guess is made: the
// author meant something, dcm should not pretend to know what).
func Workload(svc *corev1.Service, endpointSlices []*discoveryv1.EndpointSlice) (*dcm.WorkloadRef, error) {
	if svc != nil {
		if w, set, err := annotationValue[*dcm.WorkloadRef](svc.Annotations, AnnotationWorkload); set {
			return w, err
		}
	}
	for _, w := range []struct {
		kind  string
		owner func(pod string) (string, bool)
	}{{WorkloadDeployment, deploymentOf}, {WorkloadStatefulSet, statefulSetOf}} {
		if name, ok := commonOwner(endpointSlices, w.owner); ok {
			return &dcm.WorkloadRef{Kind: w.kind, Name: name}, nil
		}
	}
	return nil, nil
}

// commonOwner is the owner every pod of the slices names, read in place:
// a full resync asks it of every Service.
func commonOwner(endpointSlices []*discoveryv1.EndpointSlice, owner func(string) (string, bool)) (string, bool) {
	var name string
	pods := 0
	for _, s := range endpointSlices {
		for i := range s.Endpoints {
			p := podName(&s.Endpoints[i])
			if p == "" {
				continue
			}
			n, ok := owner(p)
			if !ok || pods > 0 && n != name {
				return "", false
			}
			name = n
			pods++
		}
	}
	return name, pods > 0
}

// The pods' names are read by hand, not by regular expressions: a full
// resync at 10,000 routes matched 100,000 names, and the matching was a
// seventh of the Source's time.

// deploymentOf is the Deployment of a pod named
// <deployment>-<pod-template-hash>-<suffix>: a hash of 6 to 10 and a
// suffix of 5 lower-case letters and digits.
func deploymentOf(pod string) (string, bool) {
	rest, suffix, ok := cutLast(pod)
	if !ok || len(suffix) != 5 || !allOf(suffix, isAlnum) {
		return "", false
	}
	owner, hash, ok := cutLast(rest)
	if !ok || len(hash) < 6 || len(hash) > 10 || !allOf(hash, isAlnum) || !ownerName(owner) {
		return "", false
	}
	return owner, true
}

// statefulSetOf is the StatefulSet of a pod named <statefulset>-<ordinal>
// (no leading zero).
func statefulSetOf(pod string) (string, bool) {
	owner, ordinal, ok := cutLast(pod)
	if !ok || ordinal == "" || !allOf(ordinal, isDigit) || len(ordinal) > 1 && ordinal[0] == '0' || !ownerName(owner) {
		return "", false
	}
	return owner, true
}

// cutLast cuts s around its last '-'.
func cutLast(s string) (before, after string, ok bool) {
	i := strings.LastIndexByte(s, '-')
	if i < 0 {
		return "", "", false
	}
	return s[:i], s[i+1:], true
}

// ownerName: a lower-case letter or digit, then those, '.' and '-'.
func ownerName(s string) bool {
	return s != "" && isAlnum(s[0]) && allOf(s, func(c byte) bool { return isAlnum(c) || c == '.' || c == '-' })
}

func allOf(s string, ok func(byte) bool) bool {
	for i := range len(s) {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isAlnum(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'z' }
