'use strict';
// The loadlab reference target on Express 5 (../CONTRACT.md): default settings (ETag,
// X-Powered-By, the simple query parser), express.raw for /echo. WORKERS > 1 runs a `cluster`
// of that many processes sharing the listening socket, as node-http does.

const cluster = require('node:cluster');
const express = require('express');
const { loadSite } = require('../node-common/content');
const c = require('../node-common/contract');

const config = c.readConfig();

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
    setTimeout(() => text(res, 200, 'done'), param(req, 'ms', c.LIMITS.delay));
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
      res.json(await c.callUpstream(config.upstream, calls, client));
    } catch (e) {
      if (!(e instanceof c.UpstreamError)) throw e;
      text(res, 502, `upstream call failed: ${e.message}`);
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

function serve() {
  let site;
  try {
    site = loadSite(config.contentDir);
  } catch (e) {
    c.configError(`CONTENT_DIR=${config.contentDir}: cannot load the portfolio content: ${e.message} (point CONTENT_DIR at targets/content)`);
  }
  const server = makeApp(site).listen({ host: config.host, port: config.port, backlog: config.backlog }, () => {
    if (cluster.isPrimary) announce(server.address());
  });
  server.on('error', (e) => c.configError(`cannot listen on ${config.host}:${config.port}: ${e.message} (pick another PORT or HOST)`));
}

let announced = false;
function announce(address) {
  if (announced) return;
  announced = true;
  const host = address.family === 'IPv6' || address.family === 6 ? `[${address.address}]` : address.address;
  process.stdout.write(`listening on ${host}:${address.port}\n`);
}

if (config.workers > 1 && cluster.isPrimary) {
  // Workers listening on port 0 share one port, chosen once by the primary.
  for (let i = 0; i < config.workers; i++) cluster.fork();
  cluster.on('listening', (worker, address) => announce(address));
  cluster.on('exit', (worker, code, signal) => {
    process.stderr.write(`worker ${worker.process.pid} exited (${signal ?? code}); stopping\n`);
    process.exit(1);
  });
} else {
  serve();
}
