'use strict';
// The loadlab reference target on Express 5 (../CONTRACT.md): default settings (ETag,
// X-Powered-By, the simple query parser), express.raw for /echo. Start-up is shared with
// node-http (../node-common/startup.js): the app is served by `http.createServer(app)`, and
// WORKERS > 1 is a `cluster` of processes sharing the listening socket.

const express = require('express');
const c = require('../node-common/contract');
const { start } = require('../node-common/startup');
const upstreamGrpc = require('../node-common/upstream_grpc');

const config = c.readConfig();
// /upstream-grpc's client (null without UPSTREAM_GRPC_URL).
const callGrpc = upstreamGrpc.fromEnv(require('@grpc/grpc-js'), require('@grpc/proto-loader'));

// The first value when a parameter repeats (the simple query parser makes an array).
const first = (value) => (Array.isArray(value) ? value[0] : value);
const param = (req, name, max) => c.parseParam(name, first(req.query[name]), max);

function makeApp(site) {
  const app = express();
  app.use((req, res, next) => {
    res.set('Server', 'express');
    next();
  });
  const text = (res, status, body) => res.status(status).type('text/plain').send(body);
  const html = (res, status, body) => res.status(status).type('html').send(body);

  app.get('/plaintext', (req, res) => text(res, 200, 'Hello, World!'));
  app.get('/json', (req, res) => res.json({ message: 'Hello, World!' }));
  app.get('/healthz', (req, res) => text(res, 200, 'ok'));
  app.get('/delay', (req, res) => {
    c.after(param(req, 'ms', c.LIMITS.delay), () => text(res, 200, 'done'));
  });
  app.get('/block', (req, res) => {
    c.blockThread(param(req, 'ms', c.LIMITS.block));
    text(res, 200, 'done');
  });
  app.get('/compute', (req, res) => res.json(c.compute(param(req, 'n', c.LIMITS.compute))));
  app.get('/bytes', (req, res) => {
    res.type('application/octet-stream').send(c.BYTES.subarray(0, param(req, 'n', c.LIMITS.bytes)));
  });
  app.post('/echo', express.raw({ type: () => true, limit: c.LIMITS.echo }), (req, res) => {
    // No body at all leaves req.body unset.
    res.type('application/octet-stream').send(Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0));
  });
  app.get('/upstream', async (req, res) => {
    const calls = param(req, 'calls', c.LIMITS.calls);
    const client = c.parseClient(first(req.query.client));
    if (!config.upstream) return text(res, 503, 'UPSTREAM_URL is not set');
    try {
      res.json(await c.callUpstream(config, calls, client));
    } catch (e) {
      if (!(e instanceof c.UpstreamError)) throw e;
      text(res, 502, `upstream call failed: ${e.message}`);
    }
  });
  app.get('/upstream-grpc', async (req, res) => {
    const calls = param(req, 'calls', c.LIMITS.calls);
    const client = c.parseClient(first(req.query.client));
    if (!callGrpc) return text(res, 503, 'UPSTREAM_GRPC_URL is not set');
    try {
      res.json(await callGrpc(calls, client));
    } catch (e) {
      if (!(e instanceof upstreamGrpc.GrpcUpstreamError)) throw e;
      text(res, 502, `gRPC upstream call failed: ${e.message}`);
    }
  });
  app.get('/', (req, res) => html(res, 200, site.home()));
  app.get('/blogs', (req, res) => html(res, 200, site.blogs()));
  app.get('/blogs/:id', (req, res) => {
    const page = site.blog(req.params.id);
    html(res, page === undefined ? 404 : 200, page ?? site.notFound());
  });
  app.get('/version', (req, res) => html(res, 200, site.version()));
  app.use((req, res) => html(res, 404, site.notFound()));
  // Bad parameters are 400; body-parser's errors (413 for a body over the limit) keep their
  // status; anything else goes to Express's default handler.
  app.use((err, req, res, next) => {
    if (err instanceof c.BadRequest) return text(res, 400, err.message);
    if (err.expose && err.status >= 400 && err.status < 500) return text(res, err.status, err.message);
    next(err);
  });
  return app;
}

start(config, makeApp);
