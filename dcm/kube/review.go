package kube

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/dcm-router/dcm/dcm"
)

// The portal's permissions are RBAC verbs on a resource that exists only to
// be named in roles: get haproxy.dcm.io to read, update haproxy.dcm.io to
// act (deploy/portal-rbac.yaml has a viewer and an operator role).
const (
	PortalGroup    = "dcm.io"
	PortalResource = "haproxy"
)

// reviewTTL is how long an answer of the API server is reused, so that a
// page and its feed do not each cost a review.
const reviewTTL = 10 * time.Second

// Reviewer asks the API server who a token belongs to (TokenReview) and what
// that user may do (SubjectAccessReview), so Kubernetes RBAC decides who uses
// the portal.
type Reviewer struct {
	client kubernetes.Interface
	now    func() time.Time

	mu      sync.Mutex
	users   map[[32]byte]cachedUser
	answers map[string]cachedAnswer
}

type cachedUser struct {
	name    string
	groups  []string
	ok      bool
	expires time.Time
}

type cachedAnswer struct {
	allowed bool
	expires time.Time
}

// NewReviewer returns a Reviewer on dcm's client.
func NewReviewer(client kubernetes.Interface) *Reviewer {
	return &Reviewer{client: client, now: time.Now, users: map[[32]byte]cachedUser{}, answers: map[string]cachedAnswer{}}
}

// Authenticate returns who a token belongs to; ok is false for a token the
// API server does not accept.
func (r *Reviewer) Authenticate(ctx context.Context, token string) (dcm.Identity, bool, error) {
	name, groups, ok, err := r.review(ctx, token)
	return dcm.Identity{Name: name, Groups: groups}, ok, err
}

// Authorize asks RBAC whether id may do verb: get haproxy.dcm.io to read,
// update haproxy.dcm.io to act.
func (r *Reviewer) Authorize(ctx context.Context, id dcm.Identity, verb dcm.Verb) (bool, error) {
	kverb := "get"
	if verb == dcm.VerbAct {
		kverb = "update"
	}
	return r.Allowed(ctx, id.Name, id.Groups, kverb)
}

func (r *Reviewer) review(ctx context.Context, token string) (name string, groups []string, ok bool, err error) {
	key := sha256.Sum256([]byte(token))
	r.mu.Lock()
	if c, hit := r.users[key]; hit && r.now().Before(c.expires) {
		r.mu.Unlock()
		return c.name, c.groups, c.ok, nil
	}
	r.mu.Unlock()
	tr, err := r.client.AuthenticationV1().TokenReviews().Create(ctx,
		&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return "", nil, false, fmt.Errorf("token review: %w", err)
	}
	c := cachedUser{ok: tr.Status.Authenticated, expires: r.now().Add(reviewTTL)}
	if c.ok {
		c.name, c.groups = tr.Status.User.Username, tr.Status.User.Groups
	}
	r.mu.Lock()
	r.prune()
	r.users[key] = c
	r.mu.Unlock()
	return c.name, c.groups, c.ok, nil
}

// Allowed asks whether user (in groups) may do verb (get or update) on haproxy.dcm.io.
func (r *Reviewer) Allowed(ctx context.Context, user string, groups []string, verb string) (bool, error) {
	key := user + "\x00" + strings.Join(groups, "\x00") + "\x00" + verb
	r.mu.Lock()
	if c, hit := r.answers[key]; hit && r.now().Before(c.expires) {
		r.mu.Unlock()
		return c.allowed, nil
	}
	r.mu.Unlock()
	sar, err := r.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: slices.Clone(groups),
			ResourceAttributes: &authorizationv1.ResourceAttributes{Group: PortalGroup, Resource: PortalResource, Verb: verb},
		}}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("subject access review: %w", err)
	}
	r.mu.Lock()
	r.prune()
	r.answers[key] = cachedAnswer{allowed: sar.Status.Allowed, expires: r.now().Add(reviewTTL)}
	r.mu.Unlock()
	return sar.Status.Allowed, nil
}

// prune forgets expired answers; r.mu is held.
func (r *Reviewer) prune() {
	if len(r.users)+len(r.answers) < 1000 {
		return
	}
	now := r.now()
	for k, c := range r.users {
		if now.After(c.expires) {
			delete(r.users, k)
		}
	}
	for k, c := range r.answers {
		if now.After(c.expires) {
			delete(r.answers, k)
		}
	}
}
