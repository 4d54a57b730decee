package browser

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/chromedp/chromedp"
)

// browser is the package's one chromium, started by TestMain before any
// test runs and never changed after; nil when chromium is not installed,
// and missing says why.
var browser struct {
	ctx     context.Context
	missing string
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// Debian's chromium package puts the real binary in /usr/lib/chromium;
	// /usr/bin/chromium is a shell wrapper that prints noise.
	bin := ""
	for _, p := range []string{"/usr/lib/chromium/chromium", "chromium"} {
		if path, err := exec.LookPath(p); err == nil {
			bin = path
			break
		}
	}
	if bin == "" {
		browser.missing = "chromium is not installed: install Debian's chromium package (make deps)"
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "dcm-chromium")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(bin),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		// Tabs live in windows of their own; none of them may be slowed
		// down for being in the background, or timings would lie.
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("disable-backgrounding-occluded-windows", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.UserDataDir(dir),
		chromedp.WindowSize(1280, 900),
	)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(allocCtx)
	defer cancel()
	if err := chromedp.Do(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "starting %s: %v\n", bin, err)
		return 1
	}
	browser.ctx = ctx
	return m.Run()
}
