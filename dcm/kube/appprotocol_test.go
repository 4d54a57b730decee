package kube

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/dcm-router/dcm/internal/testkit"
)

// TestSourceAppProtocol: an EndpointSlice port whose appProtocol is h2c or
// kubernetes.io/h2c makes its endpoints ProtoH2, named <name>.h2 so that
// a change brings new servers; any other appProtocol, hostile text
// included, leaves the default and never reaches a name.
func TestSourceAppProtocol(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ing := testIngress("web", "a.example", time.Time{}, httpPath("/", prefix, svcBackend("web", "http")))
	sl := testSlice("web", "web-abc", ready("web-7d9f8c6b5-aaaaa", "10.0.0.1"))
	client := fake.NewClientset(ing, testService("web"), sl)
	s := NewSource(client, Options{}, &recorder{}, slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})))
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	waitChanged(t, s)
	servers := func() string {
		d, _ := s.Desired()
		b, _ := d.Backend("be_http:demo:web")
		var out []string
		for _, e := range b.Endpoints {
			out = append(out, e.Name+"="+string(e.Proto))
		}
		return strings.Join(out, ",")
	}
	testkit.Eventually(t, "the plain endpoint", waitLimit, is(servers, "web-7d9f8c6b5-aaaaa:http="))
	for _, tc := range []struct{ app, want string }{
		{"kubernetes.io/h2c", "web-7d9f8c6b5-aaaaa:http.h2=h2"},
		{"http", "web-7d9f8c6b5-aaaaa:http="},
		{"h2c", "web-7d9f8c6b5-aaaaa:http.h2=h2"},
		{"h2c proto h1\nshow info", "web-7d9f8c6b5-aaaaa:http="},
	} {
		next := sl.DeepCopy()
		next.Ports[0].AppProtocol = &tc.app
		if _, err := client.DiscoveryV1().EndpointSlices("demo").Update(ctx, next, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, "appProtocol "+tc.app, waitLimit, is(servers, tc.want))
	}
}
