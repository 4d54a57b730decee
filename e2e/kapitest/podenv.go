package kapitest

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"net/netip"
	"path"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// volumeWait is how often a pod whose Secret or ConfigMap does not exist
// yet looks again, as a kubelet keeps a pod in ContainerCreating until its
// volumes can be mounted.
const volumeWait = 500 * time.Millisecond

// podFiles are the files of a container's Secret and ConfigMap volumes, by
// their path inside the container.
type podFiles map[string][]byte

func (f podFiles) read(p string) ([]byte, error) {
	if b, ok := f[path.Clean(p)]; ok {
		return b, nil
	}
	return nil, fmt.Errorf("%s: %w (not in a Secret or ConfigMap volume of the pod)", p, fs.ErrNotExist)
}

// volumeFiles reads the Secret and ConfigMap volumes c mounts, waiting for
// those that do not exist yet (as long as the pod lives). Other kinds of
// volume have no files here, and the log says so.
func (k *Kubelet) volumeFiles(ctx context.Context, rp *runningPod, c *corev1.Container, log *slog.Logger) (podFiles, error) {
	files := podFiles{}
	for _, m := range c.VolumeMounts {
		var v *corev1.Volume
		for i := range rp.spec.Spec.Volumes {
			if rp.spec.Spec.Volumes[i].Name == m.Name {
				v = &rp.spec.Spec.Volumes[i]
			}
		}
		switch {
		case v == nil:
			return nil, fmt.Errorf("volume mount %q names no volume of the pod", m.Name)
		case m.SubPath != "":
			log.Warn("volume mount with subPath: no files", "volume", m.Name)
		case v.Secret != nil:
			data, err := waitFor(ctx, rp, log, "Secret "+v.Secret.SecretName, func() (map[string][]byte, error) {
				s, err := k.client.CoreV1().Secrets(rp.ns).Get(ctx, v.Secret.SecretName, metav1.GetOptions{})
				if err != nil {
					return nil, err
				}
				return s.Data, nil
			})
			if err != nil {
				return nil, err
			}
			project(files, m.MountPath, data, v.Secret.Items)
		case v.ConfigMap != nil:
			data, err := waitFor(ctx, rp, log, "ConfigMap "+v.ConfigMap.Name, func() (map[string][]byte, error) {
				cm, err := k.client.CoreV1().ConfigMaps(rp.ns).Get(ctx, v.ConfigMap.Name, metav1.GetOptions{})
				if err != nil {
					return nil, err
				}
				data := map[string][]byte{}
				for key, s := range cm.Data {
					data[key] = []byte(s)
				}
				for key, b := range cm.BinaryData {
					data[key] = b
				}
				return data, nil
			})
			if err != nil {
				return nil, err
			}
			project(files, m.MountPath, data, v.ConfigMap.Items)
		default:
			log.Warn("volume kind not materialized by the test kubelet: no files", "volume", m.Name)
		}
	}
	return files, nil
}

// project puts data's keys (or only items, under their paths) under dir.
func project(files podFiles, dir string, data map[string][]byte, items []corev1.KeyToPath) {
	if len(items) == 0 {
		for key, b := range data {
			files[path.Join(dir, key)] = b
		}
		return
	}
	for _, it := range items {
		if b, ok := data[it.Key]; ok {
			files[path.Join(dir, it.Path)] = b
		}
	}
}

// waitFor calls get until the object exists, the pod goes or ctx ends.
func waitFor[T any](ctx context.Context, rp *runningPod, log *slog.Logger, what string, get func() (T, error)) (T, error) {
	for warned := false; ; warned = true {
		v, err := get()
		if err == nil || !apierrors.IsNotFound(err) {
			return v, err
		}
		if !warned {
			log.Info("pod waits for its volume", "object", what)
		}
		select {
		case <-ctx.Done():
			return v, ctx.Err()
		case <-rp.terminate:
			return v, fmt.Errorf("pod deleted while waiting for %s", what)
		case <-time.After(volumeWait):
		}
	}
}

// containerEnv is c's environment as the container sees it: literal values,
// the pod fields of fieldRef, and keys of Secrets and ConfigMaps. What the
// kubelet cannot resolve is left out, and the log says which.
func (k *Kubelet) containerEnv(ctx context.Context, rp *runningPod, c *corev1.Container, addr netip.Addr, log *slog.Logger) map[string]string {
	env := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			env[e.Name] = e.Value
			continue
		}
		v, err := k.envFrom(ctx, rp, e.ValueFrom, addr)
		if err != nil {
			log.Warn("container environment variable left out", "name", e.Name, "err", err)
			continue
		}
		env[e.Name] = v
	}
	return env
}

func (k *Kubelet) envFrom(ctx context.Context, rp *runningPod, src *corev1.EnvVarSource, addr netip.Addr) (string, error) {
	switch {
	case src.FieldRef != nil:
		switch src.FieldRef.FieldPath {
		case "metadata.name":
			return rp.name, nil
		case "metadata.namespace":
			return rp.ns, nil
		case "metadata.uid":
			return string(rp.uid), nil
		case "spec.nodeName":
			return NodeName, nil
		case "spec.serviceAccountName":
			return rp.spec.Spec.ServiceAccountName, nil
		case "status.podIP":
			return addr.String(), nil
		case "status.hostIP":
			return "127.0.0.1", nil
		}
		return "", fmt.Errorf("fieldRef %s not supported", src.FieldRef.FieldPath)
	case src.SecretKeyRef != nil:
		s, err := k.client.CoreV1().Secrets(rp.ns).Get(ctx, src.SecretKeyRef.Name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		if b, ok := s.Data[src.SecretKeyRef.Key]; ok {
			return string(b), nil
		}
		return "", fmt.Errorf("no key %s in Secret %s", src.SecretKeyRef.Key, src.SecretKeyRef.Name)
	case src.ConfigMapKeyRef != nil:
		cm, err := k.client.CoreV1().ConfigMaps(rp.ns).Get(ctx, src.ConfigMapKeyRef.Name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		if v, ok := cm.Data[src.ConfigMapKeyRef.Key]; ok {
			return v, nil
		}
		return "", fmt.Errorf("no key %s in ConfigMap %s", src.ConfigMapKeyRef.Key, src.ConfigMapKeyRef.Name)
	}
	return "", fmt.Errorf("source %v not supported", src)
}
