#!/usr/bin/env node
// Where the hybrid lines' tails come from: npm run build && node tools/bench/hybrid/tail.js (README.md)
const path = require('path');
process.env.SWC_NODE_PROJECT = process.env.SWC_NODE_PROJECT || path.join(__dirname, '../../..', 'tsconfig.base.json');
require('@swc-node/register');
require('./tail.ts');
