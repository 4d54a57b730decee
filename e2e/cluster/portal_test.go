package cluster

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/e2e/kapitest"
)

// TestPortalWithKubernetesTokens: in a cluster, Kubernetes decides who uses
// the portal: TokenReview says who a token belongs to, SubjectAccessReview
// on haproxy.dcm.io what they may do, with the roles of deploy/portal-rbac.yaml.
func TestPortalWithKubernetesTokens(t *testing.T) {
	ctx := context.Background()
	ns := kapitest.Namespace(t, env.admin)
	host := "portal." + ns + ".test"
	createApp(t, ns, "portal", 1, host, "/")
	if err := kapitest.Apply(ctx, env.admin, deployFile("portal-rbac.yaml")); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	bind := func(sa, role string) {
		if _, err := env.admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if role == "" {
			return
		}
		rb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + sa},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: sa}}}
		if _, err := env.admin.RbacV1().ClusterRoleBindings().Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	bind("viewer", "dcm-viewer")
	bind("operator", "dcm-operator")
	bind("nobody", "")
	token := func(sa string) string { return serviceAccountConfig(t, ns, sa).BearerToken }

	// No token file: in a cluster dcm asks Kubernetes who a token is and
	// what it may do (TokenReview, SubjectAccessReview).
	s := harness.Start(t, dcmOptions(t, ns))
	s.Serves(host, "/", 1, readyPods(ns, "portal"))
	pods, _ := readyPods(ns, "portal")()
	drain := "/api/v1/backends/be_http:" + ns + ":portal/servers/" + pods[0] + ":http/state"

	tests := []struct {
		name, token, method, path, body string
		want                            int
	}{
		{"garbage token", "not-a-kubernetes-token", "GET", "/api/v1/snapshot", "", 401},
		{"a ServiceAccount without a role", token("nobody"), "GET", "/api/v1/snapshot", "", 403},
		{"viewer reads", token("viewer"), "GET", "/api/v1/snapshot", "", 200},
		{"viewer cannot drain", token("viewer"), "POST", drain, `{"state":"drain"}`, 403},
		{"operator drains", token("operator"), "POST", drain, `{"state":"drain"}`, 202},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, s.PortalURL+tt.path, strings.NewReader(tt.body))
			req.Header.Set("Authorization", "Bearer "+tt.token)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("HTTP %d, want %d: %s", resp.StatusCode, tt.want, body)
			}
		})
	}
	s.Eventually("the operator's drain reaches HAProxy", 5*time.Second, func() error {
		if sv, _ := s.Backend("be_http:" + ns + ":portal").Server(pods[0] + ":http"); sv.State != "drain" {
			return fmt.Errorf("the server is %s", sv.State)
		}
		return nil
	})
}
