package engine

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/dcm-router/dcm/dcm"
)

// digests turn desired states into the digest the fleet view compares
// across replicas (dcm.ReplicaStatus.Applied). A desired state shares its
// unchanged backends with the one before (dcm.Desired), so each backend's
// hash is kept by pointer and a state's digest costs the backends that
// changed, plus a sum: the digest is the sum of the backends' hashes, so
// their order does not matter.
type digests struct {
	byBackend map[*dcm.DesiredBackend]uint64
	// kept and keptSum are the backends of the state kept and the sum of
	// their hashes: the fleet view asks every second, mostly of a state
	// that has not changed, and comparing pointers is cheaper than a map.
	kept    []*dcm.DesiredBackend
	keptSum uint64
}

// of is d's digest. With keep, d is the state the engine holds now: the
// hashes of its backends are kept and those of any other are forgotten;
// without, the kept ones are only read (d is a state passing by).
func (g *digests) of(d dcm.Desired, keep bool) string {
	sum := hash(d.DefaultCert)
	if g.kept != nil && slices.Equal(d.Backends, g.kept) {
		return strconv.FormatUint(sum+g.keptSum, 16)
	}
	var next map[*dcm.DesiredBackend]uint64
	if keep {
		next = make(map[*dcm.DesiredBackend]uint64, len(d.Backends))
	}
	var backends uint64
	for _, b := range d.Backends {
		h, ok := g.byBackend[b]
		if !ok {
			h = hash(b)
		}
		if keep {
			next[b] = h
		}
		backends += h
	}
	if keep {
		g.byBackend, g.kept, g.keptSum = next, d.Backends, backends
	}
	return strconv.FormatUint(sum+backends, 16)
}

// hash is the first 8 bytes of the SHA-256 of v's JSON: the shape the API
// serves, the same on every replica for the same objects.
func hash(v any) uint64 {
	b, err := json.Marshal(v)
	if err != nil {
		// The model's types always marshal; should one not, the digest
		// still changes with the error's text rather than collide.
		b = []byte(err.Error())
	}
	s := sha256.Sum256(b)
	return binary.BigEndian.Uint64(s[:8])
}

// markApplied records that HAProxy serves the desired state of the sync
// in flight; mu held.
func (e *Engine) markApplied() {
	e.applied = e.desired
	e.appliedValid = true
}

// Status is this replica's account of itself for the fleet view.
func (e *Engine) Status() dcm.ReplicaStatus {
	e.mu.Lock()
	st := dcm.ReplicaStatus{
		Seq: e.hub.Seq(), Ready: e.ready, Updates: e.updates,
		HAProxy: dcm.HAProxyInfo{Version: e.driver.Version().String(), PID: e.pid, Started: e.started, Reloads: e.reloads, Running: e.running},
	}
	applied, valid := e.applied, e.appliedValid
	// Set by Run before the first sync, which is before appliedValid.
	src, _ := e.source.(currentSource)
	e.mu.Unlock()
	if !valid {
		return st
	}
	e.digestMu.Lock()
	defer e.digestMu.Unlock()
	st.Applied = e.digests.of(applied, true)
	if src != nil {
		// Outside e.mu: the source reports rejections to the engine
		// under locks of its own.
		st.Pending = e.digests.of(src.Current(), false) != st.Applied
	}
	return st
}

// currentSource is a Source that can say what it holds without taking
// the engine's next Desired from it (Desired hands over when the oldest
// change was seen, which the engine's latency figures need). A source
// without it reports nothing pending.
type currentSource interface {
	Current() dcm.Desired
}
