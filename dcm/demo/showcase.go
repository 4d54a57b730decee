package demo

import (
	"context"
	"fmt"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
)

// The showcase: one route of every kind dcm serves, in namespace "demo",
// beside DefaultApps (the edge, canary and sticky routes send to their "web"
// Service, the OpenShift Route to "shop").
const (
	showcaseNS = "demo"
	// servingSecretAnnotation names, on a pod template, the kubernetes.io/tls
	// Secret the demo's kubelet serves TLS with, as a real pod would mount it.
	servingSecretAnnotation = "demo.dcm.io/serving-secret"
	// tlsApp's pods serve TLS with tlsServingSecret, signed by the demo's CA
	// (its ca.crt), for the passthrough host and the Service's DNS name, the
	// name a reencrypt Ingress verifies by default.
	tlsApp           = "tls-echo"
	tlsServingSecret = "tls-echo-serving"
	canaryApp        = "canary"
	caName           = "dcm demo CA"
	// annotations of dcm/kube, spelled out as annotationWorkload is.
	annotationPassthrough = "dcm.io/ssl-passthrough"
	annotationBackendCA   = "dcm.io/backend-ca"
	annotationWeights     = "dcm.io/weights"
	annotationSticky      = "dcm.io/sticky"
)

// routeGVR is the resource of OpenShift Routes, dcm/kube's RouteGVR, which
// the demo's dynamic client serves (a function: no package-level variables).
func routeGVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "route.openshift.io", Version: "v1", Resource: "routes"}
}

// Example is one route of the showcase and the curl line that reaches it
// through HAProxy.
type Example struct {
	// Kind is the route's kind (http, edge, passthrough, reencrypt), or
	// canary, sticky or route (an OpenShift Route) for what the route shows.
	Kind string
	Host string
	// HTTPS: the route answers on --https-bind, else on --http-bind.
	HTTPS bool
	// Pod is the name prefix of the pods that answer (the Deployment's).
	Pod  string
	Line string
}

// showcaseRoutes are the showcase's routes in the order the banner prints them.
func showcaseRoutes() []Example {
	return []Example{
		{Kind: "http", Host: "web.demo.localhost", Pod: "web"},
		{Kind: "edge", Host: "secure.demo.localhost", HTTPS: true, Pod: "web"},
		{Kind: "passthrough", Host: "pass.demo.localhost", HTTPS: true, Pod: tlsApp},
		{Kind: "reencrypt", Host: "reencrypt.demo.localhost", HTTPS: true, Pod: tlsApp},
		{Kind: "canary", Host: "canary.demo.localhost", Pod: "web"},
		{Kind: "sticky", Host: "sticky.demo.localhost", Pod: "web"},
		{Kind: "route", Host: "route.demo.localhost", Pod: "shop"},
	}
}

// Examples are the showcase's routes with curl lines for HAProxy's binds
// (host:port; an unspecified host is reached on 127.0.0.1); nil when the
// cluster has no showcase.
func (c *Cluster) Examples(httpBind, httpsBind string) []Example {
	if c.dyn == nil {
		return nil
	}
	out := showcaseRoutes()
	for i, e := range out {
		out[i].Line = curlLine(e, httpBind, httpsBind)
	}
	return out
}

func curlLine(e Example, httpBind, httpsBind string) string {
	switch {
	case e.HTTPS:
		host, port, _ := net.SplitHostPort(httpsBind)
		if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
			host = "127.0.0.1"
		}
		// --resolve sends SNI and Host for the route's name to HAProxy's
		// address; -k since the certificates are the demo's own.
		return fmt.Sprintf("curl -k --resolve %s:%s:%s https://%s:%s/", e.Host, port, host, e.Host, port)
	case e.Kind == "canary":
		return fmt.Sprintf("for i in $(seq 20); do curl -s -H 'Host: %s' http://%s/; done | cut -d- -f1 | sort | uniq -c", e.Host, httpBind)
	case e.Kind == "sticky":
		return fmt.Sprintf("curl -c /tmp/dcm-sticky -b /tmp/dcm-sticky -H 'Host: %s' http://%s/   (again: same pod)", e.Host, httpBind)
	}
	return fmt.Sprintf("curl -H 'Host: %s' http://%s/", e.Host, httpBind)
}

// seedShowcase stores the showcase's Secrets, workloads, Services and
// Ingresses in client and returns the dynamic client that serves its
// OpenShift Route, after telling client's discovery that Routes are served
// (dcm/kube watches them only then). index numbers the Services after the
// apps' so that their cluster IPs differ.
func seedShowcase(ctx context.Context, client *fake.Clientset, opts Options, index int) (dynamic.Interface, error) {
	secrets, err := showcaseSecrets()
	if err != nil {
		return nil, err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: showcaseNS}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create namespace %s: %w", showcaseNS, err)
	}
	for _, s := range secrets {
		if _, err := client.CoreV1().Secrets(showcaseNS).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("create secret %s: %w", s.Name, err)
		}
	}
	if err := seedWorkload(ctx, client, App{Namespace: showcaseNS, Name: canaryApp, Replicas: 1}, opts, index, ""); err != nil {
		return nil, err
	}
	if err := seedWorkload(ctx, client, App{Namespace: showcaseNS, Name: tlsApp, Replicas: 1}, opts, index+1, tlsServingSecret); err != nil {
		return nil, err
	}
	for _, ing := range showcaseIngresses() {
		if _, err := client.NetworkingV1().Ingresses(showcaseNS).Create(ctx, ing, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("create ingress %s: %w", ing.Name, err)
		}
	}
	client.Resources = append(client.Resources, &metav1.APIResourceList{
		GroupVersion: routeGVR().GroupVersion().String(),
		APIResources: []metav1.APIResource{{Name: routeGVR().Resource, Namespaced: true, Kind: "Route",
			Verbs: metav1.Verbs{"get", "list", "watch", "create", "update", "patch", "delete"}}},
	})
	// The list kind is what a real API server would name; the fake dynamic
	// client cannot guess it for a type no scheme knows.
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{routeGVR(): "RouteList"}, openShiftRoute()), nil
}

// seedWorkload stores a Deployment and its Service, without an Ingress: the
// showcase's routes to it are its own. A servingSecret makes its pods serve
// TLS with that Secret.
func seedWorkload(ctx context.Context, client kubernetes.Interface, app App, opts Options, index int, servingSecret string) error {
	d := appDeployment(app, opts)
	if servingSecret != "" {
		d.Spec.Template.Annotations = map[string]string{servingSecretAnnotation: servingSecret}
		d.Spec.Template.Spec.Containers[0].ReadinessProbe.HTTPGet.Scheme = corev1.URISchemeHTTPS
	}
	if _, err := client.AppsV1().Deployments(app.Namespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create deployment %s/%s: %w", app.Namespace, app.Name, err)
	}
	if _, err := client.CoreV1().Services(app.Namespace).Create(ctx, appService(app, index), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create service %s/%s: %w", app.Namespace, app.Name, err)
	}
	return nil
}

// showcaseSecrets: the edge and reencrypt hosts' self-signed certificates and
// the TLS pods' serving certificate with the CA that signed it.
func showcaseSecrets() ([]*corev1.Secret, error) {
	ca, err := newCA(caName)
	if err != nil {
		return nil, err
	}
	serving, err := newServing(&ca, tlsApp+"."+showcaseNS+".svc", "pass.demo.localhost")
	if err != nil {
		return nil, err
	}
	edge, err := newServing(nil, "secure.demo.localhost")
	if err != nil {
		return nil, err
	}
	reencrypt, err := newServing(nil, "reencrypt.demo.localhost")
	if err != nil {
		return nil, err
	}
	return []*corev1.Secret{
		tlsSecret("secure-tls", edge, nil),
		tlsSecret("reencrypt-tls", reencrypt, nil),
		tlsSecret(tlsServingSecret, serving, ca.cert),
	}, nil
}

func tlsSecret(name string, kp keyPair, caPEM []byte) *corev1.Secret {
	data := map[string][]byte{corev1.TLSCertKey: kp.cert, corev1.TLSPrivateKeyKey: kp.key}
	if caPEM != nil {
		data["ca.crt"] = caPEM
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: showcaseNS}, Type: corev1.SecretTypeTLS, Data: data}
}

func showcaseIngresses() []*networkingv1.Ingress {
	ing := func(name, host, service string, annotations map[string]string, tlsSecret string) *networkingv1.Ingress {
		i := appIngress(App{Namespace: showcaseNS, Name: service, Host: host, Path: "/"})
		i.Name, i.Labels, i.Annotations = name, nil, annotations
		if tlsSecret != "" {
			i.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{host}, SecretName: tlsSecret}}
		}
		return i
	}
	return []*networkingv1.Ingress{
		ing("secure", "secure.demo.localhost", "web", nil, "secure-tls"),
		ing("pass", "pass.demo.localhost", tlsApp, map[string]string{annotationPassthrough: "true"}, ""),
		ing("reencrypt", "reencrypt.demo.localhost", tlsApp, map[string]string{annotationBackendCA: tlsServingSecret}, "reencrypt-tls"),
		ing("canary", "canary.demo.localhost", "web", map[string]string{annotationWeights: "web=80," + canaryApp + "=20"}, ""),
		ing("sticky", "sticky.demo.localhost", "web", map[string]string{annotationSticky: "true"}, ""),
	}
}

// openShiftRoute is a plain HTTP Route to "shop", stored as the API server
// would hand it out (uid and creation time set: dcm orders hosts' claims by
// age).
func openShiftRoute() *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": routeGVR().GroupVersion().String(),
		"kind":       "Route",
		"metadata":   map[string]any{"name": "hello", "namespace": showcaseNS},
		"spec": map[string]any{
			"host": "route.demo.localhost",
			"to":   map[string]any{"kind": "Service", "name": "shop", "weight": int64(100)},
			"port": map[string]any{"targetPort": portName},
		},
	}}
	u.SetUID(types.UID("demo-route-hello"))
	u.SetCreationTimestamp(metav1.NewTime(time.Now()))
	return u
}
