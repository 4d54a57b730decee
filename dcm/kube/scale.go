package kube

import (
	"context"
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// Scaler reads and sets the replicas of Deployments and StatefulSets through
// their scale subresource, the narrowest permission that does the job.
type Scaler struct {
	client kubernetes.Interface
}

// NewScaler returns a Scaler using client.
func NewScaler(client kubernetes.Interface) *Scaler {
	return &Scaler{client: client}
}

// scaleClient is the part of the typed Deployment and StatefulSet clients a
// Scaler uses; both have exactly these methods.
type scaleClient interface {
	GetScale(ctx context.Context, name string, opts metav1.GetOptions) (*autoscalingv1.Scale, error)
	UpdateScale(ctx context.Context, name string, scale *autoscalingv1.Scale, opts metav1.UpdateOptions) (*autoscalingv1.Scale, error)
}

// target resolves kind to its canonical name, API resource and client.
func (s *Scaler) target(namespace, kind string) (string, string, scaleClient, error) {
	k, err := canonicalKind(kind)
	if err != nil {
		return "", "", nil, err
	}
	if k == WorkloadDeployment {
		return k, "deployments", s.client.AppsV1().Deployments(namespace), nil
	}
	return k, "statefulsets", s.client.AppsV1().StatefulSets(namespace), nil
}

// GetScale returns the desired replicas of a Deployment or StatefulSet.
func (s *Scaler) GetScale(ctx context.Context, namespace, kind, name string) (int32, error) {
	k, resource, c, err := s.target(namespace, kind)
	if err != nil {
		return 0, fmt.Errorf("get scale of %s %s/%s: %w", kind, namespace, name, err)
	}
	sc, err := c.GetScale(ctx, name, metav1.GetOptions{})
	if err != nil {
		return 0, scaleError("get", k, resource, namespace, name, err)
	}
	return sc.Spec.Replicas, nil
}

// SetScale sets the desired replicas of a Deployment or StatefulSet. It
// reads the scale first and writes it back with its resourceVersion,
// retrying on a conflict, so a concurrent change is never blindly undone.
func (s *Scaler) SetScale(ctx context.Context, namespace, kind, name string, replicas int32) error {
	if replicas < 0 {
		return fmt.Errorf("scale %s %s/%s to %d: replicas must not be negative", kind, namespace, name, replicas)
	}
	k, resource, c, err := s.target(namespace, kind)
	if err != nil {
		return fmt.Errorf("scale %s %s/%s: %w", kind, namespace, name, err)
	}
	verb := "get"
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		verb = "get"
		sc, err := c.GetScale(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if sc.Spec.Replicas == replicas {
			return nil
		}
		sc.Spec.Replicas = replicas
		verb = "update"
		_, err = c.UpdateScale(ctx, name, sc, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return scaleError(verb, k, resource, namespace, name, err)
	}
	return nil
}

// scaleError names the object, and for a Forbidden the exact permission to
// grant, since "forbidden" alone sends the operator digging through RBAC.
func scaleError(verb, kind, resource, namespace, name string, err error) error {
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("%s scale of %s %s/%s: missing permission %s %s/scale in namespace %s: %w",
			verb, kind, namespace, name, verb, resource, namespace, err)
	}
	return fmt.Errorf("%s scale of %s %s/%s: %w", verb, kind, namespace, name, err)
}
