package dcm

// MapHeaders maps the HAProxy backend of a route with header actions to
// the actions, encoded by routing.HeaderValue. A Lua action in every
// backend looks its backend's name up in it (dcm/haproxy), so a route's
// actions, even on a header name never seen before, change with a map
// replace and no reload.
const MapHeaders MapTable = "headers"
