package kube

import (
	"regexp"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/dcm-router/dcm/dcm"
)

var (
	// Deployment pods: <deployment>-<pod-template-hash>-<random suffix>.
	deploymentPod = regexp.MustCompile(`^([a-z0-9][a-z0-9.-]*)-[a-z0-9]{6,10}-[a-z0-9]{5}$`)
	// StatefulSet pods: <statefulset>-<ordinal>.
	statefulSetPod = regexp.MustCompile(`^([a-z0-9][a-z0-9.-]*)-(?:0|[1-9][0-9]*)$`)
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
	var pods []string
	for _, s := range endpointSlices {
		for _, ep := range s.Endpoints {
			if p := podName(ep); p != "" {
				pods = append(pods, p)
			}
		}
	}
	if len(pods) == 0 {
		return nil, nil
	}
	for _, w := range []struct {
		kind string
		re   *regexp.Regexp
	}{{WorkloadDeployment, deploymentPod}, {WorkloadStatefulSet, statefulSetPod}} {
		if name, ok := commonPrefix(pods, w.re); ok {
			return &dcm.WorkloadRef{Kind: w.kind, Name: name}, nil
		}
	}
	return nil, nil
}

func commonPrefix(pods []string, re *regexp.Regexp) (string, bool) {
	var name string
	for i, p := range pods {
		m := re.FindStringSubmatch(p)
		if m == nil || i > 0 && m[1] != name {
			return "", false
		}
		name = m[1]
	}
	return name, true
}
