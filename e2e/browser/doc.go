// Package browser holds the portal's end-to-end tests: Debian's chromium,
// driven through chromedp, against dcm's real server, engine, HAProxy and
// the demo cluster. One browser serves the whole package; each test gets its
// own stack and its own browser context (cookies), with a tab per page.
package browser
