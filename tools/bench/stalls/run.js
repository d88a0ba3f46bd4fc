#!/usr/bin/env node
// Event-loop stalls under a steady read load (see README.md):  node tools/bench/stalls/run.js [--vectors N] [--edges N] [--rows N]
const path = require('path');
process.env.SWC_NODE_PROJECT = process.env.SWC_NODE_PROJECT || path.join(__dirname, '../../..', 'tsconfig.base.json');
require('@swc-node/register');
require('./stalls.ts')
  .main()
  .catch((e) => {
    console.error(e);
    process.exit(1);
  });
