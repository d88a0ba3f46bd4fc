#!/usr/bin/env node
// Runs the vector benchmark (TypeScript compiled on the fly with @swc/core, @mmdb/* mapped to
// the libs' sources). See README.md here:  node tools/bench/vector/run.js [--quick] [--no-https] ...
const path = require('path');
// TypeScript on the fly, @mmdb/* mapped to the libs' sources by tsconfig.base.json's paths.
process.env.SWC_NODE_PROJECT = process.env.SWC_NODE_PROJECT || path.join(__dirname, '../../..', 'tsconfig.base.json');
require('@swc-node/register');
// a full GC before each timed HTTPS loop (bench.ts `quiet`): expose gc() without a node flag
require('v8').setFlagsFromString('--expose-gc');
globalThis.gc = globalThis.gc || require('vm').runInNewContext('gc');
require(process.argv.includes('--restart') ? './restart.ts' : process.argv.includes('--overhead') ? './overhead.ts' : './bench.ts')
  .main()
  .catch((e) => {
    console.error(e);
    process.exit(1);
  });
