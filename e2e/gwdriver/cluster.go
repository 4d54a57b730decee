// Package gwdriver is the environment of make conformance: a fresh test
// control plane (e2e/kapi) with the Gateway API's standard CRDs and the
// GatewayClass "dcm", the test kubelet serving the suite's echo-basic pods
// (e2e/kapitest, e2e/echobasic), and the dcm binary as shipped; then it
// runs the conformance suite (the nested module e2e/gwconformance) against
// them and sums up its report with dcm's reloads. Its test,
// TestConformance, is built only with -tags conformance, so go test ./...
// leaves it out (docs/conformance.md).
package gwdriver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
)

// Names of what the environment creates.
const (
	// GatewayClassName is the class the suite's Gateways use (the suite's
	// runner, e2e/gwconformance, names the same).
	GatewayClassName = "dcm"
	// ControllerName is dcm's --gateway-controller-name default.
	ControllerName = "dcm-router.io/gateway-controller"
	gatewayModule  = "sigs.k8s.io/gateway-api"
)

var (
	crdGVR          = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	gatewayClassGVR = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gatewayclasses"}
)

// GatewayAPIDir is the directory of sigs.k8s.io/gateway-api in the module
// cache, at the version the suite's module (suiteDir) requires: its
// config/crd/standard holds the CRDs the suite was written against.
func GatewayAPIDir(ctx context.Context, suiteDir string) (string, error) {
	run := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = suiteDir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("go %s in %s: %w\n%s", strings.Join(args, " "), suiteDir, err, stderr.String())
		}
		return strings.TrimSpace(string(out)), nil
	}
	if _, err := run("mod", "download", gatewayModule); err != nil {
		return "", err
	}
	return run("list", "-m", "-f", "{{.Dir}}", gatewayModule)
}

// ApplyCRDs creates the CustomResourceDefinitions of the YAML files in dir
// (other kinds there are left alone) and waits until the API server serves
// each. It returns their names.
func ApplyCRDs(ctx context.Context, dyn dynamic.Interface, dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, f := range files {
		objs, err := decodeFile(f)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if o.GetKind() != "CustomResourceDefinition" {
				continue
			}
			if _, err := dyn.Resource(crdGVR).Create(ctx, o, metav1.CreateOptions{}); err != nil {
				return nil, fmt.Errorf("create CRD %s: %w", o.GetName(), err)
			}
			names = append(names, o.GetName())
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no CustomResourceDefinition in %s", dir)
	}
	for _, n := range names {
		if err := waitEstablished(ctx, dyn, n); err != nil {
			return nil, err
		}
	}
	return names, nil
}

func decodeFile(path string) ([]*unstructured.Unstructured, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	var out []*unstructured.Unstructured
	for {
		o := &unstructured.Unstructured{}
		if err := dec.Decode(&o.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(o.Object) > 0 {
			out = append(out, o)
		}
	}
}

// waitEstablished waits for the CRD's Established condition, a minute at most.
func waitEstablished(ctx context.Context, dyn dynamic.Interface, name string) error {
	deadline := time.Now().Add(time.Minute)
	for {
		o, err := dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("CRD %s: %w", name, err)
		}
		conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "Established" && m["status"] == "True" {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("CRD %s not established within a minute: %v", name, conds)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// CreateGatewayClass creates the GatewayClass name for controller.
func CreateGatewayClass(ctx context.Context, dyn dynamic.Interface, name, controller string) error {
	gc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"controllerName": controller},
	}}
	_, err := dyn.Resource(gatewayClassGVR).Create(ctx, gc, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create GatewayClass %s: %w", name, err)
	}
	return nil
}
