// Package views holds the portal's HTML as templ components. Pages are
// rendered on the server and readable without JavaScript; scripts in web/
// keep them live from the feed.
package views

//go:generate go tool templ generate
