package system

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"

	"k8s.io/client-go/kubernetes"

	"github.com/dcm-router/dcm/dcm/kube"
	"github.com/dcm-router/dcm/server"
)

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
		// Kubernetes decides: TokenReview for who, SubjectAccessReview for what.
		r := kube.NewReviewer(client)
		authns = append(authns, r)
		authz.Kubernetes = r
	}
	a.authn, a.authz = authns, authz
	return a, nil
}
