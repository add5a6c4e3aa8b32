'use strict';
// The loadlab reference target on node:http, no framework (../CONTRACT.md). WORKERS > 1 runs a
// `cluster` of that many processes sharing the listening socket (the primary hands out
// connections); WORKERS=1 serves from this one process.

const cluster = require('node:cluster');
const http = require('node:http');
const { loadSite } = require('../node-common/content');
const c = require('../node-common/contract');

const config = c.readConfig();

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
      setTimeout(() => text(res, 200, 'done'), ms);
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
      c.callUpstream(config.upstream, calls, client).then(
        (reply) => json(res, reply),
        (e) => text(res, 502, `upstream call failed: ${e.message}`),
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

function serve() {
  let site;
  try {
    site = loadSite(config.contentDir);
  } catch (e) {
    c.configError(`CONTENT_DIR=${config.contentDir}: cannot load the portfolio content: ${e.message} (point CONTENT_DIR at targets/content)`);
  }
  const server = http.createServer(makeHandler(site));
  server.on('error', (e) => c.configError(`cannot listen on ${config.host}:${config.port}: ${e.message} (pick another PORT or HOST)`));
  server.listen({ host: config.host, port: config.port, backlog: config.backlog }, () => {
    if (cluster.isPrimary) announce(server.address());
  });
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
