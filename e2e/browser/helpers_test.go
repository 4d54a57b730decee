package browser

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/e2e/harness"
)

const (
	webHost    = "web.demo.localhost"
	webBackend = "be_http:demo:web"
	// artifacts is e2e/artifacts (gitignored): screenshots of every run.
	artifacts = "../artifacts"
	// actionTimeout bounds anything one test asks of the browser.
	actionTimeout = 90 * time.Second
)

// portal is a stack serving the portal, with an admin and a viewer token.
type portal struct {
	*harness.Stack
	admin, viewer string
}

func randomToken(t testing.TB) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// startPortal runs the demo stack with the portal, and waits until HAProxy
// serves every demo app from all its pods.
func startPortal(t testing.TB) portal {
	t.Helper()
	return startPortalWith(t, harness.Options{})
}

// startPortalWith is startPortal with options of the test's (caps, say).
func startPortalWith(t testing.TB, o harness.Options) portal {
	t.Helper()
	needBrowser(t)
	p := portal{admin: randomToken(t), viewer: randomToken(t)}
	p.Stack = harness.Start(t, harness.WithTokens(t, o, p.admin+" admin alice\n"+p.viewer+" viewer victor\n"))
	p.DemoServes(webHost, "/", "demo", "web", 2)
	p.DemoServes("shop.demo.localhost", "/", "demo", "shop", 2)
	p.DemoServes("shop.demo.localhost", "/api", "demo", "api", 1)
	return p
}

func needBrowser(t testing.TB) {
	t.Helper()
	if browser.ctx == nil {
		t.Skip(browser.missing)
	}
}

// newTab opens a tab in a browser context of its own (fresh cookies), with
// a 1280×900 viewport in the light theme, closed when the test ends.
func newTab(t testing.TB) context.Context {
	t.Helper()
	needBrowser(t)
	ctx, cancel := chromedp.NewContext(browser.ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	return setUpTab(t, ctx)
}

// siblingTab opens another tab in the browser context of ctx: it shares
// the session.
func siblingTab(t testing.TB, ctx context.Context) context.Context {
	t.Helper()
	tab, cancel := chromedp.NewContext(ctx)
	t.Cleanup(cancel)
	return setUpTab(t, tab)
}

func setUpTab(t testing.TB, ctx context.Context) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, actionTimeout)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "light"}},
	}); err != nil {
		t.Fatalf("light theme: %v", err)
	}
	return ctx
}

// signIn signs in through the login form and lands on next.
func signIn(t testing.TB, ctx context.Context, base, token, next string) {
	t.Helper()
	do(t, ctx, chromedp.Navigate(base+"/login?next="+url.QueryEscape(next)),
		chromedp.SetValue(chromedp.ID("token"), token),
		chromedp.Submit(chromedp.ID("token")),
		chromedp.WaitVisible(chromedp.ID("feed")),
	)
	if loc := eval[string](t, ctx, `location.pathname + location.search`); loc != next {
		t.Fatalf("after signing in at %s, want %s", loc, next)
	}
}

// open navigates and waits until the page's feed is live.
func open(t testing.TB, ctx context.Context, url string) {
	t.Helper()
	do(t, ctx, chromedp.Navigate(url))
	waitFor(t, ctx, "the feed is live on "+url, 10*time.Second, `document.getElementById('feed').dataset.state === 'live'`)
}

func do(t testing.TB, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

func eval[T any](t testing.TB, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// evalAwait evaluates an expression that gives a promise, and waits for it.
func evalAwait[T any](t testing.TB, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// waitFor polls a JavaScript condition until it holds; on timeout it shows
// what report (a JavaScript expression) says about the page.
func waitFor(t testing.TB, ctx context.Context, what string, timeout time.Duration, cond string, report ...string) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](cond))
		if err == nil && ok {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			msg := fmt.Sprintf("%s: not within %s (%s)", what, timeout, cond)
			if err != nil {
				msg += ": " + err.Error()
			}
			for _, r := range report {
				msg += fmt.Sprintf("\n  %s = %v", r, eval[any](t, ctx, r))
			}
			t.Fatal(msg)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// screenshot saves the viewport to e2e/artifacts/<name>.png.
func screenshot(t testing.TB, ctx context.Context, name string) {
	t.Helper()
	save(t, ctx, name, artifacts)
}

// readmeShot is a screenshot the README shows: also saved into
// $DCM_SCREENSHOTS when set (DCM_SCREENSHOTS=$PWD/docs/screenshots go test
// ./e2e/browser/ refreshes the README's).
func readmeShot(t testing.TB, ctx context.Context, name string) {
	t.Helper()
	save(t, ctx, name, artifacts, os.Getenv("DCM_SCREENSHOTS"))
}

func save(t testing.TB, ctx context.Context, name string, dirs ...string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	for _, dir := range dirs {
		if dir == "" {
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// servers lists a backend's servers in the engine's picture.
func servers(s *harness.Stack, backend string) []dcm.Server {
	for _, b := range s.Engine.Snapshot().Backends {
		if b.Name == backend {
			return b.Servers
		}
	}
	return nil
}

// chipsJS counts the chips of a backend's row on a page.
func chipsJS(backend string) string {
	return fmt.Sprintf(`document.querySelectorAll('#backend-rows [data-backend=%q] .chip').length`, backend)
}

// jsString quotes s for JavaScript.
func jsString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", `\n`).Replace(s) + "'"
}
