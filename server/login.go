package server

import (
	"crypto/subtle"
	"net/http"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/dcm-router/dcm/views"
)

// loginCookie carries the value the login form must send back, so that no
// other site can log a browser into its own session (login CSRF).
const loginCookie = "dcm_login"

func render(c echo.Context, code int, page templ.Component) error {
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	c.Response().WriteHeader(code)
	return page.Render(c.Request().Context(), c.Response())
}

// localPath keeps redirects after login on this server.
func localPath(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return "/"
	}
	return next
}

func loginPage(d Deps) echo.HandlerFunc {
	return func(c echo.Context) error {
		next := localPath(c.QueryParam("next"))
		if _, ok := c.Get(sessionKey).(*session); ok {
			return c.Redirect(http.StatusSeeOther, next)
		}
		formToken := randomToken()
		c.SetCookie(&http.Cookie{Name: loginCookie, Value: formToken, Path: "/login", MaxAge: int((10 * time.Minute).Seconds()),
			HttpOnly: true, Secure: d.SecureCookies, SameSite: http.SameSiteStrictMode})
		return render(c, http.StatusOK, views.LoginPage(next, formToken, ""))
	}
}

func login(d Deps, sessions *sessions) echo.HandlerFunc {
	return func(c echo.Context) error {
		next := localPath(c.FormValue("next"))
		cookie, err := c.Cookie(loginCookie)
		form := c.FormValue("login")
		if err != nil || form == "" || subtle.ConstantTimeCompare([]byte(cookie.Value), []byte(form)) != 1 {
			return echo.NewHTTPError(http.StatusForbidden, "the login form expired or came from elsewhere; reload the login page")
		}
		retry := func(code int, msg string) error {
			return render(c, code, views.LoginPage(next, form, msg))
		}
		addr := clientAddr(c.Request())
		if d.guessing.blocked(addr) {
			return retry(http.StatusTooManyRequests, "Too many wrong tokens from here; wait a minute.")
		}
		token := strings.TrimSpace(c.FormValue("token"))
		id, ok, err := d.Authenticator.Authenticate(c.Request().Context(), token)
		if err != nil {
			d.Log.Warn("login: authentication failed", "err", err)
			return retry(http.StatusServiceUnavailable, "dcm cannot check tokens right now; try again")
		}
		if !ok {
			d.guessing.fail(addr)
			d.Log.Warn("login with a wrong token", "addr", addr)
			return retry(http.StatusUnauthorized, "That token is not valid.")
		}
		allowed, err := d.Authorizer.Authorize(c.Request().Context(), id, VerbRead)
		if err != nil {
			return retry(http.StatusServiceUnavailable, "dcm cannot check permissions right now; try again")
		}
		if !allowed {
			return retry(http.StatusForbidden, id.Name+" may not read dcm.")
		}
		s := sessions.create(id, token)
		c.SetCookie(sessionCookieFor(s, d.SecureCookies))
		c.SetCookie(&http.Cookie{Name: loginCookie, Path: "/login", MaxAge: -1})
		d.Log.Info("login", "identity", id.Name)
		return c.Redirect(http.StatusSeeOther, next)
	}
}

func logout(d Deps, sessions *sessions) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s, ok := c.Get(sessionKey).(*session); ok {
			sessions.delete(s.id)
		}
		c.SetCookie(clearedSessionCookie(d.SecureCookies))
		return c.Redirect(http.StatusSeeOther, "/login")
	}
}
