// Package fleet is the fleet view's collector: it asks every dcm replica
// (its peers, found by a Peers) for its status, and forwards a what-if's
// expectation and event reads to them. It reads peers only with the token
// of the user who asks, so each peer applies its own token rules (a token
// file, or TokenReview and SubjectAccessReview): the fleet view shows what
// that user could read by opening each replica's portal, nothing more,
// and no endpoint is open without a token.
package fleet

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dcm-router/dcm/dcm"
)

// Peer is one dcm replica's portal.
type Peer struct {
	// Name is what the view calls it: its pod's name, else host:port.
	Name string
	// URL is the portal's base URL, http(s)://host:port.
	URL string
	// Self: this is the replica that runs the collector.
	Self bool
}

// Peers lists the replicas as they are now (every call may differ).
type Peers interface {
	Peers() []Peer
}

// DefaultTimeout bounds each request to a peer.
const DefaultTimeout = 3 * time.Second

// maxReply bounds a peer's answer: a status is small; the events of a
// scale since the Apply are a few kilobytes.
const maxReply = 8 << 20

// Collector reads the fleet for the portal.
type Collector struct {
	peers Peers
	// self is this replica's status, read without HTTP.
	self    func() dcm.ReplicaStatus
	selfURL string
	client  *http.Client
	timeout time.Duration

	// refused remembers, by peer and token, a peer's 401 for a while: a
	// peer counts wrong tokens by client address, and this replica is that
	// address for every user, so asking again each second with a token
	// the peer does not know would soon have it refuse everyone's.
	mu      sync.Mutex
	refused map[string]refusal
	now     func() time.Time
}

type refusal struct {
	err   error
	until time.Time
}

// refusedFor is how long a peer's 401 for a token is taken as its answer.
const refusedFor = time.Minute

// maxRefused bounds the refusals remembered.
const maxRefused = 10000

// New returns a collector over peers; self is this replica's own status
// and selfURL its portal (for the replica's own line when peers do not
// list it).
func New(peers Peers, self func() dcm.ReplicaStatus, selfURL string, client *http.Client) *Collector {
	if client == nil {
		client = &http.Client{}
	}
	return &Collector{peers: peers, self: self, selfURL: selfURL, client: client, timeout: DefaultTimeout,
		refused: map[string]refusal{}, now: time.Now}
}

// List is the replicas, this one first and once, the others by name.
func (c *Collector) List() []Peer {
	all := c.peers.Peers()
	out := []Peer{{Name: hostOf(c.selfURL), URL: c.selfURL, Self: true}}
	for _, p := range all {
		if p.Self {
			out[0] = p
		}
	}
	seen := map[string]bool{out[0].URL: true}
	for _, p := range all {
		if !p.Self && !seen[p.URL] {
			seen[p.URL] = true
			out = append(out, p)
		}
	}
	return out
}

// Find is the replica of that name.
func (c *Collector) Find(name string) (Peer, bool) {
	for _, p := range c.List() {
		if p.Name == name {
			return p, true
		}
	}
	return Peer{}, false
}

// Fleet asks every replica for its status with token, at once, and
// decides which have applied the latest change (dcm.Fleet.Decide).
func (c *Collector) Fleet(ctx context.Context, token string) dcm.Fleet {
	peers := c.List()
	f := dcm.Fleet{Replicas: make([]dcm.Replica, len(peers))}
	var wg sync.WaitGroup
	for i, p := range peers {
		f.Replicas[i] = dcm.Replica{Name: p.Name, URL: p.URL, Self: p.Self}
		if p.Self {
			st := c.self()
			f.Replicas[i].Status = &st
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var st dcm.ReplicaStatus
			if err := c.call(ctx, token, http.MethodGet, p.URL, "/api/v1/status", nil, &st); err != nil {
				f.Replicas[i].Error = err.Error()
				return
			}
			f.Replicas[i].Status = &st
		}()
	}
	wg.Wait()
	f.Decide()
	return f
}

// Expected is a peer's answer to an expectation: the seq it was recorded
// at (its prediction event follows it), or why it was not.
type Expected struct {
	Name  string `json:"name"`
	URL   string `json:"url"`
	Self  bool   `json:"self"`
	Seq   uint64 `json:"seq"`
	Error string `json:"error,omitempty"`
	// id cancels it on the peer (Unexpect); not shown to browsers.
	id string
}

// Expect asks every other replica to record what body (a scale, POST
// /api/v1/expect) is predicted to do from its own state, so each compares
// its own prediction with what it applies.
func (c *Collector) Expect(ctx context.Context, token string, body any) []Expected {
	var out []Expected
	for _, p := range c.List() {
		if !p.Self {
			out = append(out, Expected{Name: p.Name, URL: p.URL})
		}
	}
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var reply struct {
				Seq uint64 `json:"seq"`
				ID  string `json:"id"`
			}
			if err := c.call(ctx, token, http.MethodPost, out[i].URL, "/api/v1/expect", body, &reply); err != nil {
				out[i].Error = err.Error()
				return
			}
			out[i].Seq, out[i].id = reply.Seq, reply.ID
		}()
	}
	wg.Wait()
	return out
}

// Unexpect takes back, on each peer, the expectation Expect recorded
// there: the scale failed, no command will follow.
func (c *Collector) Unexpect(ctx context.Context, token string, expected []Expected) {
	var wg sync.WaitGroup
	for _, e := range expected {
		if e.id == "" || e.Error != "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A peer that cannot be reached settles it at its deadline.
			_ = c.call(ctx, token, http.MethodDelete, e.URL, "/api/v1/expect/"+url.PathEscape(e.id), nil, nil)
		}()
	}
	wg.Wait()
}

// Events reads a peer's events after since with token.
func (c *Collector) Events(ctx context.Context, token string, p Peer, since uint64) (dcm.EventsPage, error) {
	var page dcm.EventsPage
	err := c.call(ctx, token, http.MethodGet, p.URL, "/api/v1/events?since="+strconv.FormatUint(since, 10), nil, &page)
	return page, err
}

// call makes one bounded request to a peer's API with the user's token,
// unless the peer refused that token lately.
func (c *Collector) call(ctx context.Context, token, method, base, path string, body, into any) error {
	sum := sha256.Sum256([]byte(token))
	key := base + " " + hex.EncodeToString(sum[:])
	c.mu.Lock()
	r, ok := c.refused[key]
	c.mu.Unlock()
	if ok && c.now().Before(r.until) {
		return r.err
	}
	err := c.do(ctx, token, method, base, path, body, into)
	var re *refusedError
	if errors.As(err, &re) {
		c.remember(key, err)
	}
	return err
}

// remember keeps a peer's refusal of a token for refusedFor.
func (c *Collector) remember(key string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if len(c.refused) >= maxRefused {
		for k, r := range c.refused {
			if now.After(r.until) {
				delete(c.refused, k)
			}
		}
	}
	if len(c.refused) < maxRefused {
		c.refused[key] = refusal{err: err, until: now.Add(refusedFor)}
	}
}

// refusedError is a peer's 401: it does not know the token.
type refusedError struct{ msg string }

func (e *refusedError) Error() string { return e.msg }

// do is one request.
func (c *Collector) do(ctx context.Context, token, method, base, path string, body, into any) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(base, "/")+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is in the view already
		}
		return fmt.Errorf("unreachable: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxReply))
	if err != nil {
		return fmt.Errorf("reading the answer: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Message string `json:"message"`
			Error   string `json:"error"`
		}
		_ = json.Unmarshal(b, &e)
		msg := e.Message + e.Error
		if msg == "" {
			msg = http.StatusText(resp.StatusCode)
		}
		if resp.StatusCode == http.StatusUnauthorized {
			return &refusedError{msg: fmt.Sprintf("HTTP 401: %s (not asked again for %s)", msg, refusedFor)}
		}
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, msg)
	}
	if into == nil {
		return nil
	}
	if err := json.Unmarshal(b, into); err != nil {
		return fmt.Errorf("not dcm's answer: %w", err)
	}
	return nil
}

func hostOf(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return u
	}
	return p.Host
}
