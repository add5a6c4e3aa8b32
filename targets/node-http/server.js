'use strict';
// The loadlab reference target on node:http, no framework (../CONTRACT.md). Start-up (WORKERS > 1
// is a `cluster` of processes sharing the listening socket) is ../node-common/startup.js.

const c = require('../node-common/contract');
const { start } = require('../node-common/startup');
const upstreamGrpc = require('../node-common/upstream_grpc');

const config = c.readConfig();
// /upstream-grpc's client (null without UPSTREAM_GRPC_URL): this target's only dependencies.
const callGrpc = upstreamGrpc.fromEnv(require('@grpc/grpc-js'), require('@grpc/proto-loader'));

function send(res, status, type, body) {
  res.writeHead(status, {
    Server: 'node',
    'Content-Type': type,
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(body);
}
const text = (res, status, body) => send(res, status, 'text/plain; charset=utf-8', body);
const html = (res, status, body) => send(res, status, 'text/html; charset=utf-8', body);
const json = (res, value) => send(res, 200, 'application/json', JSON.stringify(value));

function makeHandler(site) {
  const routes = {
    '/plaintext': (req, res) => text(res, 200, 'Hello, World!'),
    '/json': (req, res) => json(res, { message: 'Hello, World!' }),
    '/healthz': (req, res) => text(res, 200, 'ok'),
    '/delay': (req, res, q) => {
      const ms = c.parseParam('ms', q.get('ms') ?? undefined, c.LIMITS.delay);
      c.after(ms, () => text(res, 200, 'done'));
    },
    '/block': (req, res, q) => {
      c.blockThread(c.parseParam('ms', q.get('ms') ?? undefined, c.LIMITS.block));
      text(res, 200, 'done');
    },
    '/compute': (req, res, q) => {
      json(res, c.compute(c.parseParam('n', q.get('n') ?? undefined, c.LIMITS.compute)));
    },
    '/bytes': (req, res, q) => {
      const n = c.parseParam('n', q.get('n') ?? undefined, c.LIMITS.bytes);
      send(res, 200, 'application/octet-stream', c.BYTES.subarray(0, n));
    },
    '/upstream': (req, res, q) => {
      const calls = c.parseParam('calls', q.get('calls') ?? undefined, c.LIMITS.calls);
      const client = c.parseClient(q.get('client') ?? undefined);
      if (!config.upstream) return text(res, 503, 'UPSTREAM_URL is not set');
      c.callUpstream(config, calls, client).then(
        (reply) => json(res, reply),
        (e) => text(res, 502, `upstream call failed: ${e.message}`),
      );
    },
    '/upstream-grpc': (req, res, q) => {
      const calls = c.parseParam('calls', q.get('calls') ?? undefined, c.LIMITS.calls);
      const client = c.parseClient(q.get('client') ?? undefined);
      if (!callGrpc) return text(res, 503, 'UPSTREAM_GRPC_URL is not set');
      callGrpc(calls, client).then(
        (reply) => json(res, reply),
        (e) => text(res, 502, `gRPC upstream call failed: ${e.message}`),
      );
    },
    '/': (req, res) => html(res, 200, site.home()),
    '/blogs': (req, res) => html(res, 200, site.blogs()),
    '/version': (req, res) => html(res, 200, site.version()),
  };

  function echo(req, res) {
    const chunks = [];
    let length = 0;
    req.on('data', (chunk) => {
      length += chunk.length;
      if (length <= c.LIMITS.echo) chunks.push(chunk);
    });
    req.on('end', () => {
      if (length > c.LIMITS.echo) {
        text(res, 413, `the request body must be at most ${c.LIMITS.echo} bytes`);
      } else {
        send(res, 200, 'application/octet-stream', Buffer.concat(chunks, length));
      }
    });
  }

  return (req, res) => {
    const url = new URL(req.url, 'http://target');
    if (req.method === 'POST' && url.pathname === '/echo') return echo(req, res);
    let route = req.method === 'GET' ? routes[url.pathname] : undefined;
    if (!route && req.method === 'GET' && url.pathname.startsWith('/blogs/')) {
      const page = site.blog(url.pathname.slice('/blogs/'.length));
      if (page !== undefined) return html(res, 200, page);
    }
    if (!route || !Object.hasOwn(routes, url.pathname)) return html(res, 404, site.notFound());
    try {
      route(req, res, url.searchParams);
    } catch (e) {
      if (!(e instanceof c.BadRequest)) throw e;
      text(res, 400, e.message);
    }
  };
}

start(config, makeHandler);
