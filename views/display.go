package views

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dcm-router/dcm/dcm"
)

// The functions here decide how the model reads on a page. web/format.js
// mirrors them for the live updates: the words for ops and server states
// it takes from web/display_gen.js, which internal/jsgen writes from
// words.go; the rest it spells again, and web's TestFormatParity runs it
// under node against these functions (the browser tests also compare a
// page rendered here with the same page patched by the script).

// Display states of a server: its admin state, or down.
const (
	StateReady = "ready"
	StateDrain = "drain"
	StateMaint = "maint"
	// StateDown is a server whose admin state is ready but whose health
	// check fails: it takes no traffic although nobody asked for that.
	StateDown = "down"
)

// DisplayStates lists the display states in the order pages show them.
func DisplayStates() []string { return []string{StateReady, StateDrain, StateMaint, StateDown} }

// DisplayState is how a server shows on a chip.
func DisplayState(s dcm.Server) string {
	for _, r := range StateRules() {
		if (r.State != "" && s.State == r.State) || (r.Health != "" && s.Health == r.Health) {
			return r.Show
		}
	}
	return StateReady
}

// ChipLabel names a server on a chip: its pod when it has one.
func ChipLabel(s dcm.Server) string {
	if s.Pod != "" {
		return s.Pod
	}
	return s.Name
}

// Address is addr:port.
func Address(s dcm.Server) string {
	if strings.Contains(s.Addr, ":") {
		return "[" + s.Addr + "]:" + strconv.Itoa(s.Port)
	}
	return s.Addr + ":" + strconv.Itoa(s.Port)
}

// ChipTitle is the tooltip of a chip: everything a hover should tell.
func ChipTitle(s dcm.Server) string {
	return fmt.Sprintf("%s · %s · %s · health %s · weight %d", s.Name, Address(s), DisplayState(s), HealthText(s), s.Weight)
}

// HealthText is HAProxy's word for the server's health, and whether
// HAProxy checks it (without checks, Kubernetes readiness is all there is).
func HealthText(s dcm.Server) string {
	h := s.Health
	if h == "" {
		h = "unknown"
	}
	if !s.Check {
		return h + " (no check)"
	}
	return h
}

// BackendURL is the page of a backend.
func BackendURL(name string) string { return "/backends/" + url.PathEscape(name) }

// ServerID is the id of a server's row on its backend's page.
func ServerID(name string) string { return "srv-" + name }

// ServerURL is a server's row on its backend's page.
func ServerURL(backend, server string) string { return BackendURL(backend) + "#" + ServerID(server) }

// ActionURL is the API endpoint that changes a server: what is state or weight.
func ActionURL(backend, server, what string) string {
	return "/api/v1/backends/" + url.PathEscape(backend) + "/servers/" + url.PathEscape(server) + "/" + what
}

// ServerCount is "1 server", "3 servers".
func ServerCount(n int) string {
	if n == 1 {
		return "1 server"
	}
	return strconv.Itoa(n) + " servers"
}

// BackendSearch is the text a backend filter searches: name, host, path and namespace.
func BackendSearch(b *dcm.Backend) string {
	return strings.ToLower(b.Name + " " + RouteText(b.Route) + " " + b.Route.Namespace)
}

// BackendStates lists the display states a backend's servers are in.
func BackendStates(b *dcm.Backend) string {
	var states []string
	for _, s := range b.Servers {
		if st := DisplayState(s); !slices.Contains(states, st) {
			states = append(states, st)
		}
	}
	slices.Sort(states)
	return strings.Join(states, " ")
}

// BackendFilter is the filter form of /backends.
type BackendFilter struct {
	Q         string // text in the name, host, path or namespace
	Namespace string
	State     string // a display state that one of its servers is in
}

// Active reports whether the filter hides anything.
func (f BackendFilter) Active() bool { return f.Q != "" || f.Namespace != "" || f.State != "" }

// Match reports whether a backend passes the filter.
func (f BackendFilter) Match(b *dcm.Backend) bool {
	if f.Namespace != "" && b.Route.Namespace != f.Namespace {
		return false
	}
	if f.State != "" && !slices.Contains(strings.Fields(BackendStates(b)), f.State) {
		return false
	}
	return f.Q == "" || strings.Contains(BackendSearch(b), strings.ToLower(strings.TrimSpace(f.Q)))
}

// Namespaces lists the namespaces of backends, sorted.
func Namespaces(bs []*dcm.Backend) []string {
	var out []string
	for _, b := range bs {
		if !slices.Contains(out, b.Route.Namespace) {
			out = append(out, b.Route.Namespace)
		}
	}
	slices.Sort(out)
	return out
}

// Summary is the overview's counts.
type Summary struct {
	Routes, Backends, Servers int
	Ready, Drain, Maint, Down int
	Dynamic, Reloads, Noop    uint64
	// Ratio is the share of updates done at runtime.
	Ratio string
	// InNamespaces and RejectedText are the cards' second lines.
	InNamespaces, RejectedText string
}

// Summarize counts a snapshot for the overview.
func Summarize(s dcm.Snapshot) Summary {
	sum := Summary{Routes: len(s.Routes), Backends: len(s.Backends),
		Dynamic: s.Updates.Dynamic, Reloads: s.Updates.Reload, Noop: s.Updates.Noop,
		Ratio:        Ratio(s.Updates.Dynamic, s.Updates.Reload),
		InNamespaces: plural(len(Namespaces(s.Backends)), "in 1 namespace", "in %d namespaces"),
		RejectedText: plural(len(s.Rejected), "1 object rejected", "%d objects rejected")}
	for _, b := range s.Backends {
		for _, srv := range b.Servers {
			sum.Servers++
			switch DisplayState(srv) {
			case StateReady:
				sum.Ready++
			case StateDrain:
				sum.Drain++
			case StateMaint:
				sum.Maint++
			case StateDown:
				sum.Down++
			}
		}
	}
	return sum
}

// Ratio is the share of updates HAProxy took at runtime, without a reload.
func Ratio(dynamic, reloads uint64) string {
	if dynamic+reloads == 0 {
		return "–"
	}
	return strconv.FormatFloat(float64(dynamic)*100/float64(dynamic+reloads), 'f', 1, 64) + "%"
}

// Uptime is how long ago t was, in its two largest units.
func Uptime(t, now time.Time) string {
	if t.IsZero() {
		return "–"
	}
	d := max(now.Sub(t), 0)
	days, h, m, s := int(d/(24*time.Hour)), int(d/time.Hour)%24, int(d/time.Minute)%60, int(d/time.Second)%60
	switch {
	case days > 0:
		return fmt.Sprintf("%dd %dh", days, h)
	case h > 0:
		return fmt.Sprintf("%dh %dm", h, m)
	case m > 0:
		return fmt.Sprintf("%dm %ds", m, s)
	}
	return fmt.Sprintf("%ds", s)
}

// Seconds is a duration for people: milliseconds below ten seconds.
func Seconds(sec float64) string {
	if sec < 10 {
		return strconv.FormatFloat(sec*1000, 'f', 0, 64) + " ms"
	}
	return strconv.FormatFloat(sec, 'f', 1, 64) + " s"
}

// Clock is the time of day of an event, in the server's zone (the script
// shows the browser's).
func Clock(t time.Time) string { return t.Local().Format("15:04:05") }

// Stamp is a machine-readable time for <time datetime>.
func Stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// Reasons joins reload reasons.
func Reasons(rs []dcm.ReloadReason) string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r)
	}
	return strings.Join(out, ", ")
}

// EventTypes lists the event types in the order the filter offers them.
func EventTypes() []dcm.EventType {
	return []dcm.EventType{dcm.EventApplied, dcm.EventReload, dcm.EventRejected, dcm.EventAccepted,
		dcm.EventSyncError, dcm.EventHAProxy, dcm.EventAction, dcm.EventObserved, dcm.EventSource}
}

// EventSearch is the text an event filter searches.
func EventSearch(ev dcm.Event) string {
	parts := []string{string(ev.Type), ev.Message, ev.Reason, ev.Actor}
	if o := ObjectText(ev.Object); o != "" {
		parts = append(parts, o)
	}
	parts = append(parts, ev.Backends...)
	return strings.ToLower(strings.Join(parts, " "))
}

// EventFilter is the filter form of /events.
type EventFilter struct {
	Type string
	Q    string
}

// Match reports whether an event passes the filter.
func (f EventFilter) Match(ev dcm.Event) bool {
	if f.Type != "" && string(ev.Type) != f.Type {
		return false
	}
	return f.Q == "" || strings.Contains(EventSearch(ev), strings.ToLower(strings.TrimSpace(f.Q)))
}

// OpCount is "1 op", "12 ops".
func OpCount(n int) string {
	if n == 1 {
		return "1 runtime command"
	}
	return strconv.Itoa(n) + " runtime commands"
}

// Workers is the worker pid before and after a reload.
func Workers(r dcm.ReloadInfo) string {
	if r.OldPID == 0 && r.NewPID == 0 {
		return "–"
	}
	return strconv.Itoa(r.OldPID) + " → " + strconv.Itoa(r.NewPID)
}

// ReloadText sums up a reload in one line: reasons, duration, workers.
func ReloadText(r dcm.ReloadInfo) string {
	return Reasons(r.Reasons) + " · " + Seconds(r.Duration) + " · worker " + Workers(r)
}

// ServicesText lists a route's services with their weights.
func ServicesText(r dcm.Route) string {
	out := make([]string, len(r.Services))
	for i, s := range r.Services {
		out[i] = s.Name + ":" + s.Port + " (weight " + strconv.Itoa(s.Weight) + ")"
	}
	if len(out) == 0 {
		return "–"
	}
	return strings.Join(out, ", ")
}

// WorkloadText names the workload behind a route, when known.
func WorkloadText(r dcm.Route) string {
	if r.Workload == nil {
		return "–"
	}
	return r.Workload.Kind + " " + r.Workload.Name
}

// CertText says which certificate HAProxy serves a TLS route's clients:
// the Secret (or the Route it is written in) and the first characters of
// its version, or the default certificate while none is valid; "–" for a
// route HAProxy does not terminate. web/format.js certText says the same.
func CertText(r dcm.Route) string {
	if r.TLS == nil {
		return "–"
	}
	from := "Secret " + r.TLS.Secret
	if dcm.InlineCert(r.TLS.Secret) {
		from = "inline in Route " + strings.TrimPrefix(r.TLS.Secret, dcm.RouteCertPrefix)
	}
	if r.TLS.Version == "" {
		return from + " (none valid: the default certificate is served)"
	}
	return from + " @" + shortVersion(r.TLS.Version)
}

// UpstreamText says how a reencrypt route's servers check their pods: the
// name the pods' certificate must carry and the destination CA it must be
// signed by; "–" for other kinds. web/format.js upstreamText says the same.
func UpstreamText(r dcm.Route) string {
	u := r.Upstream
	if u == nil {
		return "–"
	}
	ca := u.CA
	switch {
	case strings.HasPrefix(ca, "secret:"):
		ca = "ca.crt of Secret " + strings.TrimPrefix(ca, "secret:")
	case strings.HasPrefix(ca, "route:"):
		ca = "destinationCACertificate of Route " + strings.TrimPrefix(ca, "route:")
	case ca == "file:default":
		ca = "--default-backend-ca-file"
	}
	if u.Version == "" {
		return "verify " + u.ServerName + " against " + ca + " (none valid: no server)"
	}
	return "verify " + u.ServerName + " against " + ca + " @" + shortVersion(u.Version)
}

func shortVersion(v string) string { return v[:min(len(v), 12)] }

// InsecureText is what plain HTTP requests for a route get: its policy,
// with the redirect's status; "–" for a plain HTTP route. web/format.js
// insecureText says the same.
func InsecureText(r dcm.Route) string {
	if r.Kind == dcm.KindHTTP {
		return "–"
	}
	p := r.InsecureEffective()
	if p == dcm.InsecureRedirect {
		return string(p) + " " + strconv.Itoa(r.RedirectStatus())
	}
	return string(p)
}

// SourceText names the Kubernetes object a route came from.
func SourceText(r dcm.Route) string {
	if r.Object == "" {
		return "–"
	}
	if r.Gateway != nil {
		return RuleText(r)
	}
	kind := "Ingress"
	if r.Source == dcm.SourceRoute {
		kind = "Route"
	}
	return kind + " " + r.Namespace + "/" + r.Object
}

// PathText is the path and how it matches.
func PathText(r dcm.Route) string {
	if r.Gateway != nil {
		return MatchesText(r)
	}
	if r.Path == "" {
		return "–"
	}
	return r.Path + " (" + string(r.PathType) + ")"
}

// OnOff words a flag.
func OnOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// Or is s, or a dash when s is empty.
func Or(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// Matching keeps the backends that pass a filter.
func Matching(bs []*dcm.Backend, f BackendFilter) []*dcm.Backend {
	var out []*dcm.Backend
	for _, b := range bs {
		if f.Match(b) {
			out = append(out, b)
		}
	}
	return out
}

// ObjectText names an object: "Ingress demo/web", or just "HAProxy" for
// an action on no Kubernetes object ("" for none at all).
func ObjectText(o *dcm.ObjectRef) string {
	switch {
	case o == nil:
		return ""
	case o.Namespace == "" && o.Name == "":
		return o.Kind
	case o.Namespace == "":
		return o.Kind + " " + o.Name
	}
	return o.String()
}

func reloadText(r *dcm.ReloadInfo) string {
	if r == nil {
		return ""
	}
	return ReloadText(*r)
}

func reloadError(r *dcm.ReloadInfo) string {
	if r == nil {
		return ""
	}
	return r.Error
}

// Lines is "1 line", "12 lines".
func Lines(content string) string {
	n := strings.Count(content, "\n")
	if content != "" && !strings.HasSuffix(content, "\n") {
		n++
	}
	if n == 1 {
		return "1 line"
	}
	return strconv.Itoa(n) + " lines"
}

// plural picks the singular for one, else formats n into many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return fmt.Sprintf(many, n)
}
