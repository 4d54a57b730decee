package cluster

import (
	"context"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// createApp creates what a user deploys: a Deployment whose pods listen on
// a named port, a Service with a named target port, and an Ingress.
func createApp(t *testing.T, ns, name string, replicas int32, host, path string) {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{"app": name}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: "local/pod",
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				}}},
			},
		},
	}
	if _, err := env.admin.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createService(t, ns, name, labels)
	createIngress(t, ns, name, host, path, name)
}

func createService(t *testing.T, ns, name string, selector map[string]string) {
	t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{Selector: selector,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}},
	}
	if _, err := env.admin.CoreV1().Services(ns).Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func ingressFor(ns, name, host, path, service string) *networkingv1.Ingress {
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{
			Host: host,
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
				Path: path, PathType: ptr.To(networkingv1.PathTypePrefix),
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
					Name: service, Port: networkingv1.ServiceBackendPort{Name: "http"}}},
			}}}},
		}}},
	}
}

func createIngress(t *testing.T, ns, name, host, path, service string) {
	t.Helper()
	if _, err := env.admin.NetworkingV1().Ingresses(ns).Create(context.Background(), ingressFor(ns, name, host, path, service), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// scale goes through the scale subresource, as kubectl scale and dcm do.
func scale(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}
	if _, err := env.admin.AppsV1().Deployments(ns).UpdateScale(context.Background(), name, s, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("scale %s/%s to %d: %v", ns, name, replicas, err)
	}
}

// readyPods lists the app's pods that are Ready and not terminating.
func readyPods(ns, app string) func() ([]string, error) {
	return func() ([]string, error) {
		pods, err := env.admin.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
		if err != nil {
			return nil, err
		}
		var out []string
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				continue
			}
			if slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
				return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
			}) {
				out = append(out, p.Name)
			}
		}
		return out, nil
	}
}

// dumpPods logs the namespace's pods, for a test that failed.
func dumpPods(t *testing.T, ns string) {
	pods, err := env.admin.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Logf("list pods: %v", err)
		return
	}
	for _, p := range pods.Items {
		t.Logf("pod %s node=%q phase=%s ip=%s deleting=%v conditions=%v", p.Name, p.Spec.NodeName, p.Status.Phase,
			p.Status.PodIP, p.DeletionTimestamp != nil, p.Status.Conditions)
	}
	rs, _ := env.admin.AppsV1().ReplicaSets(ns).List(context.Background(), metav1.ListOptions{})
	for _, r := range rs.Items {
		t.Logf("replicaset %s spec=%d status=%+v", r.Name, *r.Spec.Replicas, r.Status)
	}
}
