package haproxy

import (
	"strings"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

// headerRules end the route rules of every HTTP frontend (renderHeaderRules).
const headerRules = "    http-request lua.dcm_request_headers if { var(txn.be),map_str(maps/headers.map) -m found }\n" +
	"    http-response lua.dcm_response_headers if { var(txn.be),map_str(maps/headers.map) -m found }\n"

func TestHeadersLuaReadsTheHeadersMap(t *testing.T) {
	if !strings.Contains(headersLua, `Map.new("`+MapFile(dcm.MapHeaders)+`", Map._str)`) {
		t.Errorf("the script does not read %s", MapFile(dcm.MapHeaders))
	}
}
