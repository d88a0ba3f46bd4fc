#!/usr/bin/env node
// Runs the SQL benchmark: node tools/bench/sql/run.js (ROWS=100000)
// (TypeScript is compiled on the fly with @swc/register-free swc: we reuse jest's transformer via @swc/core.)
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
require('./bench.ts');
