// The workload contract's gRPC service, loadlab.lab.v1.Workload (../common/proto/workload.proto,
// ../CONTRACT.md, capability grpc), served by grpc-go on the HTTP endpoints' port: a request
// that arrives over HTTP/2 with a gRPC content type goes to grpc.Server.ServeHTTP, grpc-go's
// documented way to share a port with net/http (h2c without TLS, by the server's Protocols;
// ALPN h2 with it); everything else goes to the mux.
//
// The messages are protobuf's well-known UInt32Value, StringValue and BytesValue, so the
// service is registered with a hand-written grpc.ServiceDesc, exactly what generated code
// registers, without generated code.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

const maxComputeN = 100000

// computeCall answers Compute: /compute's JSON array for n, in a StringValue.
func computeCall(n uint32) (*wrapperspb.StringValue, error) {
	if n > maxComputeN {
		return nil, status.Errorf(codes.InvalidArgument, "n must be a whole number from 0 to %d, got %d", maxComputeN, n)
	}
	body, err := json.Marshal(compute(int(n)))
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return wrapperspb.String(string(body)), nil
}

var workloadService = grpc.ServiceDesc{
	ServiceName: "loadlab.lab.v1.Workload",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Compute",
		Handler: func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
			in := new(wrapperspb.UInt32Value)
			if err := dec(in); err != nil {
				return nil, err
			}
			call := func(_ context.Context, req any) (any, error) {
				return computeCall(req.(*wrapperspb.UInt32Value).GetValue())
			}
			if interceptor == nil {
				return call(ctx, in)
			}
			info := &grpc.UnaryServerInfo{Server: srv, FullMethod: "/loadlab.lab.v1.Workload/Compute"}
			return interceptor(ctx, in, info, call)
		},
	}},
	Streams: []grpc.StreamDesc{{
		StreamName:    "Echo",
		ServerStreams: true,
		ClientStreams: true,
		// Each message back as it arrives, until the client ends its side.
		Handler: func(_ any, stream grpc.ServerStream) error {
			for {
				m := new(wrapperspb.BytesValue)
				if err := stream.RecvMsg(m); errors.Is(err, io.EOF) {
					return nil
				} else if err != nil {
					return err
				}
				if err := stream.SendMsg(m); err != nil {
					return err
				}
			}
		},
	}},
	Metadata: "workload.proto",
}

// withWorkloadGRPC routes gRPC requests to the Workload service and the rest to next.
func withWorkloadGRPC(next http.Handler) http.Handler {
	server := grpc.NewServer()
	server.RegisterService(&workloadService, struct{}{})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
			server.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}
