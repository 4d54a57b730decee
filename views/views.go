// Package views holds the portal's HTML as templ components. Pages are
// rendered on the server and readable without JavaScript; scripts in web/
// keep them live from the feed.
package views

// Generated from the repository root, as make generate does, so the file
// names recorded in the generated code are the same either way.
//go:generate sh -c "cd .. && go tool templ generate"
