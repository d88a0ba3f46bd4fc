#!/usr/bin/env node
// Runs the vector benchmark (TypeScript compiled on the fly with @swc/core, @mmdb/* mapped to
// the libs' sources). See README.md here:  node tools/bench/vector/run.js [--quick] [--no-https] ...
const { transformSync } = require('@swc/core');
const fs = require('fs');
const path = require('path');
const Module = require('module');
const root = path.resolve(__dirname, '../../..');
const origResolve = Module._resolveFilename;
Module._resolveFilename = function (request, parent, ...rest) {
  const m = /^@mmdb\/([a-z-]+)$/.exec(request);
  if (m) request = path.join(root, 'libs', m[1], 'src/index.ts');
  return origResolve.call(this, request, parent, ...rest);
};
require.extensions['.ts'] = function (module, filename) {
  const src = fs.readFileSync(filename, 'utf8');
  const out = transformSync(src, { filename, jsc: { parser: { syntax: 'typescript', decorators: true }, target: 'es2022' }, module: { type: 'commonjs' } });
  module._compile(out.code, filename);
};
require(process.argv.includes('--restart') ? './restart.ts' : './bench.ts')
  .main()
  .catch((e) => {
    console.error(e);
    process.exit(1);
  });
