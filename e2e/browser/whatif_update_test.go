package browser

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestWhatIfChangeRoute: a route's annotation change, stacked from the
// form, previews as what the change does: a server timeout is one setting
// map's replace and no reload; an allowlist is the allowlist map's.
func TestWhatIfChangeRoute(t *testing.T) {
	p := startPortal(t)
	tab := openWhatIf(t, p)
	stack := func(change string) {
		eval[bool](t, tab.Context, fmt.Sprintf(`(() => {
			const kind = document.getElementById('wi-add-kind');
			kind.value = 'update-route'; kind.dispatchEvent(new Event('change'));
			document.getElementById('wi-upd-backend').value = 'be_http:demo:web';
			document.getElementById('wi-upd-change').value = %s;
			document.getElementById('wi-add').click();
			return true;
		})()`, jsString(change)))
	}
	sim := `JSON.parse(window.dcmWhatIf.lastSim)`
	stack("timeout-5m")
	waitFor(t, tab.Context, "the timeout change previewed as a map replace", 10*time.Second, fmt.Sprintf(`(() => {
		const s = %s;
		const last = s.steps[s.steps.length - 1];
		return s.reloads === 0 && !s.errors && last.phase === 'route updated' &&
			last.ops.some((o) => o.op === 'map-replace' && o.map === 'timeout_server');
	})()`, sim), `window.dcmWhatIf.lastSim`)
	if got := textOf(t, tab.Context, "#wi-stack"); !strings.Contains(got, "change route demo/web: server timeout 5 minutes") {
		t.Errorf("the stack reads %q", got)
	}
	if txt := textOf(t, tab.Context, "#preview .verdict"); !strings.Contains(txt, "No reload") {
		t.Errorf("the verdict reads %q", txt)
	}

	// Remove it, and allow only loopback clients instead.
	do(t, tab.Context, chromedp.Click(chromedp.CSS(`#wi-stack li:nth-child(1) button`)))
	stack("allow-loopback")
	waitFor(t, tab.Context, "the allowlist previewed as its map's replace", 10*time.Second, fmt.Sprintf(`(() => {
		const s = %s;
		const last = s.steps[s.steps.length - 1];
		return document.querySelectorAll('#wi-stack li').length === 1 && s.reloads === 0 && !s.errors &&
			last.phase === 'route updated' && last.ops.length === 1 && last.ops[0].op === 'map-replace' &&
			last.ops[0].map === 'allowlist' && last.ops[0].set.length === 1 && last.ops[0].set[0].action === '127.0.0.0/8';
	})()`, sim), `window.dcmWhatIf.lastSim`)
}
