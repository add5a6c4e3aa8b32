'use strict';
// Start-up shared by the Node targets (node-http, node-express): load the portfolio, listen on
// HOST:PORT with BACKLOG, print the contract's `listening on ADDR:PORT` line once, and exit 2
// with the fix when that fails. WORKERS > 1 runs a `cluster` of that many processes sharing
// the listening socket (the primary hands out connections); WORKERS=1 serves from this one
// process. Each target supplies only its request listener.

const cluster = require('node:cluster');
const http = require('node:http');
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
  const server = http.createServer(makeListener(site));
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
    for (let i = 0; i < config.workers; i++) cluster.fork();
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
