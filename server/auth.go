package server

import (
	"bufio"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/dcm-router/dcm/dcm"
)

// The model's names, so the server's code reads as it did.
type (
	Verb     = dcm.Verb
	Identity = dcm.Identity
)

const (
	VerbRead   = dcm.VerbRead
	VerbAct    = dcm.VerbAct
	RoleAdmin  = dcm.RoleAdmin
	RoleViewer = dcm.RoleViewer
)

// Authenticator turns a bearer token into an identity; ok is false for an
// unknown token, err for a failure to decide.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (id Identity, ok bool, err error)
}

// Authorizer decides whether an identity may do verb.
type Authorizer interface {
	Authorize(ctx context.Context, id Identity, verb Verb) (bool, error)
}

// Tokens is a fixed set of tokens, from --auth-token-file or generated for
// the demo.
type Tokens struct {
	byToken map[string]Identity
}

// ParseTokens reads a token file: one token per line, optionally followed by
// a role (admin or viewer, default admin) and a name; blank lines and lines
// starting with # are skipped. A file holding just one token works.
func ParseTokens(r io.Reader) (*Tokens, error) {
	t := &Tokens{byToken: map[string]Identity{}}
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		f := strings.Fields(sc.Text())
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if len(f[0]) < 16 {
			return nil, fmt.Errorf("line %d: a token must be at least 16 characters", n)
		}
		id := Identity{Name: fmt.Sprintf("token-%d", n), Role: RoleAdmin}
		if len(f) > 1 {
			if f[1] != RoleAdmin && f[1] != RoleViewer {
				return nil, fmt.Errorf("line %d: role %q: want admin or viewer", n, f[1])
			}
			id.Role = f[1]
		}
		if len(f) > 2 {
			id.Name = f[2]
		}
		t.byToken[f[0]] = id
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(t.byToken) == 0 {
		return nil, errors.New("no token found")
	}
	return t, nil
}

// SingleToken is a token set of one admin token.
func SingleToken(token, name string) *Tokens {
	return &Tokens{byToken: map[string]Identity{token: {Name: name, Role: RoleAdmin}}}
}

// Authenticate compares in constant time with every known token.
func (t *Tokens) Authenticate(_ context.Context, token string) (Identity, bool, error) {
	var found Identity
	ok := false
	for known, id := range t.byToken {
		if subtle.ConstantTimeCompare([]byte(known), []byte(token)) == 1 {
			found, ok = id, true
		}
	}
	return found, ok, nil
}

// Authenticators tries each authenticator in turn.
type Authenticators []Authenticator

func (as Authenticators) Authenticate(ctx context.Context, token string) (Identity, bool, error) {
	var errs []error
	for _, a := range as {
		id, ok, err := a.Authenticate(ctx, token)
		if ok {
			return id, true, nil
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return Identity{}, false, errors.Join(errs...)
}

// RoleAuthorizer decides by role for token-file identities and hands the
// others to Kubernetes (nil: they may do nothing).
type RoleAuthorizer struct {
	Kubernetes Authorizer
}

func (r RoleAuthorizer) Authorize(ctx context.Context, id Identity, verb Verb) (bool, error) {
	switch id.Role {
	case RoleAdmin:
		return true, nil
	case RoleViewer:
		return verb == VerbRead, nil
	}
	if r.Kubernetes == nil {
		return false, nil
	}
	return r.Kubernetes.Authorize(ctx, id, verb)
}

// Context keys for what the auth middleware found.
const (
	identityKey = "dcm.identity"
	sessionKey  = "dcm.session"
)

func identityOf(c echo.Context) Identity {
	id, _ := c.Get(identityKey).(Identity)
	return id
}

// authenticate finds who makes the request: a bearer token (tools), or the
// session cookie the login page set (the browser). It does not refuse
// anyone; require does.
func authenticate(d Deps, sessions *sessions) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if token, ok := strings.CutPrefix(c.Request().Header.Get("Authorization"), "Bearer "); ok {
				addr := clientAddr(c.Request())
				if d.guessing.blocked(addr) {
					return echo.NewHTTPError(http.StatusTooManyRequests, "too many wrong tokens; wait a minute")
				}
				id, ok, err := d.Authenticator.Authenticate(c.Request().Context(), strings.TrimSpace(token))
				if err != nil {
					d.Log.Warn("authentication failed", "err", err)
					return echo.NewHTTPError(http.StatusServiceUnavailable, "cannot authenticate now")
				}
				if ok {
					c.Set(identityKey, id)
				} else {
					d.guessing.fail(addr)
					d.Log.Warn("wrong bearer token", "addr", addr)
				}
				return next(c)
			}
			if s, ok := sessions.fromRequest(c.Request()); ok {
				c.Set(identityKey, s.identity)
				c.Set(sessionKey, s)
			}
			return next(c)
		}
	}
}

// require refuses a request without an identity allowed to do verb: 401
// without identity (pages redirect to the login page), 403 when RBAC or the
// role says no. A request from a session that changes something must carry
// the session's CSRF token and come from this origin.
func require(d Deps, verb Verb, page bool) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			id, ok := c.Get(identityKey).(Identity)
			if !ok {
				if page {
					return c.Redirect(http.StatusSeeOther, "/login?next="+url.QueryEscape(c.Request().URL.RequestURI()))
				}
				c.Response().Header().Set("WWW-Authenticate", `Bearer realm="dcm"`)
				return echo.NewHTTPError(http.StatusUnauthorized, "a valid bearer token or session is required")
			}
			if s, ok := c.Get(sessionKey).(*session); ok && changes(c.Request()) {
				if !sameOrigin(c.Request()) {
					return echo.NewHTTPError(http.StatusForbidden, "cross-origin request refused")
				}
				if !s.checkCSRF(csrfToken(c)) {
					return echo.NewHTTPError(http.StatusForbidden, "missing or wrong CSRF token")
				}
			}
			allowed, err := d.Authorizer.Authorize(c.Request().Context(), id, verb)
			if err != nil {
				d.Log.Warn("authorization failed", "identity", id.Name, "verb", verb, "err", err)
				return echo.NewHTTPError(http.StatusServiceUnavailable, "cannot authorize now")
			}
			if !allowed {
				return echo.NewHTTPError(http.StatusForbidden, fmt.Sprintf("%s may not %s", id.Name, verb))
			}
			return next(c)
		}
	}
}

func changes(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// csrfToken is the X-CSRF-Token header (scripts) or the csrf form field (forms).
func csrfToken(c echo.Context) string {
	if t := c.Request().Header.Get("X-CSRF-Token"); t != "" {
		return t
	}
	return c.FormValue("csrf")
}

// sameOrigin accepts requests whose Origin (or, lacking it, Referer) is this
// server: browsers send it on cross-site requests, so a foreign page cannot
// drive the portal with a user's session, nor open its websocket.
func sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		origin = r.Header.Get("Referer")
	}
	if origin == "" {
		return true // not a browser: cookies are not sent automatically either
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host == r.Host
}

func securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		// wasm-unsafe-eval: the what-if planner is WebAssembly.
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		return next(c)
	}
}
