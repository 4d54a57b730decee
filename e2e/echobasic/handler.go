package echobasic

import (
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Request is the JSON an echo answers with: the request as the server got
// it. The suite decodes these names (its roundtripper.CapturedRequest).
type Request struct {
	// Path is the raw request URI (path and query, as sent).
	Path     string              `json:"path"`
	Host     string              `json:"host"`
	Method   string              `json:"method"`
	Proto    string              `json:"proto"`
	Headers  map[string][]string `json:"headers"`
	HTTPPort string              `json:"httpPort"`

	Identity

	TLS *TLSState `json:"tls,omitempty"`
}

// TLSState is the TLS connection the request came on.
type TLSState struct {
	Version            string   `json:"version"`
	PeerCertificates   []string `json:"peerCertificates,omitempty"`
	ServerName         string   `json:"serverName"`
	NegotiatedProtocol string   `json:"negotiatedProtocol,omitempty"`
	CipherSuite        string   `json:"cipherSuite"`
}

// statusPath is /status/NNN, matched against the raw request URI: a query
// string makes it a 400, as in echo-basic.
var statusPath = regexp.MustCompile(`^/status/(\d\d\d)$`)

// server holds what one container's handlers share: its identity and the
// retry simulation's attempts (one map for its HTTP and HTTPS ports, as
// echo-basic's single handler has).
type server struct {
	cfg Config

	mu       sync.Mutex
	attempts map[string]int
}

func newServer(cfg Config) *server { return &server{cfg: cfg, attempts: map[string]int{}} }

// Handler is what the HTTP and HTTPS ports answer.
func Handler(cfg Config) http.Handler { return newServer(cfg).handler() }

// H2CHandler is what the h2c port answers: an echo for HTTP/2 requests
// (prior knowledge) or ones asking to upgrade to h2c, a 400 otherwise.
func H2CHandler(cfg Config) http.Handler { return newServer(cfg).h2cHandler() }

func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("OK"))
	})
	mux.HandleFunc("/status/", func(w http.ResponseWriter, r *http.Request) {
		code := http.StatusBadRequest
		if m := statusPath.FindStringSubmatch(r.RequestURI); m != nil {
			code, _ = strconv.Atoi(m[1])
		}
		w.WriteHeader(code)
	})
	mux.HandleFunc("/retry/", s.retry)
	mux.HandleFunc("/ws", wsEcho)
	mux.HandleFunc("/", s.echo)
	// Double slashes are folded before routing (the echo still reports the
	// raw URI), so that the mux does not redirect them away.
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.URL.Path = strings.ReplaceAll(r.URL.Path, "//", "/")
		mux.ServeHTTP(w, r)
	})
}

func (s *server) h2cHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 && r.Header.Get("Upgrade") != "h2c" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte("Expected h2c request"))
			return
		}
		s.echo(w, r)
	})
}

// echo answers with the request as JSON, after ?delay=<duration>, with
// the response headers X-Echo-Set-Header asks for.
func (s *server) echo(w http.ResponseWriter, r *http.Request) {
	if err := delay(r, "delay"); err != nil {
		fail(w, err, http.StatusInternalServerError)
		return
	}
	body, err := json.MarshalIndent(Request{
		Path: r.RequestURI, Host: r.Host, Method: r.Method, Proto: r.Proto, Headers: r.Header,
		HTTPPort: s.cfg.HTTPPort, Identity: s.cfg.Identity, TLS: tlsState(r.TLS),
	}, "", " ")
	if err != nil {
		fail(w, err, http.StatusInternalServerError)
		return
	}
	setEchoHeaders(w, r.Header["X-Echo-Set-Header"])
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(body)
}

// setEchoHeaders sets the "Name: value" pairs of X-Echo-Set-Header (comma
// separated, in one or more header lines) as response headers, with the
// name's case as sent; a name given twice gets its values joined by commas.
func setEchoHeaders(w http.ResponseWriter, lines []string) {
	h := w.Header()
	for _, line := range lines {
		for kv := range strings.SplitSeq(line, ",") {
			name, value, _ := strings.Cut(strings.TrimSpace(kv), ":")
			if len(h[name]) == 0 {
				h[name] = []string{value}
				continue
			}
			h[name][0] += "," + strings.TrimSpace(value)
		}
	}
}

// retry fails the first succeedAfter requests of one uuid (a connection
// reset, or ?responseCode=N), after ?delayRetry=<duration>, then echoes.
func (s *server) retry(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	uuid := q.Get("uuid")
	if uuid == "" {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte("uuid is required"))
		return
	}
	succeedAfter, err := strconv.Atoi(q.Get("succeedAfter"))
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte("succeedAfter is required"))
		return
	}
	attempt := reset
	if code, err := strconv.Atoi(q.Get("responseCode")); err == nil {
		attempt = func(w http.ResponseWriter) error { w.WriteHeader(code); return nil }
	}
	// One request of the simulation at a time, as echo-basic serializes them.
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.attempts[uuid] >= succeedAfter {
		s.echo(w, r)
		return
	}
	s.attempts[uuid]++
	if err := delay(r, "delayRetry"); err != nil {
		fail(w, err, http.StatusInternalServerError)
		return
	}
	if err := attempt(w); err != nil {
		fail(w, err, http.StatusInternalServerError)
	}
}

// reset aborts the connection with a TCP RST instead of answering.
func reset(w http.ResponseWriter) error {
	hj, ok := w.(http.Hijacker)
	if !ok {
		return errors.New("response writer does not support hijacking")
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return err
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		if err := tcp.SetLinger(0); err != nil {
			return errors.Join(err, conn.Close())
		}
	}
	return conn.Close()
}

// delay waits the duration of the form value key, if any; the wait ends
// early only when the client goes (nobody is left to answer then).
func delay(r *http.Request, key string) error {
	v := r.FormValue(key)
	if v == "" {
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return err
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
	}
	return nil
}

// fail answers {"message": err} with code.
func fail(w http.ResponseWriter, err error, code int) {
	body, _ := json.Marshal(struct {
		Message string `json:"message"`
	}{err.Error()})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// tlsVersions names versions as echo-basic reports them.
var tlsVersions = map[uint16]string{
	tls.VersionTLS13: "TLSv1.3", tls.VersionTLS12: "TLSv1.2", tls.VersionTLS11: "TLSv1.1", tls.VersionTLS10: "TLSv1.0",
}

func tlsState(cs *tls.ConnectionState) *TLSState {
	if cs == nil {
		return nil
	}
	st := &TLSState{
		Version: tlsVersions[cs.Version], NegotiatedProtocol: cs.NegotiatedProtocol,
		ServerName: cs.ServerName, CipherSuite: tls.CipherSuiteName(cs.CipherSuite),
	}
	for _, c := range cs.PeerCertificates {
		st.PeerCertificates = append(st.PeerCertificates, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})))
	}
	return st
}

// wsEcho sends every WebSocket message back until the client closes.
func wsEcho(w http.ResponseWriter, r *http.Request) {
	// Any origin, as echo-basic's golang.org/x/net/websocket handler takes.
	upgrader := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // Upgrade has answered the client
	}
	defer conn.Close()
	for {
		kind, msg, err := conn.ReadMessage()
		if err != nil {
			return
		}
		if err := conn.WriteMessage(kind, msg); err != nil {
			return
		}
	}
}
