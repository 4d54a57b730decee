package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"

	"k8s.io/client-go/kubernetes"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/engine"
	"github.com/dcm-router/dcm/dcm/kube"
	"github.com/dcm-router/dcm/server"
)

// portalEngine gives the server the engine with the feed's subscription
// typed as the server wants it.
type portalEngine struct{ *engine.Engine }

func (p portalEngine) Subscribe(since uint64, queue int) ([]dcm.Event, bool, server.Subscription) {
	backlog, ok, sub := p.Engine.Subscribe(since, queue)
	return backlog, ok, sub
}

// kubeAuth makes Kubernetes decide who uses the portal: TokenReview for who,
// SubjectAccessReview on haproxy.dcm.io for what.
type kubeAuth struct{ r *kube.Reviewer }

func (k kubeAuth) Authenticate(ctx context.Context, token string) (server.Identity, bool, error) {
	name, groups, ok, err := k.r.Authenticate(ctx, token)
	return server.Identity{Name: name, Groups: groups}, ok, err
}

func (k kubeAuth) Authorize(ctx context.Context, id server.Identity, verb server.Verb) (bool, error) {
	kverb := "get"
	if verb == server.VerbAct {
		kverb = "update"
	}
	return k.r.Allowed(ctx, id.Name, id.Groups, kverb)
}

// access is who may use the portal and API.
type access struct {
	authn server.Authenticator
	authz server.Authorizer
	// token is the generated admin token to print ("" when tokens come from
	// a file or from Kubernetes).
	token string
}

// portalAccess: tokens from --auth-token-file; else, in the demo, one
// generated admin token printed at start; in a cluster, Kubernetes tokens
// (alongside the file's, when there is one).
func portalAccess(tokenFile string, client kubernetes.Interface, demo bool) (access, error) {
	var a access
	var authns server.Authenticators
	switch {
	case tokenFile != "":
		f, err := os.Open(tokenFile)
		if err != nil {
			return a, fmt.Errorf("--auth-token-file: %w", err)
		}
		defer f.Close()
		tokens, err := server.ParseTokens(f)
		if err != nil {
			return a, fmt.Errorf("--auth-token-file %s: %w", tokenFile, err)
		}
		authns = append(authns, tokens)
	case demo:
		b := make([]byte, 24)
		if _, err := rand.Read(b); err != nil {
			return a, fmt.Errorf("random token: %w", err)
		}
		a.token = hex.EncodeToString(b)
		authns = append(authns, server.SingleToken(a.token, "admin"))
	}
	authz := server.RoleAuthorizer{}
	if !demo {
		k := kubeAuth{r: kube.NewReviewer(client)}
		authns = append(authns, k)
		authz.Kubernetes = k
	}
	a.authn, a.authz = authns, authz
	return a, nil
}
