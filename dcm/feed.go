package dcm

// FeedProtocol is the version of the feed's message format (docs/feed.md).
const FeedProtocol = 1

// Feed message types. The server sends hello first, then either a snapshot
// (a fresh start, or a resume from a seq it no longer keeps) or the events
// missed since the seq asked for, then live events, with ping in between;
// bye says why the server closes (a client too slow, shutdown).
const (
	FeedTypeHello    = "hello"
	FeedTypeSnapshot = "snapshot"
	FeedTypeEvent    = "event"
	FeedTypePing     = "ping"
	FeedTypeBye      = "bye"
)

// FeedMessage is one message of GET /api/v1/feed. Seq is the seq the
// message brings the client to: the snapshot's, the event's, or the server's
// latest for hello and ping. Events arrive with strictly increasing seq.
type FeedMessage struct {
	Type     string     `json:"type"`
	Seq      uint64     `json:"seq"`
	Hello    *FeedHello `json:"hello,omitempty"`
	Snapshot *Snapshot  `json:"snapshot,omitempty"`
	Event    *Event     `json:"event,omitempty"`
	// Reason says why the server closes (bye).
	Reason string `json:"reason,omitempty"`
}

// FeedHello opens a feed.
type FeedHello struct {
	Protocol int    `json:"protocol"`
	Identity string `json:"identity"`
	// Resumed is true when the events since the asked seq follow, false when a snapshot does.
	Resumed   bool   `json:"resumed"`
	Namespace string `json:"namespace,omitempty"`
	Backend   string `json:"backend,omitempty"`
}

// ConfigFile is one file HAProxy loads, as it is on disk.
type ConfigFile struct {
	Name    string `json:"name"`
	Content string `json:"content"`
}

// ConfigView is what /config shows: the files, and where HAProxy's runtime
// state differs from them (empty when they agree).
type ConfigView struct {
	Files []ConfigFile `json:"files"`
	Drift []string     `json:"drift"`
}

// Subscription is a live stream of events: what the engine's hub hands the
// feed. Events are shared by every subscriber and must not be modified.
type Subscription interface {
	Events() <-chan *Event
	// Done is closed when the subscriber is dropped (Reason says why) or Close is called.
	Done() <-chan struct{}
	Reason() string
	Close()
}
