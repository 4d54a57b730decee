package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/e2e/harness"
)

const whatifToken = "whatif-0123456789abcdef"

func apiCall(t *testing.T, s *harness.Stack, method, path string, body any, out any) int {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, s.PortalURL+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+whatifToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v\n%s", method, path, err, raw)
		}
	}
	return resp.StatusCode
}

func scaleWeb(n int) []dcm.WhatIf {
	return []dcm.WhatIf{{Kind: dcm.WhatIfScale, Namespace: "demo", Workload: &dcm.WorkloadRef{Kind: "Deployment", Name: "web"}, Replicas: n}}
}

// predictions waits for the next prediction event.
func prediction(t *testing.T, s *harness.Stack, rec *harness.Recorder) dcm.PredictionCheck {
	t.Helper()
	var got dcm.PredictionCheck
	s.Eventually("the change is compared with its preview", 30*time.Second, func() error {
		for _, ev := range rec.Events() {
			if ev.Type == dcm.EventPrediction {
				got = *ev.Prediction
				return nil
			}
		}
		return fmt.Errorf("no prediction event yet")
	})
	return got
}

// TestPreviewThenApply: POST /api/v1/plan previews scaling web to 5 (runtime
// commands, no reload); the change made with the preview's seq does exactly
// what was predicted and HAProxy serves the 5 pods; a preview made stale by
// another change is refused with 409 and nothing is scaled.
func TestPreviewThenApply(t *testing.T) {
	s := harness.Start(t, harness.WithTokens(t, harness.Options{}, whatifToken+" admin alice"))
	s.DemoServes(webHost, "/", "demo", "web", 2)
	rec := s.Subscribe(t)

	var sim dcm.Simulation
	if code := apiCall(t, s, "POST", "/api/v1/plan", map[string]any{"whatifs": scaleWeb(5)}, &sim); code != 200 {
		t.Fatalf("plan: HTTP %d", code)
	}
	if sim.Reloads != 0 || sim.After.Ready-sim.Before.Ready != 3 || len(sim.Errors) > 0 {
		t.Fatalf("preview: %+v", sim)
	}
	adds := 0
	for _, st := range sim.Steps {
		for _, op := range st.Ops {
			if op.Kind == dcm.OpAddServer {
				adds++
			}
		}
	}
	if adds != 3 {
		t.Errorf("the preview adds %d servers, want 3", adds)
	}

	code := apiCall(t, s, "POST", "/api/v1/scale", map[string]any{"namespace": "demo", "kind": "Deployment", "name": "web",
		"replicas": 5, "expectSeq": sim.Seq}, nil)
	if code != http.StatusAccepted {
		t.Fatalf("scale with the preview's seq: HTTP %d (state moved since seq %d?)", code, sim.Seq)
	}
	check := prediction(t, s, rec)
	if !check.Match {
		t.Errorf("the change did not do what was predicted: predicted %v, applied %v", check.Predicted, check.Actual)
	}
	s.DemoServes(webHost, "/", "demo", "web", 5)
	if s.Counter("dcm_prediction_mismatch_total") != 0 {
		t.Error("a mismatch was counted")
	}

	// The preview's backend changed since its seq: refused, nothing scaled.
	code = apiCall(t, s, "POST", "/api/v1/scale", map[string]any{"namespace": "demo", "kind": "Deployment", "name": "web",
		"replicas": 1, "expectSeq": sim.Seq}, nil)
	if code != http.StatusConflict {
		t.Fatalf("a stale preview: HTTP %d, want 409", code)
	}
	// The scale is a synchronous update of the Deployment: had it gone
	// through, spec.replicas would say 1 already.
	if n := s.DesiredReplicas("demo", "web"); n != 5 {
		t.Errorf("after a refused scale web wants %d replicas, want 5", n)
	}
}

// TestPredictionMismatchIsCounted: when something else changes the same
// backend while a change runs, what is applied differs from the preview: an
// event says so and dcm_prediction_mismatch_total counts it.
func TestPredictionMismatchIsCounted(t *testing.T) {
	s := harness.Start(t, harness.WithTokens(t, harness.Options{}, whatifToken+" admin alice"))
	s.DemoServes(webHost, "/", "demo", "web", 2)
	rec := s.Subscribe(t)
	if code := apiCall(t, s, "POST", "/api/v1/scale", map[string]any{"namespace": "demo", "kind": "Deployment", "name": "web", "replicas": 3}, nil); code != http.StatusAccepted {
		t.Fatalf("scale: HTTP %d", code)
	}
	// Meanwhile an admin drains a pod of the same backend.
	pod := s.ReadyPods("demo", "web")[0]
	if err := s.Engine.SetServerState("bob", webBE, pod+":http", dcm.StateDrain); err != nil {
		t.Fatal(err)
	}
	check := prediction(t, s, rec)
	if check.Match {
		t.Errorf("a drain nobody predicted still matched: %v vs %v", check.Predicted, check.Actual)
	}
	if s.Counter("dcm_prediction_mismatch_total") != 1 {
		t.Errorf("dcm_prediction_mismatch_total = %v, want 1", s.Counter("dcm_prediction_mismatch_total"))
	}
}

// TestPreviewStaysValidWhenOthersChange: events about other backends after
// the preview do not make it stale.
func TestPreviewStaysValidWhenOthersChange(t *testing.T) {
	s := harness.Start(t, harness.WithTokens(t, harness.Options{}, whatifToken+" admin alice"))
	s.DemoServes(webHost, "/", "demo", "web", 2)
	var sim dcm.Simulation
	if code := apiCall(t, s, "POST", "/api/v1/plan", map[string]any{"whatifs": scaleWeb(3)}, &sim); code != 200 {
		t.Fatalf("plan: HTTP %d", code)
	}
	s.Scale("demo", "shop", 3) // another app moves the seq
	s.DemoServes(shopHost, "/", "demo", "shop", 3)
	if s.Engine.Snapshot().Seq == sim.Seq {
		t.Fatal("the seq did not move; the test proves nothing")
	}
	code := apiCall(t, s, "POST", "/api/v1/scale", map[string]any{"namespace": "demo", "kind": "Deployment", "name": "web",
		"replicas": 3, "expectSeq": sim.Seq}, nil)
	if code != http.StatusAccepted {
		t.Fatalf("scale after unrelated changes: HTTP %d, want 202", code)
	}
	s.DemoServes(webHost, "/", "demo", "web", 3)
}
