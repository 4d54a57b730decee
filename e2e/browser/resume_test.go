package browser

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"
)

// TestFeedResumesAfterCut: when the connection to dcm is cut, the pages say
// they are reconnecting, come back by themselves, resume from the last seq
// they saw and miss nothing that happened meanwhile: the scale made while
// they were cut off shows, the feed's seq is the hub's, no seq was skipped,
// and the audit log lists every event once, in order.
func TestFeedResumesAfterCut(t *testing.T) {
	p := startPortal(t)
	proxy := startCutter(t, p.PortalURL[len("http://"):])
	overview := newTab(t)
	signIn(t, overview, proxy.URL(), p.admin, "/")
	open(t, overview, proxy.URL()+"/")
	events := siblingTab(t, overview)
	open(t, events, proxy.URL()+"/events")
	tabs := map[string]context.Context{"/": overview, "/events": events}
	marker := randomToken(t)
	for _, tab := range tabs {
		eval[string](t, tab, `window.__loaded = `+jsString(marker))
	}

	proxy.Cut()
	for page, tab := range tabs {
		waitFor(t, tab, page+" says it is reconnecting", 5*time.Second, `document.getElementById('feed').dataset.state === 'reconnecting'`)
	}
	screenshot(t, overview, "reconnecting")
	cutAt := p.Engine.Hub().Seq()
	p.Scale("demo", "web", 3)
	// The engine takes the new state before it publishes the event.
	p.Eventually("the engine publishes the third web pod", 10*time.Second, func() error {
		if n, seq := len(servers(p.Stack, webBackend)), p.Engine.Hub().Seq(); n != 3 || seq == cutAt {
			return fmt.Errorf("%d web servers, seq %d", n, seq)
		}
		return nil
	})
	if n := eval[int](t, overview, chipsJS(webBackend)); n != 2 {
		t.Fatalf("the cut-off overview shows %d web chips already", n)
	}

	proxy.Resume()
	for page, tab := range tabs {
		waitFor(t, tab, page+" is live again", 15*time.Second, `document.getElementById('feed').dataset.state === 'live'`,
			`document.getElementById('feed').dataset.state`)
	}
	waitFor(t, overview, "the scale made during the cut shows", 2*time.Second, chipsJS(webBackend)+` === 3`)
	caught := map[string]uint64{}
	for page, tab := range tabs {
		// Events may still come (health observations): wait until the page
		// has caught up with the hub, then check nothing was skipped.
		p.Eventually(page+" caught up with the hub", 5*time.Second, func() error {
			want := p.Engine.Hub().Seq()
			if got := eval[string](t, tab, `document.getElementById('feed').dataset.seq`); got != strconv.FormatUint(want, 10) {
				return fmt.Errorf("data-seq %s, hub %d", got, want)
			}
			caught[page] = want
			return nil
		})
		feed := eval[map[string]string](t, tab, `({...document.getElementById('feed').dataset})`)
		if feed["gaps"] != "0" || feed["dups"] != "0" || feed["resyncs"] != "0" {
			t.Errorf("%s: the feed skipped or repeated events: %v", page, feed)
		}
		if c, _ := strconv.Atoi(feed["connects"]); c < 2 {
			t.Errorf("%s: connected %d times, want a reconnect: %v", page, c, feed)
		}
		if got := eval[string](t, tab, `window.__loaded`); got != marker {
			t.Errorf("%s was reloaded", page)
		}
	}
	// The audit log holds every seq from the first on, once, newest first
	// (more may have come since it caught up, never fewer).
	seqs := eval[[]int](t, events, `[...document.querySelectorAll('#event-list > li')].map(li => +li.dataset.seq)`)
	if len(seqs) < int(caught["/events"]) {
		t.Fatalf("the log lists %d events, the hub had published %d: %v", len(seqs), caught["/events"], seqs)
	}
	for i, s := range seqs {
		if s != len(seqs)-i {
			t.Fatalf("the log lists seq %d at position %d, want %d: %v", s, i, len(seqs)-i, seqs)
		}
	}
}
