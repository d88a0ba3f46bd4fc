#!/usr/bin/env node
// Per-statement CPU and allocation of the hybrid plans: npm run build && node tools/bench/hybrid/per-statement.js (README.md)
const path = require('path');
process.env.SWC_NODE_PROJECT = process.env.SWC_NODE_PROJECT || path.join(__dirname, '../../..', 'tsconfig.base.json');
require('@swc-node/register');
require('./per-statement.ts');
