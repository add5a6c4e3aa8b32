'use strict';
// GET /upstream-grpc for the Node targets (../CONTRACT.md): N sequential unary calls to the mock
// upstream's loadlab.upstream.v1.Upstream/Call with @grpc/grpc-js, the service loaded from its
// .proto by @grpc/proto-loader (the messages are protobuf's well-known Empty and BytesValue).
//
// pooled: one client for the process, made at start-up, as grpc-js's examples do; its calls
// share one HTTP/2 connection. per-call: a new client per call, closed after it. grpc-js shares
// connections between clients of the same target through a process-wide subchannel pool, so a
// client per call would quietly reuse the pooled connection; the per-call client asks for a
// local pool ('grpc.use_local_subchannel_pool'), so that it opens its own connection, the cost
// the mistake has in every other library.
//
// This directory has no node_modules: each target passes in its own grpc-js and proto-loader.

const path = require('node:path');
const { configError } = require('./contract');

// The service definition lives with the mock upstream (each manifest hashes it).
const PROTO = path.join(__dirname, '..', '..', 'crates', 'loadlab-upstream', 'proto', 'upstream.proto');

class GrpcUpstreamError extends Error {}

// Returns `call(calls, client)` resolving to the contract's reply, or null when
// UPSTREAM_GRPC_URL is unset; a malformed URL is a configuration error (exit 2).
function fromEnv(grpc, protoLoader, raw = process.env.UPSTREAM_GRPC_URL) {
  if (!raw) return null;
  let url;
  try {
    url = new URL(raw);
  } catch {
    url = null;
  }
  if (!url || url.protocol !== 'http:' || !url.host) {
    configError(`UPSTREAM_GRPC_URL must be an http:// URL such as http://127.0.0.1:9100 (gRPC without TLS), got ${JSON.stringify(raw)}`);
  }
  const definition = protoLoader.loadSync(PROTO, { keepCase: true, defaults: true });
  const Upstream = grpc.loadPackageDefinition(definition).loadlab.upstream.v1.Upstream;
  const credentials = grpc.credentials.createInsecure();
  const pooled = new Upstream(url.host, credentials);

  const once = (client) =>
    new Promise((resolve, reject) => {
      client.Call({}, (error, reply) => {
        if (error) reject(new GrpcUpstreamError(error.message));
        else resolve(reply.value.length);
      });
    });

  return async function call(calls, client) {
    let bytes = 0;
    for (let i = 0; i < calls; i++) {
      if (client === 'per-call') {
        const fresh = new Upstream(url.host, credentials, { 'grpc.use_local_subchannel_pool': 1 });
        try {
          bytes += await once(fresh);
        } finally {
          fresh.close();
        }
      } else {
        bytes += await once(pooled);
      }
    }
    return { calls, client, upstream_bytes: bytes };
  };
}

module.exports = { fromEnv, GrpcUpstreamError };
