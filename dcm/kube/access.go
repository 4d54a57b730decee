package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Permission is one verb on one resource that dcm uses.
type Permission struct {
	Verb, Group, Resource, Subresource string
	// Required permissions stop dcm at start when missing; the others only
	// disable Feature, with a warning.
	Required bool
	// Feature is what an optional permission is for (FeatureScale,
	// FeatureEvents, FeatureTokens).
	Feature string
}

// The features of optional permissions: without one dcm runs, less it.
const (
	FeatureScale  = "scaling workloads from the portal"
	FeatureEvents = "Kubernetes Events on rejected Ingresses and Routes"
	FeatureTokens = "signing in to the portal with Kubernetes tokens"
	// FeatureLeaderElection: without the Lease, no replica can know it
	// is the only one writing, so none writes status.
	FeatureLeaderElection = "writing Route and Ingress status (leader election)"
)

func (p Permission) String() string {
	r := p.Resource
	if p.Subresource != "" {
		r += "/" + p.Subresource
	}
	if p.Group != "" {
		r += "." + p.Group
	}
	return p.Verb + " " + r
}

// Permissions lists every permission dcm asks the API server for; deploy/
// grants exactly these.
func Permissions() []Permission {
	var out []Permission
	for _, r := range []struct{ group, resource string }{
		{"networking.k8s.io", "ingresses"}, {"", "services"}, {"discovery.k8s.io", "endpointslices"},
	} {
		for _, verb := range []string{"list", "watch"} {
			out = append(out, Permission{Verb: verb, Group: r.group, Resource: r.resource, Required: true})
		}
	}
	// OpenShift Routes (read through the cache only: no get), and their
	// status.ingress. Granted even where the API is not served: RBAC
	// allows rules for resources that do not exist, and dcm starts
	// watching when they appear.
	for _, verb := range []string{"list", "watch"} {
		out = append(out, Permission{Verb: verb, Group: RouteGVR.Group, Resource: RouteGVR.Resource, Required: true})
	}
	out = append(out, Permission{Verb: "update", Group: RouteGVR.Group, Resource: RouteGVR.Resource, Subresource: "status", Required: true})
	// The Gateway API (--gateway-addresses), granted where it is not
	// served as for Routes: its objects read through the cache, and the
	// status of GatewayClasses, Gateways, HTTPRoutes, GRPCRoutes and TLSRoutes.
	for _, r := range []string{"gatewayclasses", "gateways", "httproutes", "grpcroutes", "tlsroutes", "referencegrants"} {
		for _, verb := range []string{"list", "watch"} {
			out = append(out, Permission{Verb: verb, Group: gatewayGroup, Resource: r, Required: true})
		}
	}
	for _, r := range []string{"gatewayclasses", "gateways", "httproutes", "grpcroutes", "tlsroutes"} {
		out = append(out, Permission{Verb: "update", Group: gatewayGroup, Resource: r, Subresource: "status", Required: true})
	}
	// Ingresses' status.loadBalancer.ingress (--publish-service,
	// --publish-address); the Service published is read through the
	// Services informer's permissions.
	out = append(out, Permission{Verb: "update", Group: "networking.k8s.io", Resource: "ingresses", Subresource: "status", Required: true})
	// The Lease the status writers elect their leader with, in one
	// namespace (deploy/ grants it with a Role there): client-go's
	// leader election gets it, creates it once, then updates it.
	for _, verb := range []string{"get", "create", "update"} {
		out = append(out, Permission{Verb: verb, Group: "coordination.k8s.io", Resource: "leases", Feature: FeatureLeaderElection})
	}
	// The namespaces of a shard (--namespace-selector): their labels say
	// which namespaces' Ingresses and Routes dcm serves.
	for _, verb := range []string{"list", "watch"} {
		out = append(out, Permission{Verb: verb, Resource: "namespaces", Required: true})
	}
	// Edge routes' certificates: kubernetes.io/tls Secrets only (the
	// informer's field selector), but RBAC cannot say so.
	for _, verb := range []string{"get", "list", "watch"} {
		out = append(out, Permission{Verb: verb, Resource: "secrets", Required: true})
	}
	for _, r := range []string{"deployments", "statefulsets"} {
		for _, verb := range []string{"get", "update"} {
			out = append(out, Permission{Verb: verb, Group: "apps", Resource: r, Subresource: "scale", Feature: FeatureScale})
		}
	}
	// The portal's sign-in with Kubernetes tokens, and RBAC per action.
	out = append(out,
		Permission{Verb: "create", Group: "authentication.k8s.io", Resource: "tokenreviews", Feature: FeatureTokens},
		Permission{Verb: "create", Group: "authorization.k8s.io", Resource: "subjectaccessreviews", Feature: FeatureTokens})
	// Events (events.k8s.io/v1) on the objects dcm rejects: client-go's
	// broadcaster creates one, then patches it into a series as it repeats.
	for _, verb := range []string{"create", "patch"} {
		out = append(out, Permission{Verb: verb, Group: "events.k8s.io", Resource: "events", Feature: FeatureEvents})
	}
	return out
}

// MissingPermissionError names the permissions dcm needs and lacks.
type MissingPermissionError struct {
	Missing []string
}

func (e *MissingPermissionError) Error() string {
	return "missing permission: " + strings.Join(e.Missing, "; ") + " (grant them as deploy/rbac.yaml does)"
}

// scopesOf: reviews and namespaces are cluster-scoped objects, the Lease
// lives in leaseNamespace (none checked without an election), the rest is
// checked in each namespace watched.
func scopesOf(p Permission, namespaces []string, leaseNamespace string) []string {
	switch {
	case p.Resource == "tokenreviews" || p.Resource == "subjectaccessreviews" || p.Resource == "namespaces" || p.Resource == "gatewayclasses":
		return []string{""}
	case p.Resource == "leases" && leaseNamespace == "":
		return nil
	case p.Resource == "leases":
		return []string{leaseNamespace}
	}
	return namespaces
}

// Lacking is an optional permission dcm does not hold, and where.
type Lacking struct {
	Permission
	Where string // "in all namespaces", "in namespace <ns>"
}

func (l Lacking) String() string { return l.Permission.String() + " " + l.Where }

// Lacks says whether lacking holds a permission of feature.
func Lacks(lacking []Lacking, feature string) bool {
	return slices.ContainsFunc(lacking, func(l Lacking) bool { return l.Feature == feature })
}

// CheckAccess asks the API server, with SelfSubjectAccessReviews, whether
// dcm's identity holds every permission it uses, in each namespace watched
// (all namespaces when none). It returns a *MissingPermissionError for the
// required ones that are missing, and the optional ones that are missing
// (dcm goes without their feature); informers would otherwise retry a
// forbidden list for ever with nothing but log lines to show for it.
//
// leaseNamespace is where the status writers' Lease is ("": no leader
// election, and the Lease's permissions are not asked for).
func CheckAccess(ctx context.Context, client kubernetes.Interface, namespaces []string, leaseNamespace string) (lacking []Lacking, err error) {
	scopes := namespaces
	if len(scopes) == 0 {
		scopes = []string{""}
	}
	var missing []string
	for _, p := range Permissions() {
		for _, ns := range scopesOf(p, scopes, leaseNamespace) {
			review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: ns, Verb: p.Verb, Group: p.Group, Resource: p.Resource, Subresource: p.Subresource,
				},
			}}
			res, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
			if err != nil {
				return nil, fmt.Errorf("checking permission %s: %w", p, err)
			}
			if res.Status.Allowed {
				continue
			}
			where := "in all namespaces"
			if ns != "" {
				where = "in namespace " + ns
			}
			if p.Required {
				missing = append(missing, p.String()+" "+where)
			} else {
				lacking = append(lacking, Lacking{Permission: p, Where: where})
			}
		}
	}
	if len(missing) > 0 {
		return lacking, &MissingPermissionError{Missing: missing}
	}
	return lacking, nil
}
