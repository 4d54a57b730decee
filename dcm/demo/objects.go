package demo

import (
	"context"
	"fmt"
	"math"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// Names the demo's objects share with the rest of dcm.
const (
	// IngressClassName is the class of the demo's Ingresses.
	IngressClassName = "dcm"
	// ingressController is what the demo's IngressClass claims; nothing in dcm
	// reads it, it only makes the class look like a real one.
	ingressController = "dcm.io/ingress-controller"
	// portName is the name of the Service port and of the pods' container port.
	portName = "http"
	// nodeName is the one node every demo pod runs on.
	nodeName = "demo-node"
	// annotationWorkload is dcm/kube's AnnotationWorkload, spelled out so that the
	// cluster does not need the package that consumes it in order to build.
	annotationWorkload = "dcm.io/workload"
	appLabel           = "app"
	containerName      = "app"
	containerImage     = "dcm.io/demo-echo:latest"
	nodeIP             = "127.0.0.1"
)

// seed stores the apps' objects through the client, so that they get UIDs and
// creation timestamps from the reactors like any other object.
func seed(ctx context.Context, client kubernetes.Interface, opts Options) error {
	if _, err := client.CoreV1().Nodes().Create(ctx, demoNode(), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create node: %w", err)
	}
	class := &networkingv1.IngressClass{
		ObjectMeta: metav1.ObjectMeta{Name: IngressClassName},
		Spec:       networkingv1.IngressClassSpec{Controller: ingressController},
	}
	if _, err := client.NetworkingV1().IngressClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create ingress class: %w", err)
	}
	for i, app := range opts.Apps {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: app.Namespace}}
		if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", app.Namespace, err)
		}
		if _, err := client.AppsV1().Deployments(app.Namespace).Create(ctx, appDeployment(app, opts), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create deployment %s/%s: %w", app.Namespace, app.Name, err)
		}
		if _, err := client.CoreV1().Services(app.Namespace).Create(ctx, appService(app, i), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create service %s/%s: %w", app.Namespace, app.Name, err)
		}
		if _, err := client.NetworkingV1().Ingresses(app.Namespace).Create(ctx, appIngress(app), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create ingress %s/%s: %w", app.Namespace, app.Name, err)
		}
	}
	return nil
}

func demoNode() *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   nodeName,
			Labels: map[string]string{corev1.LabelHostname: nodeName, corev1.LabelOSStable: "linux"},
		},
		Status: corev1.NodeStatus{
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: nodeIP},
				{Type: corev1.NodeHostName, Address: nodeName},
			},
			Conditions: []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: corev1.ConditionTrue,
				Reason: "KubeletReady", Message: "demo kubelet is posting ready status",
			}},
		},
	}
}

func appDeployment(app App, opts Options) *appsv1.Deployment {
	labels := map[string]string{appLabel: app.Name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: app.Name, Namespace: app.Namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptrTo(app.Replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{appLabel: app.Name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{appLabel: app.Name}},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptrTo(graceSeconds(opts.TerminationGrace)),
					Containers: []corev1.Container{{
						Name:  containerName,
						Image: containerImage,
						Ports: []corev1.ContainerPort{{
							Name: portName, ContainerPort: int32(opts.PodPort), Protocol: corev1.ProtocolTCP,
						}},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
								Path: "/healthz", Port: intstr.FromString(portName),
							}},
						},
						Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
							Sleep: &corev1.SleepAction{Seconds: graceSeconds(opts.PreStopDelay)},
						}},
					}},
				},
			},
		},
	}
}

func appService(app App, index int) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: app.Name, Namespace: app.Namespace,
			Labels:      map[string]string{appLabel: app.Name},
			Annotations: map[string]string{annotationWorkload: "Deployment/" + app.Name},
		},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: map[string]string{appLabel: app.Name},
			// A made-up cluster IP: nothing routes to it, but real Services
			// always have one.
			ClusterIP:       fmt.Sprintf("10.96.%d.%d", 1+index/250, 10+index%250),
			IPFamilies:      []corev1.IPFamily{corev1.IPv4Protocol},
			IPFamilyPolicy:  ptrTo(corev1.IPFamilyPolicySingleStack),
			SessionAffinity: corev1.ServiceAffinityNone,
			Ports: []corev1.ServicePort{{
				Name: portName, Port: 80, Protocol: corev1.ProtocolTCP,
				TargetPort: intstr.FromString(portName),
			}},
		},
	}
}

func appIngress(app App) *networkingv1.Ingress {
	prefix := networkingv1.PathTypePrefix
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: app.Name, Namespace: app.Namespace, Labels: map[string]string{appLabel: app.Name}},
		Spec: networkingv1.IngressSpec{
			IngressClassName: ptrTo(IngressClassName),
			Rules: []networkingv1.IngressRule{{
				Host: app.Host,
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
					Paths: []networkingv1.HTTPIngressPath{{
						Path: app.Path, PathType: &prefix,
						Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
							Name: app.Name, Port: networkingv1.ServiceBackendPort{Name: portName},
						}},
					}},
				}},
			}},
		},
	}
}

// graceSeconds rounds a duration up to whole seconds, the unit of the API's
// grace periods, so that a sub-second test setting is not rounded to "kill now".
func graceSeconds(d time.Duration) int64 {
	return int64(math.Ceil(d.Seconds()))
}

func ptrTo[T any](v T) *T { return &v }
