package testkit

import "math"

// Hostile is the injection corpus: each value, were it to reach HAProxy
// unescaped, would end a runtime command (';', newline, CR, NUL), add an
// argument (space, tab), start a comment ('#'), open a quoted word (either
// quote), run a sample fetch in a log format or header ("%["), or make a
// name lie about what it is (a Cyrillic letter that looks Latin, a
// right-to-left override that reverses how the rest reads, an emoji: bytes
// outside ASCII). The unit and e2e injection tests put each one into every
// Kubernetes field that can reach HAProxy.
var Hostile = []struct{ Name, Value string }{
	{"semicolon", ";"},
	{"newline", "\n"},
	{"cr", "\r"},
	{"space", " "},
	{"tab", "\t"},
	{"hash", "#"},
	{"dquote", `"`},
	{"squote", "'"},
	{"sample-fetch", "%[req.hdr(x)]"},
	{"nul", "\x00"},
	{"cyrillic-e", "\u0435"},
	{"rtl-override", "\u202e"},
	{"emoji", "\U0001F600"},
}

// HostilePorts are numbers no port can be.
var HostilePorts = []int32{0, -1, 65536, math.MaxInt32}
