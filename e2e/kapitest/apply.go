package kapitest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
)

// Decode reads the objects of a multi-document YAML manifest.
func Decode(path string) ([]runtime.Object, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r := utilyaml.NewYAMLReader(bufioReader(b))
	var objs []runtime.Object
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		objs = append(objs, obj)
	}
}

// Apply creates the objects of manifests, the way kubectl create -f does
// for the kinds deploy/ uses.
func Apply(ctx context.Context, c kubernetes.Interface, paths ...string) error {
	for _, path := range paths {
		objs, err := Decode(path)
		if err != nil {
			return err
		}
		for _, obj := range objs {
			opts := metav1.CreateOptions{}
			switch o := obj.(type) {
			case *corev1.Namespace:
				_, err = c.CoreV1().Namespaces().Create(ctx, o, opts)
			case *corev1.ServiceAccount:
				_, err = c.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, opts)
			case *corev1.Service:
				_, err = c.CoreV1().Services(o.Namespace).Create(ctx, o, opts)
			case *rbacv1.ClusterRole:
				_, err = c.RbacV1().ClusterRoles().Create(ctx, o, opts)
			case *rbacv1.ClusterRoleBinding:
				_, err = c.RbacV1().ClusterRoleBindings().Create(ctx, o, opts)
			case *rbacv1.Role:
				_, err = c.RbacV1().Roles(o.Namespace).Create(ctx, o, opts)
			case *rbacv1.RoleBinding:
				_, err = c.RbacV1().RoleBindings(o.Namespace).Create(ctx, o, opts)
			case *appsv1.Deployment:
				_, err = c.AppsV1().Deployments(o.Namespace).Create(ctx, o, opts)
			default:
				err = fmt.Errorf("kind %T not supported", obj)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
		}
	}
	return nil
}

func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }
