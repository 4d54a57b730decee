package system

import (
	"slices"
	"strings"
	"testing"
)

func TestGatewayBinds(t *testing.T) {
	for _, tc := range []struct {
		name      string
		addresses []string
		http      []int
		https     []int
		want      []string // addresses, or nil with wantErr
		wantErr   string
	}{
		{name: "none", want: nil},
		{name: "cidr and ip", addresses: []string{"127.0.20.0/30", "127.0.20.9", "127.0.20.1"}, http: []int{80}, https: []int{443},
			want: []string{"127.0.20.0", "127.0.20.1", "127.0.20.2", "127.0.20.3", "127.0.20.9"}},
		{name: "bad address", addresses: []string{"example.com"}, http: []int{80}, wantErr: "not an IP address"},
		{name: "too many", addresses: []string{"127.0.0.0/16"}, http: []int{80}, wantErr: "more than 256"},
		{name: "port twice", addresses: []string{"127.0.20.1"}, http: []int{80}, https: []int{80}, wantErr: "already in --gateway-http-ports"},
		{name: "bad port", addresses: []string{"127.0.20.1"}, http: []int{0}, wantErr: "want 1 to 65535"},
		{name: "no port", addresses: []string{"127.0.20.1"}, wantErr: "needs --gateway-http-ports"},
		{name: "the HTTP frontend's", addresses: []string{"127.0.0.1"}, http: []int{8000}, wantErr: "also --http-bind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Defaults()
			c.GatewayAddresses, c.GatewayHTTPPorts, c.GatewayHTTPSPorts = tc.addresses, tc.http, tc.https
			b, err := c.GatewayBinds()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(b.Addresses, tc.want) {
				t.Fatalf("addresses %v, %v; want %v", b.Addresses, err, tc.want)
			}
		})
	}
}
