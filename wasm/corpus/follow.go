package corpus

import (
	"fmt"
	"slices"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/plan"
)

// feedMessage is one raw message of GET /api/v1/feed.
func feedMessage(m dcm.FeedMessage) Call { return Call{Fn: FnFeed, Arg: text(m)} }

func eventMessage(ev dcm.Event) Call {
	return feedMessage(dcm.FeedMessage{Type: dcm.FeedTypeEvent, Seq: ev.Seq, Event: &ev})
}

// follow is the browser's planner following the feed: the snapshot, events
// (applied and observed ones carry state; a reload, a gap, others and old
// news do not), a fresh snapshot by load, with previews in between.
func (g *gen) follow(c *cluster, caps dcm.Caps, st dcm.State, d dcm.Desired, snap dcm.Snapshot) []Call {
	f := &follower{g: g, c: c, caps: caps, st: st, d: d, seq: snap.Seq, at: base}
	f.calls = []Call{
		feedMessage(dcm.FeedMessage{Type: dcm.FeedTypeSnapshot, Seq: f.seq, Snapshot: &snap}),
		{Fn: FnSeq},
		{Fn: FnSimulate, Arg: text(g.whatifs(c, d))},
	}
	for range 2 + g.r.IntN(5) {
		if !f.step() {
			continue
		}
		if g.r.IntN(3) == 0 {
			f.add(Call{Fn: FnSimulate, Arg: text(g.whatifs(c, f.d))})
		}
	}
	// A fresh snapshot: newer ones replace the picture, stale ones do not.
	fresh := g.snapshot(f.seq+uint64(g.r.IntN(3)), caps, g.observe(f.st), f.d)
	if g.r.IntN(4) == 0 {
		fresh.Seq = snap.Seq - 1
	}
	f.add(Call{Fn: FnLoad, Arg: text(fresh)}, Call{Fn: FnSeq}, Call{Fn: FnSimulate, Arg: text(g.whatifs(c, f.d))})
	if g.r.IntN(10) == 0 {
		f.add(Call{Fn: FnLoad, Arg: `{"seq":`}, Call{Fn: FnSimulate, Arg: `[{"kind":`})
	}
	return f.calls
}

// follower is a feed as follow draws it: the state and desire dcm has
// reached, the seq and time of the last event, and the calls so far.
type follower struct {
	g     *gen
	c     *cluster
	caps  dcm.Caps
	st    dcm.State
	d     dcm.Desired
	seq   uint64
	at    time.Time
	calls []Call
}

func (f *follower) add(calls ...Call) { f.calls = append(f.calls, calls...) }

// event is the next event of the feed: one seq and a few seconds on.
func (f *follower) event(t dcm.EventType) dcm.Event {
	f.seq++
	f.at = f.at.Add(time.Duration(1+f.g.r.IntN(5000)) * time.Millisecond)
	return dcm.Event{Seq: f.seq, Time: f.at, Type: t}
}

// step draws one message of the feed (or a seq call). It returns false
// when the draw had nothing to report on: no preview follows it then.
func (f *follower) step() bool {
	g := f.g
	switch n := g.r.IntN(20); {
	case n < 7:
		f.sync()
	case n < 10:
		return f.observed()
	case n < 11:
		return f.removed()
	case n < 13:
		f.stateless()
	case n < 14: // a reload
		ev := f.event(dcm.EventReload)
		ev.Reload = &dcm.ReloadInfo{Time: f.at, Reasons: []dcm.ReloadReason{dcm.ReasonManual}}
		f.add(eventMessage(ev))
	case n < 15: // missed events: a gap
		f.seq++
		ev := f.event(dcm.EventAction)
		ev.Message = "after a gap"
		f.add(eventMessage(ev))
		f.seq -= 2 // the planner is still where it was
	case n < 16: // old news
		f.add(eventMessage(dcm.Event{Seq: f.seq - uint64(g.r.IntN(int(min(f.seq, 3)))), Time: f.at, Type: dcm.EventObserved, Backends: []string{"be_http:x:y"}}))
	case n < 17:
		f.other()
	case n < 18: // broken messages
		f.add(Call{Fn: FnFeed, Arg: g.pick([]string{`{`, `{"type":"event","seq":3}`, `{"type":"snapshot"}`,
			`{"type":"event","event":{"seq":"x"}}`, `[]`, `{"type":"event","event":{"seq":1,"time":"yesterday"}}`})})
	default:
		f.add(Call{Fn: FnSeq})
	}
	return true
}

// sync is one sync of dcm: applied ops, or a reload when the plan needs one.
func (f *follower) sync() {
	g := f.g
	nd := g.desiredChurn(f.c, g.r.IntN(5) == 0)
	p := plan.Compute(g.observe(f.st), nd, f.caps)
	if p.Reload {
		ev := f.event(dcm.EventReload)
		ev.Message = "reloaded"
		ev.Reload = &dcm.ReloadInfo{Time: f.at, Reasons: p.Reasons, Duration: 0.02, OldPID: 1000, NewPID: 1001}
		f.add(eventMessage(ev))
	} else if len(p.Ops) > 0 {
		var touched []string
		for _, o := range p.Ops {
			touched = append(touched, o.Backend)
		}
		slices.Sort(touched)
		touched = slices.Compact(touched)
		ev := f.event(dcm.EventApplied)
		ev.Message = fmt.Sprintf("%d runtime commands applied", len(p.Ops))
		ev.Ops, ev.Backends = p.Ops, touched
		for _, name := range touched {
			if b, ok := p.Next.Backend(name); ok {
				ev.State = append(ev.State, b)
			}
		}
		ev.State = markRetired(ev.State, nd)
		f.add(eventMessage(ev))
	}
	f.st, f.d = p.Next, nd
}

// observed is HAProxy reporting on some backends; false when there are none.
func (f *follower) observed() bool {
	g := f.g
	if len(f.st.Backends) == 0 {
		return false
	}
	f.st = g.observe(f.st)
	ev := f.event(dcm.EventObserved)
	ev.Message = "servers changed state"
	for _, b := range f.st.Backends {
		if g.r.IntN(max(2, len(f.st.Backends)/4)) == 0 { // a few at a time
			ev.Backends = append(ev.Backends, b.Name)
			ev.State = append(ev.State, b)
		}
	}
	ev.State = markRetired(ev.State, f.d)
	f.add(eventMessage(ev))
	return true
}

// removed is a backend touched but not carried: it is gone. False when
// there is no backend.
func (f *follower) removed() bool {
	if len(f.st.Backends) == 0 {
		return false
	}
	gone := f.st.Backends[f.g.r.IntN(len(f.st.Backends))].Name
	ev := f.event(dcm.EventApplied)
	ev.Message, ev.Backends = "backend removed", []string{gone}
	f.add(eventMessage(ev))
	return true
}

// stateless is one of the events that carry no state.
func (f *follower) stateless() {
	t := []dcm.EventType{dcm.EventAction, dcm.EventRejected, dcm.EventAccepted, dcm.EventSyncError, dcm.EventHAProxy, dcm.EventPrediction}[f.g.r.IntN(6)]
	ev := f.event(t)
	ev.Message, ev.Actor = "something happened", "alice"
	if t == dcm.EventRejected {
		ev.Object = &dcm.ObjectRef{Kind: "Ingress", Namespace: "default", Name: "bad"}
		ev.Reason = dcm.RejectInvalidHost
	}
	f.add(eventMessage(ev))
}

// other is one of the feed's messages other than events and snapshots.
func (f *follower) other() {
	t := []string{dcm.FeedTypePing, dcm.FeedTypeHello, dcm.FeedTypeBye, "mystery"}[f.g.r.IntN(4)]
	m := dcm.FeedMessage{Type: t, Seq: f.seq + 7}
	switch t {
	case dcm.FeedTypeHello:
		m.Hello = &dcm.FeedHello{Protocol: dcm.FeedProtocol, Identity: "alice", Resumed: true}
	case dcm.FeedTypeBye:
		m.Reason = "slow"
	}
	f.add(feedMessage(m))
}
