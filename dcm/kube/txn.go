package kube

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/dcm-router/dcm/dcm"
)

// txn collects what one sync changes; commit publishes it at once so
// Desired never sees half a sync.
type txn struct {
	backends   map[string]*dcm.DesiredBackend // nil: delete
	rejections map[dcm.ObjectRef]*dcm.Rejection
	views      map[string]*serviceView
	services   map[string]struct{} // ns/svc whose route count may have dropped to zero
	certs      map[string]string   // ns/secret → version read in this sync
	cas        map[string]string   // CA source → version read in this sync
	secrets    map[string]struct{} // ns/secret whose route count may have dropped to zero
	// defaultCert is the default certificate read in this sync (nil: not read).
	defaultCert *dcm.Cert
}

func newTxn() *txn {
	return &txn{
		backends:   map[string]*dcm.DesiredBackend{},
		rejections: map[dcm.ObjectRef]*dcm.Rejection{},
		views:      map[string]*serviceView{},
		services:   map[string]struct{}{},
		certs:      map[string]string{},
		cas:        map[string]string{},
		secrets:    map[string]struct{}{},
	}
}

func (t *txn) reject(r dcm.Rejection)   { t.rejections[r.Object] = &r }
func (t *txn) accept(ref dcm.ObjectRef) { t.rejections[ref] = nil }

type report struct {
	ref dcm.ObjectRef
	rej *dcm.Rejection
}

// commit publishes a sync's result, signals Changed if the desired state
// moved and tells the Reporter about rejections that changed.
func (s *Source) commit(t *txn, seen time.Time) {
	var reports []report
	s.mu.Lock()
	changed := s.commitDefaultCert(t)
	for name, b := range t.backends {
		old, had := s.backends[name]
		if b == nil && had || b != nil && (!had || !equalBackend(*old, *b)) {
			s.setBackend(name, b)
			changed = true
		}
	}
	for ref, r := range t.rejections {
		if ref.Kind == KindRoute && s.rw.status != nil {
			// Its admission may have changed: status.ingress says so.
			s.rw.status.Add(ref.Namespace + "/" + ref.Name)
		}
		if ref.Kind == KindIngress && s.is != nil {
			s.is.queue.Add(ref.Namespace + "/" + ref.Name)
		}
		old, had := s.rejections[ref]
		switch {
		case r == nil && had:
			delete(s.rejections, ref)
			reports = append(reports, report{ref: ref})
		case r != nil && (!had || old != *r):
			s.rejections[ref] = *r
			reports = append(reports, report{ref: ref, rej: r})
		}
	}
	if changed {
		if !seen.IsZero() && (s.since.IsZero() || seen.Before(s.since)) {
			s.since = seen
		}
	}
	s.mu.Unlock()
	// Still under syncMu: reports leave in the order of the commits.
	slices.SortFunc(reports, func(a, b report) int {
		return cmp.Or(strings.Compare(a.ref.Kind, b.ref.Kind), strings.Compare(a.ref.Namespace, b.ref.Namespace), strings.Compare(a.ref.Name, b.ref.Name))
	})
	for _, r := range reports {
		if r.rej != nil {
			s.log.Info("rejected", "object", r.ref.String(), "reason", r.rej.Reason, "message", r.rej.Message)
			s.reporter.Rejected(r.ref, r.rej.Reason, r.rej.Message)
		} else {
			s.log.Info("accepted", "object", r.ref.String())
			s.reporter.Accepted(r.ref)
		}
		s.recordEvent(r)
	}
	// The initial state is signalled once, when it is complete.
	if changed && s.synced.Load() {
		s.notify()
	}
}
