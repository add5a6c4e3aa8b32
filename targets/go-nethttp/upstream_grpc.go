// GET /upstream-grpc (../CONTRACT.md): N sequential unary calls to the mock upstream's
// loadlab.upstream.v1.Upstream/Call with grpc-go, through one grpc.ClientConn for the process
// (grpc-go's documentation: create a ClientConn once and share it; it multiplexes calls over one
// HTTP/2 connection) or a new ClientConn per call, closed after it (the mistake, measured).
//
// The messages are protobuf's well-known Empty and BytesValue, so the call is ClientConn.Invoke
// with the method's full name, exactly what generated stubs do, without generated code.
package main

import (
	"fmt"
	"net/http"
	"net/url"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

const grpcCallMethod = "/loadlab.upstream.v1.Upstream/Call"

// grpcUpstreamTarget turns UPSTREAM_GRPC_URL (http://HOST:PORT) into grpc-go's target
// (HOST:PORT, resolved by its default dns resolver); "" when unset.
func grpcUpstreamTarget(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		configError("UPSTREAM_GRPC_URL must be an http:// URL such as http://127.0.0.1:9100 (gRPC without TLS), got %q", raw)
	}
	return u.Host
}

func newGRPCClient(target string) (*grpc.ClientConn, error) {
	return grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
}

// registerUpstreamGRPC adds GET /upstream-grpc; target is "" when UPSTREAM_GRPC_URL is unset.
func registerUpstreamGRPC(mux *http.ServeMux, target string) {
	var pooled *grpc.ClientConn
	if target != "" {
		// Idle until the first call: NewClient does not connect.
		conn, err := newGRPCClient(target)
		if err != nil {
			configError("UPSTREAM_GRPC_URL: cannot make a gRPC client for %q: %v", target, err)
		}
		pooled = conn
	}
	mux.HandleFunc("GET /upstream-grpc", func(w http.ResponseWriter, r *http.Request) {
		calls, ok := param(w, r, "calls", 64)
		if !ok {
			return
		}
		mode := "pooled"
		if values := r.URL.Query()["client"]; len(values) > 0 {
			mode = values[0]
		}
		if mode != "pooled" && mode != "per-call" {
			text(w, 400, fmt.Sprintf("query parameter client must be pooled or per-call, got %q", mode))
			return
		}
		if pooled == nil {
			text(w, 503, "UPSTREAM_GRPC_URL is not set")
			return
		}
		var total int64
		for i := uint64(0); i < calls; i++ {
			conn := pooled
			if mode == "per-call" {
				fresh, err := newGRPCClient(target)
				if err != nil {
					text(w, 502, "cannot make a gRPC client: "+err.Error())
					return
				}
				conn = fresh
			}
			reply := new(wrapperspb.BytesValue)
			err := conn.Invoke(r.Context(), grpcCallMethod, &emptypb.Empty{}, reply)
			if conn != pooled {
				conn.Close()
			}
			if err != nil {
				text(w, 502, "gRPC upstream call failed: "+err.Error())
				return
			}
			total += int64(len(reply.GetValue()))
		}
		jsonReply(w, upstreamReply{calls, mode, total})
	})
}
