package haproxy

// headerRules ends every HTTP backend (renderHeaderRules).
const headerRules = "    http-request lua.dcm_request_headers\n    http-response lua.dcm_response_headers\n"
