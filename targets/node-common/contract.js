'use strict';
// What the contract (../CONTRACT.md) asks of every target, independent of the HTTP layer:
// configuration from the environment, the 400 rule, /compute, /bytes and the upstream calls.
// Shared by node-http and node-express (each manifest hashes ../node-common).

const fs = require('node:fs');
const http = require('node:http');
const https = require('node:https');
const os = require('node:os');
const net = require('node:net');

// A bad variable: its name and the fix on stderr, exit status 2.
function configError(message) {
  process.stderr.write(`${message}\n`);
  process.exit(2);
}

function readConfig() {
  const env = process.env;
  const positive = (name, fallback) => {
    const raw = env[name];
    if (raw === undefined) return fallback;
    if (!/^[0-9]+$/.test(raw) || Number(raw) < 1) {
      configError(`${name} must be a whole number >= 1, got ${JSON.stringify(raw)}: fix or unset it`);
    }
    return Number(raw);
  };
  const config = {
    host: env.HOST ?? '127.0.0.1',
    port: env.PORT ?? '0',
    workers: positive('WORKERS', os.availableParallelism()),
    backlog: positive('BACKLOG', 1024),
    upstream: env.UPSTREAM_URL || null,
    contentDir: env.CONTENT_DIR ?? '../content',
    // TLS_CERT and TLS_KEY (read below): serve HTTPS only.
    tls: null,
    // UPSTREAM_CA's certificates, for an https:// upstream (undefined: the system's roots).
    upstreamCa: undefined,
  };
  const cert = env.TLS_CERT || null;
  const key = env.TLS_KEY || null;
  if ((cert === null) !== (key === null)) {
    configError(`TLS_CERT and TLS_KEY go together: set both (a PEM certificate chain and its PEM private key) to serve HTTPS, or neither for plain HTTP; got TLS_CERT=${JSON.stringify(cert ?? '')} TLS_KEY=${JSON.stringify(key ?? '')}`);
  }
  const read = (name, path) => {
    try {
      return fs.readFileSync(path);
    } catch (e) {
      return configError(`${name}=${path}: cannot read it: ${e.message}`);
    }
  };
  if (cert !== null) config.tls = { cert: read('TLS_CERT', cert), key: read('TLS_KEY', key) };
  if (!/^[0-9]+$/.test(config.port) || Number(config.port) > 65535) {
    configError(`PORT must be a port number from 0 to 65535, got ${JSON.stringify(config.port)}`);
  }
  config.port = Number(config.port);
  if (net.isIP(config.host) === 0) {
    configError(`HOST must be an IP address such as 127.0.0.1, got ${JSON.stringify(config.host)}`);
  }
  if (config.upstream !== null) {
    let url;
    try {
      url = new URL(config.upstream);
    } catch {
      url = null;
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
      configError(`UPSTREAM_URL must be an http:// or https:// URL such as http://127.0.0.1:9100/, got ${JSON.stringify(config.upstream)}`);
    }
    if (url.protocol === 'https:' && env.UPSTREAM_CA) config.upstreamCa = read('UPSTREAM_CA', env.UPSTREAM_CA);
  }
  return config;
}

class BadRequest extends Error {}

// The 400 rule: one or more ASCII digits, at most `max`. `raw` is the first value or undefined.
function parseParam(name, raw, max) {
  if (typeof raw !== 'string' || !/^[0-9]+$/.test(raw) || Number(raw) > max) {
    throw new BadRequest(`query parameter ${name} must be a whole number from 0 to ${max}, got ${JSON.stringify(raw ?? '')}`);
  }
  return Number(raw);
}

function parseClient(raw) {
  if (raw === undefined || raw === 'pooled' || raw === 'per-call') return raw ?? 'pooled';
  throw new BadRequest(`query parameter client must be pooled or per-call, got ${JSON.stringify(raw)}`);
}

const LIMITS = { delay: 10000, block: 1000, compute: 100000, bytes: 10485760, calls: 64, echo: 1048576 };

function compute(n) {
  const numbers = new Array(n);
  let x = 42;
  for (let i = 0; i < n; i++) {
    x = (Math.imul(x, 1103515245) + 12345) & 0x7fffffff;
    numbers[i] = x;
  }
  return numbers;
}

const BYTES = Buffer.alloc(LIMITS.bytes, 'abcdefghijklmnopqrstuvwxyz');

// Blocks this (the only JavaScript) thread: the mistake /block exists to measure.
const blockCell = new Int32Array(new SharedArrayBuffer(4));
function blockThread(ms) {
  Atomics.wait(blockCell, 0, 0, ms);
}

class UpstreamError extends Error {}

// An Agent for `url`'s scheme: over https it trusts `ca` (UPSTREAM_CA) and keeps its own TLS
// session cache (node:https's default), so a pooled agent resumes sessions and a new agent
// starts with none.
function agentFor(url, ca, keepAlive) {
  return url.startsWith('https:') ? new https.Agent({ keepAlive, ca }) : new http.Agent({ keepAlive });
}

// The process-wide pooled client: one keep-alive Agent, created on the first call (the URL
// and CA come from the configuration) and shared by every call after it.
let pooledAgent = null;

// One GET to `url`, body read to the end; resolves to the body length.
function get(url, agent) {
  const client = url.startsWith('https:') ? https : http;
  return new Promise((resolve, reject) => {
    const req = client.get(url, { agent }, (res) => {
      let length = 0;
      res.on('data', (chunk) => (length += chunk.length));
      res.on('end', () => {
        if (res.statusCode < 200 || res.statusCode > 299) {
          reject(new UpstreamError(`upstream answered ${res.statusCode}`));
        } else {
          resolve(length);
        }
      });
      res.on('error', (e) => reject(new UpstreamError(e.message)));
    });
    req.on('error', (e) => reject(new UpstreamError(e.message)));
  });
}

// N sequential calls to config.upstream; per-call mode makes a fresh non-keep-alive Agent
// (over https with a fresh session cache: a full handshake) for each.
async function callUpstream(config, calls, client) {
  const url = config.upstream;
  pooledAgent ??= agentFor(url, config.upstreamCa, true);
  let bytes = 0;
  for (let i = 0; i < calls; i++) {
    if (client === 'per-call') {
      const agent = agentFor(url, config.upstreamCa, false);
      try {
        bytes += await get(url, agent);
      } finally {
        agent.destroy();
      }
    } else {
      bytes += await get(url, pooledAgent);
    }
  }
  return { calls, client, upstream_bytes: bytes };
}

// Calls fn after at least ms milliseconds, on a timer (the event loop stays free). Node's
// setTimeout measures from the loop's cached time, which can be a millisecond stale, so a
// timer alone may fire up to 1 ms early; this re-arms for whatever is left.
function after(ms, fn) {
  const due = performance.now() + ms;
  const check = () => {
    const left = due - performance.now();
    if (left > 0) setTimeout(check, Math.ceil(left));
    else fn();
  };
  setTimeout(check, ms);
}

module.exports = {
  readConfig, configError, BadRequest, UpstreamError, parseParam, parseClient, LIMITS, compute,
  BYTES, blockThread, callUpstream, after,
};
