package server

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

// TestTrafficRates: GET /api/v1/traffic takes a read token and answers
// every route's rates, or with ?backend= only that one's (none for a
// backend without rates).
func TestTrafficRates(t *testing.T) {
	srv, _ := portalServer(t)
	get := func(query string, token string) (int, dcm.TrafficRates) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/traffic"+query, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out dcm.TrafficRates
		if resp.StatusCode == http.StatusOK {
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
				t.Fatal(err)
			}
		}
		return resp.StatusCode, out
	}
	if code, _ := get("", ""); code != http.StatusUnauthorized {
		t.Errorf("without a token: HTTP %d", code)
	}
	if code, all := get("", viewerToken); code != http.StatusOK || len(all.Backends) != 2 || all.Every != 1 {
		t.Errorf("all: HTTP %d %+v", code, all)
	}
	code, one := get("?backend=be_http:a:web", viewerToken)
	if s, ok := one.Backends["be_http:a:web"]; code != http.StatusOK || len(one.Backends) != 1 || !ok || len(s.Requests) != 2 || s.Errors[1] != 1 {
		t.Errorf("one: HTTP %d %+v", code, one)
	}
	if code, none := get("?backend=be_http:c:gone", viewerToken); code != http.StatusOK || len(none.Backends) != 0 {
		t.Errorf("unknown backend: HTTP %d %+v", code, none)
	}
}
