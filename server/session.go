package server

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"sync"
	"time"
)

const (
	sessionCookie = "dcm_session"
	sessionTTL    = 12 * time.Hour
	maxSessions   = 10000
)

// session is a logged-in browser: the identity the login's token proved,
// and the CSRF token its forms and scripts must send back. It keeps the
// token too, in this process's memory only (the cookie holds a random id):
// the fleet view reads the other replicas with it, so each applies its own
// token rules to the user, as if the user had signed in there.
type session struct {
	id       string
	identity Identity
	token    string
	csrf     string
	expires  time.Time
}

func (s *session) checkCSRF(token string) bool {
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(s.csrf)) == 1
}

// sessions is the server-side session store; the cookie holds only a random
// id, so logging out or restarting dcm ends every session.
type sessions struct {
	mu   sync.Mutex
	byID map[string]*session
	now  func() time.Time
}

func newSessions() *sessions {
	return &sessions{byID: map[string]*session{}, now: time.Now}
}

func randomToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand failed: " + err.Error()) // the OS has no entropy: nothing is safe
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func (ss *sessions) create(id Identity, token string) *session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	now := ss.now()
	if len(ss.byID) >= maxSessions {
		for k, s := range ss.byID {
			if now.After(s.expires) {
				delete(ss.byID, k)
			}
		}
	}
	s := &session{id: randomToken(), identity: id, token: token, csrf: randomToken(), expires: now.Add(sessionTTL)}
	ss.byID[s.id] = s
	return s
}

func (ss *sessions) fromRequest(r *http.Request) (*session, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil, false
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s, ok := ss.byID[c.Value]
	if !ok || ss.now().After(s.expires) {
		delete(ss.byID, c.Value)
		return nil, false
	}
	return s, true
}

func (ss *sessions) delete(id string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.byID, id)
}

func sessionCookieFor(s *session, secure bool) *http.Cookie {
	return &http.Cookie{Name: sessionCookie, Value: s.id, Path: "/", Expires: s.expires,
		HttpOnly: true, Secure: secure, SameSite: http.SameSiteStrictMode}
}

func clearedSessionCookie(secure bool) *http.Cookie {
	return &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: secure, SameSite: http.SameSiteStrictMode}
}
