package cluster

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/dcm-router/dcm/dcm/kube"
	"github.com/dcm-router/dcm/e2e/kapitest"
)

// grants lists a ClusterRole's rules as "verb resource[/sub][.group]".
func grants(rules []rbacv1.PolicyRule) []string {
	var out []string
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					name := res
					if g != "" {
						name += "." + g
					}
					out = append(out, v+" "+name)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestManifestsGrantExactlyWhatDCMUses: deploy/rbac.yaml and
// kube.Permissions() list the same verbs, so the manifests are sufficient
// (every other test runs dcm on them) and grant nothing more.
func TestManifestsGrantExactlyWhatDCMUses(t *testing.T) {
	objs, err := kapitest.Decode(deployFile("rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var role *rbacv1.ClusterRole
	var leaseRules []rbacv1.PolicyRule
	for _, o := range objs {
		switch r := o.(type) {
		case *rbacv1.ClusterRole:
			role = r
		case *rbacv1.Role:
			// Leases only, and only in dcm's namespace: a Role there.
			if r.Namespace != "dcm-system" {
				t.Errorf("Role %s in namespace %s, want dcm-system", r.Name, r.Namespace)
			}
			leaseRules = append(leaseRules, r.Rules...)
		}
	}
	if role == nil {
		t.Fatal("deploy/rbac.yaml has no ClusterRole")
	}
	var want, wantLeases []string
	for _, p := range kube.Permissions() {
		if p.Resource == "leases" {
			wantLeases = append(wantLeases, p.String())
		} else {
			want = append(want, p.String())
		}
	}
	slices.Sort(want)
	slices.Sort(wantLeases)
	if got := grants(leaseRules); !slices.Equal(got, wantLeases) {
		t.Errorf("deploy/rbac.yaml's Role grants %q\ndcm uses %q", got, wantLeases)
	}
	// Events: exactly what client-go's events/v1 broadcaster sends (a
	// create, then patches of its series; never update, get or list).
	for _, verb := range []string{"create", "patch"} {
		if !slices.Contains(want, verb+" events.events.k8s.io") {
			t.Errorf("kube.Permissions() lacks %s events.events.k8s.io: %q", verb, want)
		}
	}
	if got := grants(role.Rules); !slices.Equal(got, want) {
		t.Errorf("deploy/rbac.yaml grants %q\ndcm uses %q", got, want)
	}
	// And the API server agrees that the ServiceAccount holds them.
	if _, err := kube.CheckAccess(context.Background(), dcmClient(t), nil, "dcm-system"); err != nil {
		t.Errorf("the deploy/ ServiceAccount: %v", err)
	}
}

// TestMissingPermissionIsNamed: dcm started with a token that lacks one verb
// stops at once and names the permission, instead of retrying a forbidden
// watch for ever.
func TestMissingPermissionIsNamed(t *testing.T) {
	ctx := context.Background()
	objs, err := kapitest.Decode(deployFile("rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var role *rbacv1.ClusterRole
	for _, o := range objs {
		if r, ok := o.(*rbacv1.ClusterRole); ok {
			role = r.DeepCopy()
		}
	}
	// The same role without watch on EndpointSlices, for a ServiceAccount of
	// this test's own namespace (names stay unique when tests run again).
	ns := kapitest.Namespace(t, env.admin)
	role.Name = ns + "-limited"
	for i, r := range role.Rules {
		if slices.Contains(r.Resources, "endpointslices") {
			role.Rules[i].Verbs = []string{"list"}
		}
	}
	if _, err := env.admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dcm-limited"}}
	if _, err := env.admin.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "dcm-limited"}},
	}
	if _, err := env.admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubeconfig := writeKubeconfig(t, serviceAccountConfig(t, ns, "dcm-limited"))
	bin := buildDCM(t)
	runCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(runCtx, bin, "--kubeconfig", kubeconfig, "--work-dir", t.TempDir(), "--listen", "127.0.0.1:0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("dcm with a token lacking a verb: %v, want exit status 1\n%s", err, stderr.String())
	}
	want := "missing permission: watch endpointslices.discovery.k8s.io in all namespaces"
	if !strings.Contains(stderr.String(), want) {
		t.Errorf("dcm's error does not name the missing permission %q:\n%s", want, stderr.String())
	}
}

// writeKubeconfig writes a kubeconfig of cfg's host and token, for the dcm
// binary.
func writeKubeconfig(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["kapi"] = &clientcmdapi.Cluster{Server: cfg.Host, InsecureSkipTLSVerify: true}
	kc.AuthInfos["dcm"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["kapi"] = &clientcmdapi.Context{Cluster: "kapi", AuthInfo: "dcm"}
	kc.CurrentContext = "kapi"
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}

// buildDCM builds the dcm binary, as shipped.
func buildDCM(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "dcm")
	build := exec.Command("go", "build", "-o", bin, "../..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}
