package deploy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/dcm-router/dcm/internal/testkit"
	"github.com/dcm-router/dcm/system"
)

// TestDeployKustomization applies deploy/ as README says, kubectl apply -k
// deploy/, and checks that the kustomization lists every manifest of the
// directory, that every object it renders is in the API server as kubectl
// applied it, and that the dcm container's arguments are a command line
// dcm accepts — a misspelt flag would stop the pod at start, which no
// apply, dry-run or schema check sees. It deletes what it applied.
func TestDeployKustomization(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl is not installed: deploy/ cannot be applied as README says")
	}
	dir := deployDir(t)
	objs := rendered(t, dir)
	checkEveryManifestListed(t, dir, objs)

	kubectl(t, "apply", "-k", dir)
	t.Cleanup(func() { deleteApplied(t, dir, objs) })
	// A second apply is the one an upgrade makes: it must find nothing to refuse.
	kubectl(t, "apply", "-k", dir)

	get := getter(t)
	for _, o := range objs {
		got, err := get(t.Context(), o)
		if err != nil {
			t.Errorf("%s after kubectl apply -k: %v", key(o), err)
			continue
		}
		if _, ok := got.GetAnnotations()["kubectl.kubernetes.io/last-applied-configuration"]; !ok {
			t.Errorf("%s exists but was not applied by kubectl (no last-applied-configuration)", key(o))
		}
	}

	d, err := env.cp.Client(t).AppsV1().Deployments("dcm-system").Get(t.Context(), "dcm", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the dcm Deployment: %v", err)
	}
	c := container(t, d.Spec.Template.Spec.Containers, "dcm")
	if len(c.Command) > 0 {
		t.Fatalf("the dcm container sets command %q: the image's entrypoint is dcm, and its args are dcm's flags", c.Command)
	}
	cfg, err := parseArgs(c.Args)
	if err != nil {
		t.Fatalf("the dcm container's args %q are not a command line dcm accepts: %v", c.Args, err)
	}
	checkConfig(t, cfg, c)
	checkAvailability(t, d, c)
}

// checkAvailability holds deploy/ to what a fleet of routers needs: two
// replicas, a disruption budget that keeps one, readiness on /readyz (the
// first sync done), and resource requests for the scheduler.
func checkAvailability(t *testing.T, d *appsv1.Deployment, c corev1.Container) {
	t.Helper()
	replicas := int32(1) // the API's default
	if d.Spec.Replicas != nil {
		replicas = *d.Spec.Replicas
	}
	if replicas < 2 {
		t.Errorf("the dcm Deployment runs %d replicas, want at least 2", replicas)
	}
	if p := c.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" {
		t.Errorf("the dcm container's readiness probe %+v: want GET /readyz", p)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Errorf("the dcm container requests %v: want cpu and memory", c.Resources.Requests)
	}
	pdbs, err := env.cp.Client(t).PolicyV1().PodDisruptionBudgets("dcm-system").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("PodDisruptionBudgets: %v", err)
	}
	pods := labels.Set(d.Spec.Template.Labels)
	for _, p := range pdbs.Items {
		sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
		if err == nil && sel.Matches(pods) && p.Spec.MinAvailable != nil && p.Spec.MinAvailable.IntValue() >= 1 {
			return
		}
	}
	t.Errorf("no PodDisruptionBudget keeps one of dcm's pods (labels %v) available: %d budgets", pods, len(pdbs.Items))
}

// TestDeployArgsRejectMistakes: the check TestDeployKustomization makes of
// the container's arguments refuses what dcm would refuse at start.
func TestDeployArgsRejectMistakes(t *testing.T) {
	for _, args := range [][]string{
		{"--htps-bind=0.0.0.0:8443"},
		{"--work-dir", "/var/lib/dcm/run", "--listen"},
		{"work-dir=/var/lib/dcm/run"},
		{"--mode=dynamc"},
		{"--pool-size=ten"},
	} {
		if _, err := parseArgs(args); err == nil {
			t.Errorf("args %q accepted", args)
		}
	}
	if _, err := parseArgs([]string{"--work-dir=/x", "--listen=0.0.0.0:8080", "--mode", "slots"}); err != nil {
		t.Errorf("valid args refused: %v", err)
	}
}

// parseArgs reads args as main's parseFlags does: flags over
// system.Defaults, no positional argument, a Config that validates.
func parseArgs(args []string) (system.Config, error) {
	c := system.Defaults()
	fs := c.FlagSet()
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return c, c.Validate()
}

// checkConfig holds deploy/'s dcm to what a pod needs: the cluster it runs
// in, not the demo, and its files and token on volumes, since the root
// filesystem is read-only.
func checkConfig(t *testing.T, cfg system.Config, c corev1.Container) {
	t.Helper()
	if cfg.Demo || cfg.Kubeconfig != "" {
		t.Errorf("deploy/ runs dcm with --demo=%t --kubeconfig=%q: want the in-cluster config", cfg.Demo, cfg.Kubeconfig)
	}
	for flag, path := range map[string]string{"--work-dir": cfg.WorkDir, "--auth-token-file": cfg.AuthTokenFile} {
		if path == "" || !onVolume(c, path) {
			t.Errorf("%s=%q is not on a volume of the container (mounts %v)", flag, path, c.VolumeMounts)
		}
	}
}

func onVolume(c corev1.Container, path string) bool {
	return slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
		return path == m.MountPath || strings.HasPrefix(path, strings.TrimSuffix(m.MountPath, "/")+"/")
	})
}

func container(t *testing.T, cs []corev1.Container, name string) corev1.Container {
	t.Helper()
	i := slices.IndexFunc(cs, func(c corev1.Container) bool { return c.Name == name })
	if i < 0 {
		t.Fatalf("no container %q in the Deployment", name)
	}
	return cs[i]
}

// checkEveryManifestListed: the objects of deploy/*.yaml are exactly those
// the kustomization renders, so a manifest added to deploy/ but not to
// kustomization.yaml is caught here rather than missing from a cluster.
func checkEveryManifestListed(t *testing.T, dir string, objs []*unstructured.Unstructured) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var inFiles []string
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fobjs, err := decodeAll(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, o := range fobjs {
			inFiles = append(inFiles, key(o))
		}
	}
	var inKustomization []string
	for _, o := range objs {
		inKustomization = append(inKustomization, key(o))
	}
	slices.Sort(inFiles)
	slices.Sort(inKustomization)
	if !slices.Equal(inFiles, inKustomization) {
		t.Errorf("deploy/*.yaml hold %q, the kustomization renders %q", inFiles, inKustomization)
	}
}

// deleteApplied deletes what the apply made and waits until it is gone.
// e2e/kapi runs no garbage collector nor namespace controller: the
// ReplicaSet and Pod the deployment controller made for dcm's Deployment
// are deleted here, and the Namespace stays Terminating.
func deleteApplied(t *testing.T, dir string, objs []*unstructured.Unstructured) {
	ctx := context.Background()
	kubectl(t, "delete", "-k", dir, "--wait=false", "--ignore-not-found")
	admin, get := env.cp.Client(t), getter(t)
	testkit.Eventually(t, "deploy/'s objects deleted", 30*time.Second, func() error {
		for _, ns := range namespaces(objs) {
			if err := admin.AppsV1().ReplicaSets(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
				return fmt.Errorf("delete the ReplicaSets of %s: %w", ns, err)
			}
			if err := admin.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
				return fmt.Errorf("delete the Pods of %s: %w", ns, err)
			}
			pods, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return fmt.Errorf("list the Pods of %s: %w", ns, err)
			}
			if len(pods.Items) > 0 {
				return fmt.Errorf("%d pods left in %s", len(pods.Items), ns)
			}
		}
		for _, o := range objs {
			got, err := get(ctx, o)
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				return fmt.Errorf("%s: %w", key(o), err)
			case o.GetKind() == "Namespace" && got.GetDeletionTimestamp() != nil:
			default:
				return fmt.Errorf("%s still there", key(o))
			}
		}
		return nil
	})
}

func namespaces(objs []*unstructured.Unstructured) []string {
	var ns []string
	for _, o := range objs {
		if n := o.GetNamespace(); n != "" && !slices.Contains(ns, n) {
			ns = append(ns, n)
		}
	}
	return ns
}

// rendered is what kubectl apply -k dir applies, as kubectl renders it.
func rendered(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := decodeAll(strings.NewReader(kubectl(t, "kustomize", dir)))
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v", dir, err)
	}
	if len(objs) == 0 {
		t.Fatalf("kubectl kustomize %s renders nothing", dir)
	}
	return objs
}

// getter reads an object of any kind back from the API server.
func getter(t *testing.T) func(context.Context, *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(env.cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(env.cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	return func(ctx context.Context, o *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return nil, fmt.Errorf("map %s: %w", gvk, err)
		}
		var r dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			r = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		return r.Get(ctx, o.GetName(), metav1.GetOptions{})
	}
}

// decodeAll reads the objects of a multi-document YAML stream; a document
// of comments only is none.
func decodeAll(r io.Reader) ([]*unstructured.Unstructured, error) {
	d := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		err := d.Decode(&m)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(m) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
}

func key(o *unstructured.Unstructured) string {
	return fmt.Sprintf("%s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
}

// kubectl runs kubectl with the control plane's admin kubeconfig and
// returns what it prints.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", env.cp.Kubeconfig}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

func deployDir(t *testing.T) string {
	t.Helper()
	// go test runs a test in its package's directory.
	dir, err := filepath.Abs(filepath.Join("..", "..", "deploy"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
