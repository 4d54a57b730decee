package views

// Frame is what the frame around a page needs to know.
type Frame struct {
	Title string
	// Page names the page for the navigation and for the script, which
	// starts the live updates of that page: overview, backends, backend,
	// events or config ("" for the sign-in page, which has no script).
	Page string
	// CSRF is the session's token; forms send it as the field csrf, scripts
	// read it from <meta name="csrf-token"> for the X-CSRF-Token header.
	CSRF string
	// User is who is signed in ("" on the sign-in page).
	User string
	// CanAct says whether the user may change HAProxy (drain, weights, reload).
	CanAct bool
	// Seq is the event seq the page was rendered at: the feed resumes there.
	Seq uint64
	// CSS and JS are the asset URLs (content-hashed). Without CSS the page
	// links the unhashed stylesheet; without JS it loads no script.
	CSS, JS string
}

func (f Frame) css() string {
	if f.CSS == "" {
		return "/static/dcm.css"
	}
	return f.CSS
}

// current marks the navigation link of the page being shown.
func (f Frame) current(page string) bool {
	return f.Page == page || page == "backends" && f.Page == "backend"
}
