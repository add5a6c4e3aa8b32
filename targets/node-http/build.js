'use strict';
// The "build" of the Node target without a framework: install its only dependencies (grpc-js and
// proto-loader, for /upstream-grpc) exactly as package-lock.json pins them, check that each
// module compiles under this Node, then leave build/ok (the artifact `lab build` looks for).

const { execFileSync } = require('node:child_process');
const fs = require('node:fs');

const [major] = process.versions.node.split('.').map(Number);
if (major < 20) {
  process.stderr.write(`node-http needs Node.js 20 or newer, found ${process.version}\n`);
  process.exit(1);
}
execFileSync('npm', ['ci', '--omit=dev', '--no-audit', '--no-fund'], { stdio: 'inherit' });
const files = [
  'server.js',
  '../node-common/content.js',
  '../node-common/contract.js',
  '../node-common/startup.js',
  '../node-common/upstream_grpc.js',
];
for (const file of files) {
  execFileSync(process.execPath, ['--check', file], { stdio: 'inherit' });
}
fs.mkdirSync('build', { recursive: true });
fs.writeFileSync('build/ok', `checked with node ${process.version}\n`);
