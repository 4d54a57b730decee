// Package web is the portal's browser code: plain ES modules and one
// stylesheet, served as they are written (no framework, no build step).
// The modules keep the server-rendered pages of views/ live from the feed;
// the markup they add comes from the <template> elements those pages carry.
package web

import "embed"

// display_gen.js holds the words for ops and server states of
// views/words.go; generated from the repository root, as make generate does.
//go:generate sh -c "cd .. && go run ./internal/jsgen"

// Files are the scripts and the stylesheet, for static/ to serve.
//
//go:embed *.js *.css
var Files embed.FS
