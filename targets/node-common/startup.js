'use strict';
// Start-up shared by the Node targets (node-http, node-express): load the portfolio, listen on
// HOST:PORT with BACKLOG, print the contract's `listening on ADDR:PORT` line once, and exit 2
// with the fix when that fails. WORKERS > 1 runs a `cluster` of that many processes sharing
// the listening socket (the primary hands out connections); WORKERS=1 serves from this one
// process. Each target supplies only its request listener.
//
// With TLS_CERT and TLS_KEY the server is node:https (HTTP/1.1: HTTP/2 is node:http2, another
// server API that Express does not run on), with Node's defaults: TLS 1.2 and 1.3, session
// tickets on. Node's documentation says servers behind one address must share their ticket
// keys for tickets to resume, so the primary of a cluster makes one set and hands it to
// every worker.

const cluster = require('node:cluster');
const crypto = require('node:crypto');
const http = require('node:http');
const https = require('node:https');
const { loadSite } = require('./content');
const { configError } = require('./contract');

let announced = false;
function announce(address) {
  if (announced) return;
  announced = true;
  const host = address.family === 'IPv6' || address.family === 6 ? `[${address.address}]` : address.address;
  process.stdout.write(`listening on ${host}:${address.port}\n`);
}

function serve(config, makeListener) {
  let site;
  try {
    site = loadSite(config.contentDir);
  } catch (e) {
    configError(`CONTENT_DIR=${config.contentDir}: cannot load the portfolio content: ${e.message} (point CONTENT_DIR at targets/content)`);
  }
  let server;
  if (config.tls) {
    const options = { cert: config.tls.cert, key: config.tls.key, ALPNProtocols: ['http/1.1'] };
    if (process.env.LOADLAB_TLS_TICKET_KEYS) {
      options.ticketKeys = Buffer.from(process.env.LOADLAB_TLS_TICKET_KEYS, 'hex');
    }
    try {
      server = https.createServer(options, makeListener(site));
    } catch (e) {
      configError(`TLS_CERT and TLS_KEY do not make a usable certificate and key: ${e.message} (give a PEM certificate chain and its own PEM private key)`);
    }
  } else {
    server = http.createServer(makeListener(site));
  }
  server.on('error', (e) => configError(`cannot listen on ${config.host}:${config.port}: ${e.message} (pick another PORT or HOST)`));
  server.listen({ host: config.host, port: config.port, backlog: config.backlog }, () => {
    if (cluster.isPrimary) announce(server.address());
  });
}

// `makeListener(site)` returns the request listener for `http.createServer`: a plain
// `(req, res)` handler or an Express app.
function start(config, makeListener) {
  if (config.workers > 1 && cluster.isPrimary) {
    // Workers listening on port 0 share one port, chosen once by the primary.
    // One set of ticket keys for every worker (see above).
    const env = config.tls ? { LOADLAB_TLS_TICKET_KEYS: crypto.randomBytes(48).toString('hex') } : {};
    for (let i = 0; i < config.workers; i++) cluster.fork(env);
    cluster.on('listening', (worker, address) => announce(address));
    cluster.on('exit', (worker, code, signal) => {
      process.stderr.write(`worker ${worker.process.pid} exited (${signal ?? code}); stopping\n`);
      process.exit(1);
    });
  } else {
    serve(config, makeListener);
  }
}

module.exports = { start };
