package echobasic

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"google.golang.org/grpc"
)

// GRPCResponse is an EchoResponse as a test reads it.
type GRPCResponse struct {
	FullyQualifiedMethod string
	Headers              [][2]string // key, value, in the order sent
	Authority            string
	Identity             Identity
	TLS                  *GRPCTLS // over TLS only
}

// GRPCTLS is an EchoResponse's tls_assertions.
type GRPCTLS struct {
	Version, NegotiatedProtocol, ServerName, CipherSuite string
	PeerCertificates                                     []string
}

// Header is the first value of key among the echoed headers.
func (r GRPCResponse) Header(key string) string {
	for _, h := range r.Headers {
		if h[0] == key {
			return h[1]
		}
	}
	return ""
}

// InvokeGRPC calls method (Echo, EchoTwo, EchoThree) of the echo service on
// conn with an empty EchoRequest and decodes the answer.
func InvokeGRPC(ctx context.Context, conn *grpc.ClientConn, method string, opts ...grpc.CallOption) (GRPCResponse, error) {
	req, resp := rawMessage{}, rawMessage{}
	if err := conn.Invoke(ctx, "/"+GRPCService+"/"+method, &req, &resp, append(opts, grpc.ForceCodecV2(rawCodec{}))...); err != nil {
		return GRPCResponse{}, err
	}
	return decodeResponse(resp)
}

func decodeResponse(b []byte) (GRPCResponse, error) {
	var r GRPCResponse
	top, err := decodeFields(b)
	if err != nil {
		return r, err
	}
	a, err := decodeFields(last(top[1]))
	if err != nil {
		return r, err
	}
	r.FullyQualifiedMethod, r.Authority = string(last(a[1])), string(last(a[3]))
	for _, h := range a[2] {
		hf, err := decodeFields(h)
		if err != nil {
			return r, err
		}
		r.Headers = append(r.Headers, [2]string{string(last(hf[1])), string(last(hf[2]))})
	}
	c, err := decodeFields(last(a[4]))
	if err != nil {
		return r, err
	}
	r.Identity = Identity{Namespace: string(last(c[1])), Ingress: string(last(c[2])), Service: string(last(c[3])), Pod: string(last(c[4]))}
	if len(a[5]) > 0 {
		t, err := decodeFields(last(a[5]))
		if err != nil {
			return r, err
		}
		r.TLS = &GRPCTLS{Version: string(last(t[1])), NegotiatedProtocol: string(last(t[2])), ServerName: string(last(t[3])),
			CipherSuite: string(last(t[4]))}
		for _, p := range t[5] {
			r.TLS.PeerCertificates = append(r.TLS.PeerCertificates, string(p))
		}
	}
	return r, nil
}

// last is a field's value as proto reads a non-repeated one: the last.
func last(vs [][]byte) []byte {
	if len(vs) == 0 {
		return nil
	}
	return vs[len(vs)-1]
}

// decodeFields splits a message into its length-delimited fields (the only
// wire type the echo's messages use) by number.
func decodeFields(b []byte) (map[int][][]byte, error) {
	out := map[int][][]byte{}
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, errors.New("echo response: bad field key")
		}
		if key&7 != 2 {
			return nil, fmt.Errorf("echo response: field %d has wire type %d, want 2", key>>3, key&7)
		}
		b = b[n:]
		l, n := binary.Uvarint(b)
		if n <= 0 || l > uint64(len(b[n:])) {
			return nil, errors.New("echo response: bad field length")
		}
		out[int(key>>3)] = append(out[int(key>>3)], b[n:n+int(l)])
		b = b[n+int(l):]
	}
	return out, nil
}
