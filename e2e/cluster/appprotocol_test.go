package cluster

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// podProto is what HAProxy spoke to the pod that answered host, as the
// pod reports it.
func podProto(addr, host string) (string, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
	if err != nil {
		return "", err
	}
	req.Host = host
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return resp.Header.Get("X-Pod-Proto"), nil
}

// TestAppProtocolH2cAtRuntime: a Deployment's Service port gets appProtocol
// kubernetes.io/h2c while dcm serves it under load; the real endpointslice
// controller copies it into the EndpointSlice, and dcm replaces the
// servers side by side with proto h2 ones: the pods are then spoken to over
// h2c, not one request fails, no reload, same worker. Taking it away goes
// back the same way.
func TestAppProtocolH2cAtRuntime(t *testing.T) {
	ns, host, s := served(t, "h2app", 2)
	pid, reloads := s.WorkerPID(), s.Reloads()
	if got, err := podProto(s.HTTPAddr, host); err != nil || got != "HTTP/1.1" {
		t.Fatalf("before: the pod was spoken to over %q (%v), want HTTP/1.1", got, err)
	}
	setAppProtocol := func(app *string) {
		t.Helper()
		svcs := env.admin.CoreV1().Services(ns)
		svc, err := svcs.Get(context.Background(), "h2app", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		svc.Spec.Ports[0].AppProtocol = app
		if _, err := svcs.Update(context.Background(), svc, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range []struct {
		app  *string
		want string
	}{{ptr.To("kubernetes.io/h2c"), "HTTP/2.0"}, {nil, "HTTP/1.1"}} {
		load := s.StartLoad(host, "/")
		setAppProtocol(step.app)
		s.Eventually("every pod spoken to over "+step.want, 20*time.Second, func() error {
			for range 6 {
				got, err := podProto(s.HTTPAddr, host)
				if err != nil {
					return err
				}
				if got != step.want {
					return fmt.Errorf("a pod spoken to over %s", got)
				}
			}
			return nil
		})
		ok, fail, last := load.Finish()
		if fail > 0 || ok == 0 {
			t.Errorf("under load to %s: %d ok, %d failed (last: %s)", step.want, ok, fail, last)
		}
	}
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("worker %d → %d, reloads %v → %v", pid, s.WorkerPID(), reloads, s.Reloads())
	}
}
